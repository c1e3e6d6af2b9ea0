package db

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
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
