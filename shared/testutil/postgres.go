// Package testutil provides the real PostgreSQL and Redis that tests run against.
//
// Where a server comes from, in order: TEST_POSTGRES_URL / TEST_REDIS_URL when set; else the
// server on the default local port if it answers; else a container through testcontainers-go when
// a Docker engine is available; else an error that says how to provide one. A test never skips
// silently for want of a database.
package testutil

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for the admin connection
	"gorm.io/gorm"

	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
)

// PostgresURL returns the URL of an administrative database on a PostgreSQL server that tests
// may create databases on.
func PostgresURL() (string, error) { return postgresSource.URL() }

func pingPostgres(ctx context.Context, u string) error {
	conn, err := sql.Open("pgx", u)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.PingContext(ctx)
}

func postgresContainer() (string, func(), error) { return startContainer("postgres") }

var unsafeName = regexp.MustCompile(`[^a-z0-9_]+`)

// PackageDB creates a fresh database for the calling test package, cloned from a template that
// holds the given migrations (built once per migration content and shared by all packages), and
// returns its URL and a cleanup that drops it. Call it from TestMain.
func PackageDB(sets ...migrate.Set) (string, func(), error) {
	base, err := PostgresURL()
	if err != nil {
		return "", nil, err
	}
	fingerprint, err := migrate.Fingerprint("postgres", sets...)
	if err != nil {
		return "", nil, err
	}
	sum := sha256.Sum256([]byte(fingerprint))
	template := "tmpl_" + hex.EncodeToString(sum[:8])

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := sql.Open("pgx", base)
	if err != nil {
		return "", nil, err
	}
	defer admin.Close()
	if err := ensureTemplate(ctx, admin, base, template, sets); err != nil {
		return "", nil, fmt.Errorf("template database: %w", err)
	}

	pkg := strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
	name := fmt.Sprintf("test_%s_%d_%d", unsafeName.ReplaceAllString(strings.ToLower(pkg), "_"), os.Getpid(), time.Now().UnixNano()%1e6)
	if len(name) > 60 {
		name = name[len(name)-60:]
	}
	return CreateDatabase(ctx, base, name, template)
}

// CreateDatabase creates database name on the server of adminURL, as a copy of template when
// template is not empty, after dropping a leftover of the same name. It returns the new
// database's URL and a function that drops it. Tests, tools and benchmarks all create their
// databases through it.
func CreateDatabase(ctx context.Context, adminURL, name, template string) (string, func(), error) {
	admin, err := sql.Open("pgx", adminURL)
	if err != nil {
		return "", nil, err
	}
	defer admin.Close()
	if err := dropDatabase(ctx, admin, name); err != nil {
		return "", nil, err
	}
	stmt := "CREATE DATABASE " + quoteIdent(name)
	if template != "" {
		stmt += " TEMPLATE " + quoteIdent(template)
	}
	if _, err := admin.ExecContext(ctx, stmt); err != nil {
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	dbURL, err := withDatabase(adminURL, name)
	if err != nil {
		return "", nil, err
	}
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := sql.Open("pgx", adminURL); err == nil {
			_ = dropDatabase(ctx, conn, name)
			conn.Close()
		}
	}
	return dbURL, drop, nil
}

// dropDatabase drops name if it exists, ending its sessions.
func dropDatabase(ctx context.Context, conn interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, name string) error {
	if _, err := conn.ExecContext(ctx, "DROP DATABASE IF EXISTS "+quoteIdent(name)+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

func quoteIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// OpenDB opens url with shared/db and closes the pool when the test ends.
func OpenDB(t interface {
	Helper()
	Fatalf(string, ...any)
	Cleanup(func())
}, url string) *gorm.DB {
	t.Helper()
	gdb, err := db.Open(context.Background(), url, nil)
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { db.Close(gdb) })
	return gdb
}

// NewDatabase is PackageDB for a test that wants a database of its own; it is dropped when
// the test ends.
func NewDatabase(t interface {
	Helper()
	Fatalf(string, ...any)
	Cleanup(func())
}, sets ...migrate.Set) string {
	t.Helper()
	u, cleanup, err := PackageDB(sets...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	t.Cleanup(cleanup)
	return u
}

// Exec runs stmts on gdb in order, failing the test or benchmark at the first error: the
// seeding of a database of its own.
func Exec(t interface {
	Helper()
	Fatalf(string, ...any)
}, gdb *gorm.DB, stmts ...string) {
	t.Helper()
	for _, stmt := range stmts {
		if err := gdb.Exec(stmt).Error; err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

func ensureTemplate(ctx context.Context, admin *sql.DB, base, template string, sets []migrate.Set) error {
	conn, err := admin.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	// Packages run in parallel processes; one builds the template while the others wait.
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(hashtext($1))", template); err != nil {
		return err
	}
	defer conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock(hashtext($1))", template) //nolint:errcheck
	var exists bool
	if err := conn.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", template).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	building := template + "_building"
	u, _, err := CreateDatabase(ctx, base, building, "")
	if err != nil {
		return err
	}
	gdb, err := db.Open(ctx, u, nil)
	if err != nil {
		return err
	}
	for _, s := range sets {
		if _, err := migrate.Up(ctx, gdb, s); err != nil {
			db.Close(gdb)
			return err
		}
	}
	db.Close(gdb)
	// Renamed only once complete, so a crash mid-build never leaves a half-migrated template.
	_, err = conn.ExecContext(ctx, "ALTER DATABASE "+quoteIdent(building)+" RENAME TO "+quoteIdent(template))
	return err
}

func withDatabase(base, name string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// CleanupContainers stops containers started for this test process; call it at the end of TestMain.
func CleanupContainers() {
	postgresSource.stop()
	redisSource.stop()
}

// Run is TestMain for a package whose tests find their servers themselves: it runs the tests,
// stops any container started for them, and exits with the tests' code.
func Run(m interface{ Run() int }) {
	code := m.Run()
	CleanupContainers()
	os.Exit(code)
}

// Main is TestMain for a package whose tests share one database: it creates the database from
// sets, stores its URL in *url, runs the tests, drops the database, and exits with the tests'
// code. Without a PostgreSQL it fails the package with a message that says how to provide one.
func Main(m interface{ Run() int }, url *string, sets ...migrate.Set) {
	u, cleanup, err := PackageDB(sets...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*url = u
	code := m.Run()
	cleanup()
	CleanupContainers()
	os.Exit(code)
}
