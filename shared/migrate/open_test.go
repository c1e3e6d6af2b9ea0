package migrate_test

import (
	"context"
	"path/filepath"
	"testing"
	"testing/fstest"

	sdb "forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
)

// fixture is one table, written for each dialect.
var fixture = migrate.Set{Component: "fixture", FS: fstest.MapFS{
	"postgres/0001_fixture.sql": {Data: []byte(`CREATE TABLE parents (id BIGINT PRIMARY KEY);`)},
	"sqlite/0001_fixture.sql":   {Data: []byte(`CREATE TABLE parents (id INTEGER PRIMARY KEY);`)},
}}

// Apply leaves the schema up to date, and applying again changes nothing.
func TestApplyMigratesAndCloses(t *testing.T) {
	ctx := context.Background()
	url := "sqlite:" + filepath.Join(t.TempDir(), "apply.db")
	for range 2 {
		if err := migrate.Apply(ctx, url, nil, fixture); err != nil {
			t.Fatal(err)
		}
	}
	gdb, err := migrate.Open(ctx, url, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close(gdb)
	var n int64
	if err := gdb.Raw("SELECT count(*) FROM parents").Scan(&n).Error; err != nil {
		t.Fatalf("the fixture's table after Apply: %v", err)
	}
	pending, err := migrate.Up(ctx, gdb, fixture)
	if err != nil || len(pending) != 0 {
		t.Fatalf("migrations left after Apply: %v %v", pending, err)
	}
}

func TestApplyReportsAFailedOpen(t *testing.T) {
	if err := migrate.Apply(context.Background(), "nosuchscheme://x", nil, fixture); err == nil {
		t.Fatal("Apply on an unusable URL succeeded")
	}
}
