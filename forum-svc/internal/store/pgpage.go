package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/shared/db"
)

// messagePagePostgres is MessagePage on PostgreSQL, the request that every page view makes, and
// the store's one path around GORM. It runs pageSQL on a connection of gdb's pool, but through
// pgx itself, scanning into typed destinations: database/sql's pgx adapter boxes every column of
// every row into an interface value. forum-svc/README.md shows what this buys, and that decoding
// the raw column bytes by hand bought nothing more: against the same page read through GORM's
// rows, in alternating rounds of go run ./tools/bench/forum -compare, 9 % less service CPU a
// request (148 and 147 against 163 and 161 µs in two runs), a 4-10 % lower median latency and
// +11.4 % and +1.9 % of HTTP/pgbench (2026-11-26, load average 9-20); +8.7 % and 6-15 % less CPU
// on 2026-11-24. The statement is GORM's rendering of pageSQL, made once (renderPage).
//
// BenchmarkMessagePage, a 5-message page on PostgreSQL 15, 2026-11-26 (times scatter 3× on the
// shared machine; the allocations do not): this path 21 allocations, 2.5 kB; rendering the
// statement per call 42, 6.9 kB; the same page through GORM's rows 103, 9.1 kB (with the
// messages' HTML, reaction score and the reader's reaction; 21, 1.8 kB / 40, 4.7 kB / 91, 6.8 kB
// before them).
func (s *Store) messagePagePostgres(ctx context.Context, gdb *gorm.DB, conversationID, userID, page int64) (conversation.PageRows, error) {
	var (
		out     conversation.PageRows
		readErr error // the page's own answer, wrapped already
	)
	err := pgxConn(ctx, gdb, func(conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, s.pgPage, pageArgs(conversationID, userID, page)...)
		out, readErr = readPage(rows, err, conversationID)
		return readErr
	})
	switch {
	case readErr != nil:
		return out, readErr
	case err != nil:
		return out, fmt.Errorf("read message page: %w", err)
	}
	return out, nil
}

// pgxConn runs fn on a pgx connection of gdb's pool, taken from it for fn alone. It reaches the
// pool with gdb.DB rather than GORM's Connection, whose session costs the page 10 allocations
// and 1.6 kB more (BenchmarkMessagePage: 31 against 21).
func pgxConn(ctx context.Context, gdb *gorm.DB, fn func(*pgx.Conn) error) error {
	pool, err := gdb.DB()
	if err != nil {
		return err
	}
	conn, err := pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(driverConn any) error {
		sc, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("driver connection is %T, not pgx", driverConn)
		}
		return fn(sc.Conn())
	})
}

// renderPage renders pageSQL for PostgreSQL with GORM (db.Statement), once: its arguments are
// numbers whatever the page, so one rendering serves every call.
func renderPage(gdb *gorm.DB) (string, error) {
	args := pageArgs(0, 0, 0)
	q, vars, err := db.Statement(gdb, pageSQL, args...)
	if err != nil {
		return "", fmt.Errorf("render the message page's statement: %w", err)
	}
	if len(vars) != len(args) {
		return "", fmt.Errorf("render the message page's statement: %d variables for %d arguments", len(vars), len(args))
	}
	return q, nil
}

// readPage reads pageSQL's result (err is the error of starting the query). One set of typed
// destinations, a number or a text per column of pageColumns, serves every row.
func readPage(rows pgx.Rows, err error, conversationID int64) (conversation.PageRows, error) {
	if err != nil {
		return conversation.PageRows{}, fmt.Errorf("read message page: %w", err)
	}
	defer rows.Close()
	numbers := make([]pgtype.Int8, len(pageColumns))
	texts := make([]pgtype.Text, len(pageColumns))
	dest := make([]any, len(pageColumns))
	for i, c := range pageColumns {
		if c.text != nil {
			dest[i] = &texts[i]
		} else {
			dest[i] = &numbers[i]
		}
	}
	b := pageBuilder{conversationID: conversationID}
	// A failed statement shows as no rows and rows.Err (pgx reports errors lazily).
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return conversation.PageRows{}, fmt.Errorf("read message page: %w", err)
		}
		if !b.found {
			for i, c := range pageColumns {
				if c.header == nil {
					continue
				}
				if !numbers[i].Valid {
					return conversation.PageRows{}, fmt.Errorf("read message page: column %s: NULL where a number is required", c.expr)
				}
				*c.header(&b.out) = numbers[i].Int64
			}
			b.begin()
		}
		if !numbers[pageKeyColumn].Valid {
			continue // the reader's row without a message: no message on this page
		}
		// NULL elsewhere reads as 0 or "" (Int64 and String of an invalid value), as sql.Null has it.
		m := b.message()
		for i, c := range pageColumns {
			switch {
			case c.number != nil:
				*c.number(m) = numbers[i].Int64
			case c.text != nil:
				*c.text(m) = texts[i].String
			}
		}
	}
	if err := rows.Err(); err != nil {
		return conversation.PageRows{}, fmt.Errorf("read message page: %w", err)
	}
	return b.result()
}
