// Package migrate applies versioned SQL migrations embedded in a service binary.
//
// A migration set belongs to a component ("forum", "reports"); its files live in a directory per
// dialect (postgres/, sqlite/) and are named NNNN_description.sql. Applied versions are recorded
// per component in schema_migrations, so two components can share one database.
package migrate

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"gorm.io/gorm"

	sdb "forumstats.local/shared/db"
)

// Set is one component's migrations.
type Set struct {
	Component string
	FS        fs.FS
}

type migration struct {
	version int
	name    string
	sql     string
}

// advisoryKey serialises migrators across processes (replicas starting at once).
const advisoryKey = 7235119

// Up applies every pending migration of set in one transaction and returns the names applied.
func Up(ctx context.Context, db *gorm.DB, set Set) ([]string, error) {
	dialect := sdb.DialectOf(db)
	migrations, err := load(set.FS, dialect.Name)
	if err != nil {
		return nil, fmt.Errorf("migrations of %s: %w", set.Component, err)
	}
	var applied []string
	err = db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if dialect.AdvisoryLocks {
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?)", advisoryKey).Error; err != nil {
				return fmt.Errorf("lock migrations: %w", err)
			}
		}
		if err := tx.Exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
			component  TEXT    NOT NULL,
			version    INTEGER NOT NULL,
			name       TEXT    NOT NULL,
			applied_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
			PRIMARY KEY (component, version))`).Error; err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		var done []int
		if err := tx.Raw("SELECT version FROM schema_migrations WHERE component = ?", set.Component).
			Scan(&done).Error; err != nil {
			return fmt.Errorf("read schema_migrations: %w", err)
		}
		have := make(map[int]bool, len(done))
		for _, v := range done {
			have[v] = true
		}
		for _, m := range migrations {
			if have[m.version] {
				continue
			}
			if err := tx.Exec(m.sql).Error; err != nil {
				return fmt.Errorf("migration %s/%s: %w", set.Component, m.name, err)
			}
			if err := tx.Exec("INSERT INTO schema_migrations (component, version, name) VALUES (?, ?, ?)",
				set.Component, m.version, m.name).Error; err != nil {
				return fmt.Errorf("record migration %s: %w", m.name, err)
			}
			applied = append(applied, m.name)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return applied, nil
}

func load(fsys fs.FS, dialect string) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, dialect)
	if err != nil {
		return nil, err
	}
	var out []migration
	seen := map[int]string{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		prefix, _, ok := strings.Cut(e.Name(), "_")
		version, err := strconv.Atoi(prefix)
		if !ok || err != nil || version <= 0 {
			return nil, fmt.Errorf("%s: want NNNN_name.sql", e.Name())
		}
		if other, dup := seen[version]; dup {
			return nil, fmt.Errorf("%s and %s share version %d", other, e.Name(), version)
		}
		seen[version] = e.Name()
		body, err := fs.ReadFile(fsys, path.Join(dialect, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: version, name: e.Name(), sql: string(body)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no %s migrations", dialect)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// Fingerprint identifies the content of the sets for dialect, so that a test template database
// built from them is rebuilt whenever a migration changes.
func Fingerprint(dialect string, sets ...Set) (string, error) {
	var b strings.Builder
	for _, s := range sets {
		ms, err := load(s.FS, dialect)
		if err != nil {
			return "", err
		}
		b.WriteString(s.Component)
		for _, m := range ms {
			b.WriteString(m.name)
			b.WriteString(m.sql)
		}
	}
	return b.String(), nil
}
