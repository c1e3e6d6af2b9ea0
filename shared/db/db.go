// Package db opens the relational database of a service: PostgreSQL in production, or the
// embedded SQLite for a newcomer's machine. Both go through the same GORM code; only the
// dialect-specific migrations differ.
//
// Reads (replica.go) routes a service's reads to an optional read replica: fail-open (a replica
// that cannot be reached is skipped for a while and the read re-run on the primary) and
// read-your-writes (a user's reads stay on the primary for a few seconds after that user wrote).
// GORM's dbresolver plugin was weighed for it and not used: it chooses a pool before a statement
// runs and returns the replica's error, so it can carry neither rule.
package db

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/libtnb/sqlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Open connects to url: postgres://... or postgresql://... for PostgreSQL, sqlite:PATH for the
// embedded database (the directory of PATH is created). It pings before returning.
func Open(ctx context.Context, url string, log *slog.Logger) (*gorm.DB, error) {
	return open(ctx, url, log, true)
}

// open is Open, pinging only when ping is set.
func open(ctx context.Context, url string, log *slog.Logger, ping bool) (*gorm.DB, error) {
	cfg := &gorm.Config{
		Logger:               logger.Discard,
		TranslateError:       true,
		NowFunc:              func() time.Time { return time.Now().UTC() },
		DisableAutomaticPing: !ping,
	}
	dialector, pool, err := dialectorFor(url)
	if err != nil {
		return nil, err
	}
	gdb, err := gorm.Open(dialector, cfg)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dialector.Name(), err)
	}
	sqlDB, err := gdb.DB()
	if err != nil {
		return nil, err
	}
	pool(sqlDB)
	if !ping {
		return gdb, nil
	}
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := sqlDB.PingContext(pingCtx); err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	if log != nil {
		log.Debug("database opened", "dialect", gdb.Dialector.Name())
	}
	return gdb, nil
}

// sqliteParams are the driver's settings of every SQLite connection: wait up to 10 s for another
// process's write lock (stats-svc and collector-svc share a file), write-ahead logging (readers
// do not block the writer), foreign keys enforced, fsync at checkpoints only (WAL keeps the
// database consistent; a power cut may lose the last commits), every transaction BEGIN
// IMMEDIATE (a transaction that will write takes the write lock before it reads, so it never
// fails half-way on a lock another took meanwhile), and instants stored as text in SQLite's own
// layout with the zone ("2006-01-02 15:04:05.999999999-07:00"): the layout every earlier build
// wrote, so that files written before and after a change of driver read, sort and compare alike.
const sqliteParams = "_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)" +
	"&_pragma=synchronous(NORMAL)&_txlock=immediate&_time_format=sqlite"

// dialectorFor picks the GORM dialector of url and the pool settings that suit its database.
func dialectorFor(url string) (gorm.Dialector, func(*sql.DB), error) {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return postgres.Open(url), func(p *sql.DB) {
			p.SetMaxOpenConns(25)
			p.SetMaxIdleConns(25)
			p.SetConnMaxIdleTime(5 * time.Minute)
		}, nil
	case strings.HasPrefix(url, "sqlite:"):
		path := strings.TrimPrefix(strings.TrimPrefix(url, "sqlite:"), "//")
		if path == "" {
			return nil, nil, fmt.Errorf("DATABASE_URL %q: sqlite needs a file path", url)
		}
		if dir := filepath.Dir(path); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, nil, fmt.Errorf("create database directory: %w", err)
			}
		}
		dsn := "file:" + path + "?" + sqliteParams
		// One connection serialises writers inside the process; busy_timeout covers the other
		// process (stats-svc and collector-svc share the file).
		return sqlite.Open(dsn), func(p *sql.DB) { p.SetMaxOpenConns(1) }, nil
	}
	return nil, nil, fmt.Errorf("DATABASE_URL %q: want postgres://, postgresql:// or sqlite:PATH", redact(url))
}

// Ping checks that the database answers; it is the readiness check of every service.
func Ping(db *gorm.DB) func(context.Context) error {
	return func(ctx context.Context) error {
		sqlDB, err := db.DB()
		if err != nil {
			return err
		}
		return sqlDB.PingContext(ctx)
	}
}

// redact hides a password in a URL so that it never reaches an error message or a log.
func redact(url string) string {
	at := strings.LastIndex(url, "@")
	scheme := strings.Index(url, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return url
	}
	userinfo := url[scheme+3 : at]
	if i := strings.Index(userinfo, ":"); i >= 0 {
		return url[:scheme+3] + userinfo[:i] + ":xxxxx" + url[at:]
	}
	return url
}

// Close releases the connection pool behind db.
func Close(db *gorm.DB) {
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
}
