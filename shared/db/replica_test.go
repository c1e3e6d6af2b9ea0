package db_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"gorm.io/gorm"

	"forumstats.local/shared/db"
	tu "forumstats.local/shared/testutil"
)

// pair creates two databases standing in for a primary and its replica, each with a table
// which that names the database, so that a read tells which one answered.
func pair(t *testing.T) (admin, primaryURL, replicaURL string, drop func()) {
	t.Helper()
	admin, err := tu.PostgresURL()
	if err != nil {
		t.Fatalf("no PostgreSQL (TEST_POSTGRES_URL, 127.0.0.1:5432 or Docker): %v", err)
	}
	ctx := context.Background()
	var urls [2]string
	var drops [2]func()
	for i, name := range []string{"primary", "replica"} {
		u, d, err := tu.CreateDatabase(ctx, admin, fmt.Sprintf("test_reads_%s_%d", name, os.Getpid()), "")
		if err != nil {
			t.Fatal(err)
		}
		urls[i], drops[i] = u, d
		t.Cleanup(d)
		gdb := tu.OpenDB(t, u)
		if err := gdb.Exec("CREATE TABLE which (name text); INSERT INTO which VALUES ('" + name + "')").Error; err != nil {
			t.Fatal(err)
		}
		db.Close(gdb)
	}
	return admin, urls[0], urls[1], drops[1]
}

func which(ctx context.Context, r *db.Reads) (string, error) {
	return whichAs(ctx, r, db.NoKey)
}

// whichAs is which for a read of key (whose writes pin it to the primary).
func whichAs(ctx context.Context, r *db.Reads, key int64) (string, error) {
	var name string
	err := r.Read(ctx, key, func(gdb *gorm.DB) error {
		return gdb.WithContext(ctx).Raw("SELECT name FROM which").Scan(&name).Error
	})
	return name, err
}

