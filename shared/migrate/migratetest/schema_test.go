package migratetest_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"gorm.io/gorm"

	"forumstats.local/shared/migrate"
	"forumstats.local/shared/migrate/migratetest"
)

// fixture has each thing Inspect states, written the way each dialect must write it; children is
// the same in both.
var fixture = migrate.Set{Component: "fixture", FS: fstest.MapFS{
	"postgres/0001_fixture.sql": {Data: []byte(`
		CREATE TABLE parents (
			id   BIGINT PRIMARY KEY CHECK (id > 0),
			code TEXT   NOT NULL UNIQUE CHECK (code ~ '^[a-z]+$'),
			at   TIMESTAMPTZ
		);` + fixtureChildren)},
	"sqlite/0001_fixture.sql": {Data: []byte(`
		CREATE TABLE parents (
			id   INTEGER PRIMARY KEY CHECK (id > 0), -- the rowid: never NULL
			code TEXT    NOT NULL UNIQUE CHECK (code NOT GLOB '*[^a-z]*' AND code <> ''),
			at   DATETIME
		);` + fixtureChildren)},
}}

const fixtureChildren = `
	CREATE TABLE children (
		parent_id BIGINT  NOT NULL REFERENCES parents ON DELETE CASCADE,
		name      TEXT    NOT NULL,
		rank      INTEGER NOT NULL DEFAULT 1,
		flag      BOOLEAN,
		PRIMARY KEY (parent_id, name),
		CHECK (rank BETWEEN 1 AND 9 OR flag IS NULL)
	);
	CREATE UNIQUE INDEX children_rank ON children (rank, parent_id);
	CREATE INDEX children_name ON children (name);`

func TestInspectStatesBothDialects(t *testing.T) {
	pg, lite := migratetest.Databases(t, fixture)
	children := func(types ...string) migratetest.Table {
		return migratetest.Table{
			Columns: []migratetest.Column{
				{Name: "parent_id", Type: types[0], NotNull: true},
				{Name: "name", Type: types[1], NotNull: true},
				{Name: "rank", Type: types[2], NotNull: true},
				{Name: "flag", Type: types[3]},
			},
			PrimaryKey:  []string{"parent_id", "name"},
			Uniques:     []string{"rank, parent_id"},
			ForeignKeys: []string{"(parent_id) REFERENCES parents (id) ON UPDATE NO ACTION ON DELETE CASCADE"},
			Checks:      []string{"((rank >= 1) AND (rank <= 9)) OR (flag IS NULL)"},
		}
	}
	parents := func(codeCheck string, types ...string) migratetest.Table {
		return migratetest.Table{
			Columns: []migratetest.Column{
				{Name: "id", Type: types[0], NotNull: true},
				{Name: "code", Type: types[1], NotNull: true},
				{Name: "at", Type: types[2]},
			},
			PrimaryKey: []string{"id"},
			Uniques:    []string{"code"},
			Checks:     []string{codeCheck, "id > 0"},
		}
	}
	for _, c := range []struct {
		name string
		want migratetest.Schema
	}{
		{"postgres", migratetest.Schema{Dialect: "postgres", Tables: map[string]migratetest.Table{
			"parents":  parents("code ~ '^[a-z]+$'", "bigint", "text", "timestamp with time zone"),
			"children": children("bigint", "text", "integer", "boolean"),
		}}},
		{"sqlite", migratetest.Schema{Dialect: "sqlite", Tables: map[string]migratetest.Table{
			"parents":  parents("(NOT (code GLOB '*[^a-z]*')) AND (code <> '')", "INTEGER", "TEXT", "DATETIME"),
			"children": children("BIGINT", "TEXT", "INTEGER", "BOOLEAN"),
		}}},
	} {
		gdb := pg
		if c.name == "sqlite" {
			gdb = lite
		}
		got, err := migratetest.Inspect(context.Background(), gdb)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

func TestInspectRefusesPartialUniqueIndexes(t *testing.T) {
	pg, lite := migratetest.Databases(t, fixture)
	for name, gdb := range map[string]*gorm.DB{"postgres": pg, "sqlite": lite} {
		if err := gdb.Exec(`CREATE UNIQUE INDEX children_flagged ON children (name) WHERE flag`).Error; err != nil {
			t.Fatal(err)
		}
		_, err := migratetest.Inspect(context.Background(), gdb)
		if err == nil || !strings.Contains(err.Error(), "children_flagged") {
			t.Errorf("%s: Inspect = %v, want a refusal naming children_flagged", name, err)
		}
	}
}
