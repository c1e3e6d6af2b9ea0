package db

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
)

func TestOpenRefusesBadURLs(t *testing.T) {
	for _, tt := range []struct{ url, want string }{
		{"mysql://u:secret@h/db", "want postgres://"},
		{"sqlite:", "sqlite needs a file path"},
		{"sqlite://", "sqlite needs a file path"},
		{"", "want postgres://"},
	} {
		_, err := Open(context.Background(), tt.url, nil)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Open(%q) = %v, want an error containing %q", tt.url, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q) error leaks the password: %v", tt.url, err)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:pw@h:5432/db":     "postgres://u:xxxxx@h:5432/db",
		"postgres://u@h/db":             "postgres://u@h/db",
		"sqlite:./data/x.db":            "sqlite:./data/x.db",
		"weird:pw@host-without-slashes": "weird:pw@host-without-slashes",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSQLiteDialect(t *testing.T) {
	gdb, err := Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "sub", "x.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(gdb)
	if d := DialectOf(gdb); d != SQLite || d.SnapshotReads || d.AdvisoryLocks || d.NativeConn {
		t.Fatalf("DialectOf(sqlite) = %+v, want SQLite with no PostgreSQL capability", d)
	}
	if err := Ping(gdb)(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestSQLiteSettings holds every SQLite connection to sqliteParams, whatever the driver does by
// default: the pragmas in force, BEGIN IMMEDIATE, and instants stored in the layout of the files
// earlier builds wrote, which read back as the same instant.
func TestSQLiteSettings(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.db")
	gdb, err := Open(ctx, "sqlite:"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(gdb)
	for _, tt := range []struct{ pragma, want string }{
		{"busy_timeout", "10000"},
		{"journal_mode", "wal"},
		{"foreign_keys", "1"},
		{"synchronous", "1"}, // NORMAL
	} {
		var got string
		if err := gdb.Raw("PRAGMA " + tt.pragma).Row().Scan(&got); err != nil || got != tt.want {
			t.Errorf("PRAGMA %s = %q (%v), want %q", tt.pragma, got, err, tt.want)
		}
	}

	if err := gdb.Exec("CREATE TABLE t (id INTEGER PRIMARY KEY, at DATETIME)").Error; err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 24, 5, 7, 0, 123456000, time.UTC)
	const stored = "2026-11-24 05:07:00.123456+00:00"
	if err := gdb.Exec("INSERT INTO t (id, at) VALUES (1, ?), (2, ?)", at, stored).Error; err != nil {
		t.Fatal(err)
	}
	// Compared in SQL: the driver may turn any text that reads as a time into a time.Time.
	var same int
	if err := gdb.Raw("SELECT COUNT(*) FROM t WHERE typeof(at) = 'text' AND at = ?", stored).Row().Scan(&same); err != nil || same != 2 {
		t.Errorf("%d of 2 rows hold the text %q (%v): a time.Time is stored in another layout", same, stored, err)
	}
	var read []time.Time
	if err := gdb.Raw("SELECT at FROM t ORDER BY id").Scan(&read).Error; err != nil {
		t.Fatal(err)
	}
	if len(read) != 2 || !read[0].Equal(at) || !read[1].Equal(at) {
		t.Errorf("read back %v, want %v twice", read, at)
	}

	// A transaction takes the write lock at BEGIN, before its first write: another connection
	// (here told not to wait) cannot write while it is open, even though it has only read.
	other, err := Open(ctx, "sqlite:"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(other)
	if err := other.Exec("PRAGMA busy_timeout = 0").Error; err != nil {
		t.Fatal(err)
	}
	err = gdb.Transaction(func(tx *gorm.DB) error {
		var n int
		if err := tx.Raw("SELECT COUNT(*) FROM t").Row().Scan(&n); err != nil {
			return err
		}
		if err := other.Exec("INSERT INTO t (id) VALUES (3)").Error; err == nil || !strings.Contains(err.Error(), "locked") {
			t.Errorf("a write beside an open transaction: %v, want database is locked", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
