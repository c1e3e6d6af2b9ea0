package main

import (
	"context"
	"database/sql"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"forumstats.local/shared/testutil"
)

func TestMain(m *testing.M) { testutil.Run(m) }

// sampleStatements reads back the statements the other connections started while work ran: not
// the last statement of a connection idle since before, nor pgbench's (told apart by its
// application_name); and it refuses a statement cut at track_activity_query_size.
func TestSampleStatements(t *testing.T) {
	ctx := context.Background()
	dbURL := testutil.NewDatabase(t)
	pin := func(u string) *sql.Conn {
		t.Helper()
		pool, err := sql.Open("pgx", u)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pool.Close() })
		c, err := pool.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", "pgbench")
	u.RawQuery = q.Encode()
	idle, a, b, pgbench := pin(dbURL), pin(dbURL), pin(dbURL), pin(u.String())
	if _, err := idle.ExecContext(ctx, "SELECT 'before'"); err != nil {
		t.Fatal(err)
	}
	// Each connection repeats its statement, idle a moment between, so that the polls see it.
	run := func(stmts map[*sql.Conn]string) func() error {
		return func() error {
			for range 20 {
				for c, stmt := range stmts {
					if _, err := c.ExecContext(ctx, stmt); err != nil {
						return err
					}
				}
				time.Sleep(5 * time.Millisecond)
			}
			return nil
		}
	}
	got, err := sampleStatements(ctx, dbURL, run(map[*sql.Conn]string{
		a: "SELECT 'service a'", b: "SELECT 'service b'", pgbench: "SELECT 'pgbench'",
	}))
	slices.Sort(got)
	if want := []string{"SELECT 'service a'", "SELECT 'service b'"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("sampleStatements = %q, %v; want %q", got, err, want)
	}

	long := "SELECT '" + strings.Repeat("x", 64<<10) + "'"
	if _, err := sampleStatements(ctx, dbURL, run(map[*sql.Conn]string{a: long})); err == nil ||
		!strings.Contains(err.Error(), "track_activity_query_size") {
		t.Fatalf("a statement longer than track_activity_query_size: %v, want it refused", err)
	}
}
