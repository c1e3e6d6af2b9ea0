// Package migratetest builds both migration trees of a component and compares what they built:
// Inspect states a database's schema in terms both dialects can show (columns, keys, CHECKs in a
// canonical form), Compare lists where a PostgreSQL and a SQLite tree differ. Only tests import
// it: the services apply migrations through migrate and never inspect them at run time.
package migratetest

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"gorm.io/gorm"

	"forumstats.local/shared/migrate"
	"forumstats.local/shared/testutil"
)

// Databases applies set's PostgreSQL tree to a new database on the test server and its SQLite
// tree to a new file, and returns both; they are closed and dropped when the test ends.
func Databases(t testing.TB, set migrate.Set) (pg, lite *gorm.DB) {
	t.Helper()
	return Postgres(t, set), SQLite(t, set)
}

// Postgres applies set's PostgreSQL tree to a new database on the test server and returns it,
// closed and dropped when the test ends.
func Postgres(t testing.TB, set migrate.Set) *gorm.DB {
	t.Helper()
	return testutil.OpenDB(t, testutil.NewDatabase(t, set))
}

// SQLite applies set's SQLite tree to a new file in the test's temporary directory and returns
// it, closed when the test ends.
func SQLite(t testing.TB, set migrate.Set) *gorm.DB {
	t.Helper()
	lite := testutil.OpenDB(t, "sqlite:"+filepath.Join(t.TempDir(), set.Component+".db"))
	if _, err := migrate.Up(context.Background(), lite, set); err != nil {
		t.Fatalf("sqlite migrations: %v", err)
	}
	return lite
}

// Dialects runs fn as two parallel subtests, "postgres" and "sqlite", each over a new database
// with set applied: code that runs the same on both dialects is tested on both.
func Dialects(t *testing.T, set migrate.Set, fn func(t *testing.T, gdb *gorm.DB)) {
	t.Helper()
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		fn(t, Postgres(t, set))
	})
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		fn(t, SQLite(t, set))
	})
}

// CompareTrees builds both trees of set and fails t with every difference between their schemas
// (see Compare); it returns the two databases for further checks.
func CompareTrees(t testing.TB, set migrate.Set, eq Equivalents) (pg, lite *gorm.DB) {
	t.Helper()
	pg, lite = Databases(t, set)
	ctx := context.Background()
	pgSchema, err := Inspect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	liteSchema, err := Inspect(ctx, lite)
	if err != nil {
		t.Fatal(err)
	}
	if len(pgSchema.Tables) == 0 {
		t.Fatalf("%s: the postgres tree built no table", set.Component)
	}
	if diffs := Compare(pgSchema, liteSchema, eq); len(diffs) > 0 {
		t.Errorf("the %s migration trees differ:\n  %s", set.Component, strings.Join(diffs, "\n  "))
	}
	return pg, lite
}

// SQLiteUpgrade applies set's SQLite migrations up to version through to a new file, lets fill
// write rows in every table as a database of that version holds them, applies the remaining migrations, and
// fails t unless they applied and every table holds the same rows as before, in the columns it
// had (a later migration may add columns). It returns the upgraded database.
func SQLiteUpgrade(t testing.TB, set migrate.Set, through int, fill func(*gorm.DB)) *gorm.DB {
	t.Helper()
	ctx := context.Background()
	lite := testutil.OpenDB(t, "sqlite:"+filepath.Join(t.TempDir(), set.Component+".db"))
	old, err := prefix(set, "sqlite", through)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.Up(ctx, lite, old); err != nil {
		t.Fatalf("migrations through %d: %v", through, err)
	}
	fill(lite)
	cols := columns(t, lite)
	before := rows(t, lite, cols)
	for table, rs := range before {
		if len(rs) == 0 {
			t.Fatalf("fill left %s empty: the upgrade would not be shown to keep its rows", table)
		}
	}
	applied, err := migrate.Up(ctx, lite, set)
	if err != nil || len(applied) == 0 {
		t.Fatalf("migrations after %d: applied %v, %v", through, applied, err)
	}
	after := rows(t, lite, cols)
	for table, want := range before {
		if got := after[table]; !slices.Equal(got, want) {
			t.Errorf("%s after %v:\n got %q\nwant %q", table, applied, got, want)
		}
	}
	return lite
}

// prefix is set with only the migrations of dialect numbered up to through.
func prefix(set migrate.Set, dialect string, through int) (migrate.Set, error) {
	entries, err := fs.ReadDir(set.FS, dialect)
	if err != nil {
		return set, err
	}
	files := fstest.MapFS{}
	for _, e := range entries {
		version, _, _ := strings.Cut(e.Name(), "_")
		if n, err := strconv.Atoi(version); err != nil || n > through {
			continue
		}
		name := path.Join(dialect, e.Name())
		body, err := fs.ReadFile(set.FS, name)
		if err != nil {
			return set, err
		}
		files[name] = &fstest.MapFile{Data: body}
	}
	return migrate.Set{Component: set.Component, FS: files}, nil
}

// columns lists the columns of every table of a SQLite database, by table name.
func columns(t testing.TB, lite *gorm.DB) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, table := range sqliteTables(t, lite) {
		var cols []string
		if err := lite.Raw(`SELECT name FROM pragma_table_info(?)`, table).Scan(&cols).Error; err != nil {
			t.Fatal(err)
		}
		out[table] = cols
	}
	return out
}

func sqliteTables(t testing.TB, lite *gorm.DB) []string {
	t.Helper()
	var tables []string
	if err := lite.Raw(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'
		AND name <> 'schema_migrations'`).Scan(&tables).Error; err != nil {
		t.Fatal(err)
	}
	return tables
}

// rows reads the tables of cols of a SQLite database, in their columns of cols, as sorted printed
// rows, by table name.
func rows(t testing.TB, lite *gorm.DB, cols map[string][]string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for table, cs := range cols {
		var rs []map[string]any
		if err := lite.Table(table).Select(cs).Find(&rs).Error; err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			out[table] = append(out[table], fmt.Sprint(r)) // fmt prints a map's keys sorted
		}
		sort.Strings(out[table])
	}
	return out
}
