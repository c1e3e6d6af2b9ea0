package migratetest

import (
	"slices"
	"testing"
)

// reportsLike is one table as each dialect states it when the trees agree.
func reportsLike() (Schema, Schema) {
	table := func(types [3]string, dayCheck string) map[string]Table {
		return map[string]Table{"r": {
			Columns: []Column{
				{Name: "id", Type: types[0], NotNull: true},
				{Name: "day", Type: types[1], NotNull: true},
				{Name: "at", Type: types[2]},
			},
			PrimaryKey:  []string{"id"},
			Uniques:     []string{"day, at"},
			ForeignKeys: []string{"(id) REFERENCES p (id) ON UPDATE NO ACTION ON DELETE CASCADE"},
			Checks:      []string{dayCheck, "id > 0"},
		}}
	}
	return Schema{Dialect: "postgres", Tables: table([3]string{"bigint", "text", "timestamp with time zone"}, "day ~ '^[0-9]$'")},
		Schema{Dialect: "sqlite", Tables: table([3]string{"INTEGER", "TEXT", "DATETIME"}, "day GLOB '[0-9]'")}
}

var dayGlob = Equivalents{`(day ~ '^[0-9]$'::text)`: `day GLOB '[0-9]'`}

func TestCompareFindsNothingBetweenEquivalentSchemas(t *testing.T) {
	pg, lite := reportsLike()
	if diffs := Compare(pg, lite, dayGlob); diffs != nil {
		t.Fatalf("differences: %q", diffs)
	}
}

func TestCompareReportsEveryDifference(t *testing.T) {
	for _, c := range []struct {
		name  string
		drift func(pg, lite *Table)
		eq    Equivalents
		want  []string
	}{
		{"check without equivalence", func(pg, lite *Table) {}, Equivalents{}, []string{
			"r: CHECK day GLOB '[0-9]' only in sqlite", "r: CHECK day ~ '^[0-9]$' only in postgres"}},
		{"unused equivalence", func(pg, lite *Table) {}, Equivalents{"day ~ '^[0-9]$'": "day GLOB '[0-9]'", "a": "b"},
			[]string{"equivalence for CHECK (a): no such postgres check"}},
		{"unreadable equivalence", func(pg, lite *Table) {}, Equivalents{"day ~ '^[0-9]$'": "day GLOB '[0-9]'", "(": "b"},
			[]string{`equivalence "(" = "b" does not parse: unexpected "end of expression"`}},
		{"weakened check", func(pg, lite *Table) { lite.Checks = []string{"day GLOB '[0-9]'", "id >= 0"} }, dayGlob,
			[]string{"r: CHECK id > 0 only in postgres", "r: CHECK id >= 0 only in sqlite"}},
		{"missing column", func(pg, lite *Table) { lite.Columns = lite.Columns[:2] }, dayGlob,
			[]string{"r: column at only in postgres"}},
		{"extra column", func(pg, lite *Table) { lite.Columns = append(lite.Columns, Column{Name: "x", Type: "TEXT"}) }, dayGlob,
			[]string{"r: column x only in sqlite"}},
		{"column order", func(pg, lite *Table) { lite.Columns[0], lite.Columns[1] = lite.Columns[1], lite.Columns[0] }, dayGlob,
			[]string{"r: column order (id, day, at) in postgres, (day, id, at) in sqlite"}},
		{"unmapped type", func(pg, lite *Table) { pg.Columns[2].Type = "jsonb" }, dayGlob,
			[]string{`r: column at: postgres type "jsonb" has no SQLite mapping`}},
		{"wrong type", func(pg, lite *Table) { lite.Columns[1].Type = "INTEGER" }, dayGlob,
			[]string{"r: column day: postgres text is INTEGER in sqlite, want one of TEXT"}},
		{"nullability", func(pg, lite *Table) { lite.Columns[1].NotNull = false }, dayGlob,
			[]string{"r: column day: NOT NULL true in postgres, false in sqlite"}},
		{"primary key", func(pg, lite *Table) { lite.PrimaryKey = []string{"id", "day"} }, dayGlob,
			[]string{"r: primary key (id) in postgres, (id, day) in sqlite"}},
		{"unique key", func(pg, lite *Table) { lite.Uniques = nil }, dayGlob,
			[]string{"r: unique day, at only in postgres"}},
		{"foreign key action", func(pg, lite *Table) {
			lite.ForeignKeys = []string{"(id) REFERENCES p (id) ON UPDATE NO ACTION ON DELETE NO ACTION"}
		}, dayGlob, []string{
			"r: foreign key (id) REFERENCES p (id) ON UPDATE NO ACTION ON DELETE CASCADE only in postgres",
			"r: foreign key (id) REFERENCES p (id) ON UPDATE NO ACTION ON DELETE NO ACTION only in sqlite"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			pg, lite := reportsLike()
			p, l := pg.Tables["r"], lite.Tables["r"]
			c.drift(&p, &l)
			pg.Tables["r"], lite.Tables["r"] = p, l
			if got := Compare(pg, lite, c.eq); !slices.Equal(got, c.want) {
				t.Errorf("Compare:\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestCompareReportsTablesOnOneSide(t *testing.T) {
	pg, lite := reportsLike()
	pg.Tables["only_pg"] = Table{}
	lite.Tables["only_lite"] = Table{}
	want := []string{"only_lite: table only in sqlite", "only_pg: table only in postgres"}
	if got := Compare(pg, lite, dayGlob); !slices.Equal(got, want) {
		t.Errorf("Compare = %q, want %q", got, want)
	}
}