func TestReadsRouting(t *testing.T) {
	_, primaryURL, replicaURL, _ := pair(t)
	ctx := context.Background()
	primary := tu.OpenDB(t, primaryURL)
	clock := tu.NewClock(time.Now())
	r, err := db.OpenReads(primary, replicaURL, db.ReadsOptions{Service: "test-routing", Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, err := which(ctx, r); got != "replica" || err != nil {
		t.Fatalf("read: %q, %v; want the replica", got, err)
	}
	// ReadValue goes through r, and to the primary where the reader was given no Reads.
	name := func(gdb *gorm.DB) (string, error) {
		var n string
		err := gdb.WithContext(ctx).Raw("SELECT name FROM which").Scan(&n).Error
		return n, err
	}
	for _, c := range []struct {
		reads *db.Reads
		want  string
	}{{r, "replica"}, {nil, "primary"}} {
		if got, err := db.ReadValue(ctx, c.reads, primary, db.NoKey, name); got != c.want || err != nil {
			t.Fatalf("ReadValue: %q, %v; want the %s", got, err, c.want)
		}
	}
	// A statement's own error is returned, not retried on the primary.
	err = r.Read(ctx, db.NoKey, func(gdb *gorm.DB) error { return gdb.Exec("SELECT * FROM no_such_table").Error })
	if err == nil || db.IsConnectionError(err) {
		t.Fatalf("statement error: %v", err)
	}
	if got, _ := which(ctx, r); got != "replica" {
		t.Fatalf("a statement error made the replica skipped: %q", got)
	}

	// Pins: a writer's reads stay on the primary for PinFor; other readers' stay on the replica.
	// reads says where keys 7, 8 and NoKey read.
	reads := func(want7, want8 string) {
		t.Helper()
		for key, want := range map[int64]string{7: want7, 8: want8, db.NoKey: "replica"} {
			if got, err := whichAs(ctx, r, key); got != want || err != nil {
				t.Fatalf("key %d reads the %q (%v), want the %s", key, got, err, want)
			}
			if got, err := db.ReadValue(ctx, r, primary, key, name); got != want || err != nil {
				t.Fatalf("ReadValue of key %d: the %q (%v), want the %s", key, got, err, want)
			}
		}
	}
	if r.Pinned(7) {
		t.Fatal("pinned before any write")
	}
	r.Pin(7)
	r.Pin(db.NoKey) // pins nothing: NoKey reads follow no writer
	if !r.Pinned(7) || r.Pinned(8) || r.Pinned(db.NoKey) {
		t.Fatal("pin")
	}
	reads("primary", "replica")
	clock.Add(db.DefaultPinAfterWrite - time.Millisecond)
	if !r.Pinned(7) {
		t.Fatal("pin ended early")
	}
	reads("primary", "replica")
	clock.Add(time.Millisecond)
	if r.Pinned(7) {
		t.Fatal("pin did not end")
	}
	reads("replica", "replica")

	// Without a replica everything is the primary, and nothing is pinned.
	none, err := db.OpenReads(primary, "", db.ReadsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	none.Pin(7)
	if got, _ := whichAs(ctx, none, 7); got != "primary" || none.Pinned(7) || none.Replica() {
		t.Fatalf("no replica: %q", got)
	}
	// A nil Reads (a reader given none) pins nothing and has no replica.
	var unset *db.Reads
	unset.Pin(7)
	if unset.Pinned(7) || unset.Replica() {
		t.Fatal("a nil Reads pinned or has a replica")
	}
}

// A replica of another kind of database than the primary is refused.
func TestReadsSameKind(t *testing.T) {
	_, primaryURL, _, _ := pair(t)
	primary := tu.OpenDB(t, primaryURL)
	lite, err := db.Open(context.Background(), "sqlite:"+t.TempDir()+"/replica.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(lite)
	if _, err := db.NewReads(primary, lite, db.ReadsOptions{}); err == nil {
		t.Fatal("a SQLite replica of a PostgreSQL primary was accepted")
	}
}

// TestReadsFallback: a replica that cannot be reached (a closed port), or whose database goes
// away under an open pool, sends the read to the primary at once (the request never fails),
// is skipped for SkipFor, counted, and tried again after it.
func TestReadsFallback(t *testing.T) {
	_, primaryURL, replicaURL, dropReplica := pair(t)
	ctx := context.Background()
	primary := tu.OpenDB(t, primaryURL)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "postgres://postgres@" + ln.Addr().String() + "/nothing?sslmode=disable&connect_timeout=2"
	ln.Close()

	for _, tc := range []struct {
		name, service string
		url           string
		kill          func()
	}{
		{"closed port", "test-closed", closed, nil},
		{"replica dropped", "test-dropped", replicaURL, dropReplica},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := tu.NewClock(time.Now())
			r, err := db.OpenReads(primary, tc.url, db.ReadsOptions{Service: tc.service, Now: clock.Now, SkipFor: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if tc.kill != nil {
				if got, err := which(ctx, r); got != "replica" || err != nil {
					t.Fatalf("before: %q, %v", got, err)
				}
				tc.kill()
			}
			counter := fallbacksOf(t, tc.service)
			if got, err := which(ctx, r); got != "primary" || err != nil {
				t.Fatalf("failing replica: %q, %v; want the primary's answer", got, err)
			}
			if n := counter(); n != 1 {
				t.Fatalf("fallbacks %v after the failure", n)
			}
			// Skipped: the replica is not tried (the function runs once, on the primary).
			tries := 0
			err = r.Read(ctx, db.NoKey, func(gdb *gorm.DB) error { tries++; return gdb.Exec("SELECT 1").Error })
			if err != nil || tries != 1 {
				t.Fatalf("while skipped: %d tries, %v", tries, err)
			}
			if got, _ := whichAs(ctx, r, 9); got != "primary" {
				t.Fatalf("a user's read while skipped: %q", got)
			}
			if n := counter(); n != 3 {
				t.Fatalf("fallbacks %v while skipped", n)
			}
			// After SkipFor the replica is tried again (and fails again here).
			clock.Add(30 * time.Second)
			tries = 0
			err = r.Read(ctx, db.NoKey, func(gdb *gorm.DB) error { tries++; return gdb.Exec("SELECT name FROM which").Error })
			if err != nil || tries != 2 {
				t.Fatalf("after SkipFor: %d tries, %v", tries, err)
			}
		})
	}
}

func fallbacksOf(t *testing.T, service string) func() float64 {
	t.Helper()
	return func() float64 {
		return testutil.ToFloat64(db.FallbacksCounter(service))
	}
}

// A caller that gave up is no replica failure.
func TestReadsCanceledIsNoFailure(t *testing.T) {
	_, primaryURL, replicaURL, _ := pair(t)
	primary := tu.OpenDB(t, primaryURL)
	r, err := db.OpenReads(primary, replicaURL, db.ReadsOptions{Service: "test-canceled"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := which(ctx, r); err == nil {
		t.Fatal("canceled read succeeded")
	}
	if got, _ := which(context.Background(), r); got != "replica" {
		t.Fatalf("after a canceled read: %q", got)
	}
}

func TestIsConnectionError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("boom"), false},
		{&pgconn.PgError{Code: "42P01"}, false},
		{&pgconn.PgError{Code: "23505"}, false},
		{fmt.Errorf("read: %w", &pgconn.PgError{Code: "08006"}), true},
		{&pgconn.PgError{Code: "57P01"}, true},
		{&pgconn.PgError{Code: "3D000"}, true},
		{&net.OpError{Op: "dial", Err: errors.New("refused")}, true},
		{io.ErrUnexpectedEOF, true},
		{sql.ErrNoRows, false},
		{context.Canceled, false},
	} {
		if got := db.IsConnectionError(tc.err); got != tc.want {
			t.Errorf("IsConnectionError(%v) = %v", tc.err, got)
		}
	}
}
