package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// The bench compares the service with pgbench running the statements the service itself sent to
// PostgreSQL, read back from pg_stat_activity, so that a change of the service's SQL is measured
// as it is, never against a stale copy.

// sampleStatements runs work while polling pg_stat_activity and returns the distinct statements
// the other connections to the database (the service's; pgbench's are told apart by its
// application_name) started meanwhile. A statement that finishes between two polls is still seen
// as its connection's last statement, unless the connection starts another before the next poll:
// work should run long enough, with enough connections, for every statement to be caught.
func sampleStatements(ctx context.Context, dbURL string, work func() error) ([]string, error) {
	conn, err := sql.Open("pgx", dbURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var since time.Time
	var limit int
	if err := conn.QueryRowContext(ctx, `SELECT clock_timestamp(), setting::int FROM pg_settings WHERE name = 'track_activity_query_size'`).
		Scan(&since, &limit); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	// poll adds the statements started since that it has not seen yet.
	poll := func() error {
		rows, err := conn.QueryContext(ctx, `
SELECT DISTINCT query FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
  AND application_name <> 'pgbench' AND query_start >= $1`, since)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var q string
			if err := rows.Scan(&q); err != nil {
				return err
			}
			if len(q) >= limit-1 {
				return fmt.Errorf("a statement is cut at track_activity_query_size (%d bytes): raise it: %.80s", limit, q)
			}
			if !seen[q] {
				seen[q] = true
				out = append(out, q)
			}
		}
		return rows.Err()
	}
	done := make(chan error, 1)
	go func() { done <- work() }()
	for {
		if err := poll(); err != nil {
			<-done
			return nil, err
		}
		select {
		case err := <-done:
			return out, err
		case <-time.After(200 * time.Microsecond):
		}
	}
}

// role is one statement the bench expects of the service: the words that tell it apart, and its
// parameters $1..$n as pgbench variables or literals.
type role struct {
	name   string
	marker string // a substring of the statement (white space folded); "begin" and "commit" match whole
	params []string
	gset   bool // its result row is stored in pgbench variables named after the columns
	many   bool // several statements may play it (their texts differ by the length of an IN list)
	cached bool // run on a cache miss only (auth's): known, perhaps unseen, not in a script
}

// matchRoles pairs each statement with the role it plays, in the roles' order. Every role must be
// played by exactly one statement and every statement must play one: the bench fails on a
// statement it does not know rather than measure pgbench without it.
func matchRoles(statements []string, roles []role) ([]string, error) {
	out := make([]string, len(roles))
	for _, s := range statements {
		folded := strings.Join(strings.Fields(s), " ")
		found := -1
		for i, r := range roles {
			whole := r.marker == "begin" || r.marker == "commit"
			if whole && strings.EqualFold(folded, r.marker) || !whole && strings.Contains(folded, r.marker) {
				found = i
				break
			}
		}
		switch {
		case found < 0:
			return nil, fmt.Errorf("the service ran a statement the bench does not know (add its role): %s", folded)
		case out[found] != "" && !roles[found].many:
			return nil, fmt.Errorf("two statements play %q: %s | %s", roles[found].name, out[found], folded)
		}
		out[found] = s
	}
	for i, r := range roles {
		if out[i] == "" && !r.cached {
			return nil, fmt.Errorf("no statement seen for %q (marker %q) among %d captured", r.name, r.marker, len(statements))
		}
	}
	return out, nil
}

// rolesScript is a pgbench script of the statements in the roles' order, each with its
// parameters bound, after the given \set lines; cached roles are left out.
func rolesScript(sets []string, statements []string, roles []role) (string, error) {
	var b strings.Builder
	for _, s := range sets {
		b.WriteString(`\set ` + s + "\n")
	}
	for i, r := range roles {
		if r.cached {
			continue
		}
		stmt, err := bindParams(statements[i], r.params)
		if err != nil {
			return "", fmt.Errorf("statement %q: %w", r.name, err)
		}
		b.WriteString(stmt)
		if r.gset {
			b.WriteString(" \\gset\n")
		} else {
			b.WriteString(";\n")
		}
	}
	return b.String(), nil
}

// sqlString is s as an SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
