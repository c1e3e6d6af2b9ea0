package db

import (
	"context"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"gorm.io/gorm"
)

// dialects opens a PostgreSQL handle that never connects (Statement runs nothing) and a SQLite
// file.
func dialects(t testing.TB) (pg, lite *gorm.DB) {
	t.Helper()
	pg, err := open(context.Background(), "postgres://nobody@127.0.0.1:1/none?sslmode=disable", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Close(pg) })
	lite, err = open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "s.db"), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Close(lite) })
	return pg, lite
}

func TestStatement(t *testing.T) {
	pg, lite := dialects(t)
	for _, c := range []struct {
		q          string
		args       []any
		pg, sqlite string
		vars       []any
	}{
		{"SELECT 1", nil, "SELECT 1", "SELECT 1", []any{}},
		{"day BETWEEN ? AND ? AND guild_id = ?", []any{"a", "b", "c"},
			"day BETWEEN $1 AND $2 AND guild_id = $3", "day BETWEEN ? AND ? AND guild_id = ?", []any{"a", "b", "c"}},
		{"a = ? AND b IN ?", []any{int64(1), []int64{2, 3}},
			"a = $1 AND b IN ($2,$3)", "a = ? AND b IN (?,?)", []any{int64(1), int64(2), int64(3)}},
	} {
		for name, want := range map[string]struct {
			gdb *gorm.DB
			sql string
		}{"postgres": {pg, c.pg}, "sqlite": {lite, c.sqlite}} {
			got, vars, err := Statement(want.gdb, c.q, c.args...)
			if err != nil || got != want.sql || !reflect.DeepEqual(vars, c.vars) {
				t.Errorf("%s: Statement(%q, %v) = %q, %v, %v; want %q, %v", name, c.q, c.args, got, vars, err, want.sql, c.vars)
			}
		}
	}
	// The handle's own chain does not leak into the statement.
	got, _, err := Statement(pg.Table("users").Where("id = ?", 9), "SELECT ?", 1)
	if err != nil || got != "SELECT $1" {
		t.Errorf("Statement on a chained handle: %q, %v", got, err)
	}
}

// Every ? of a statement becomes PostgreSQL's next $n and its argument the next variable,
// whatever text is around it.
func FuzzStatement(f *testing.F) {
	pg, _ := dialects(f)
	f.Add("SELECT a FROM t WHERE a = ? AND b = ?")
	f.Add("?")
	f.Add("(?, ?) 'x' \"y\"")
	f.Fuzz(func(t *testing.T, q string) {
		if strings.ContainsAny(q, "@$") { // @ names a parameter; $ would make the check ambiguous
			return
		}
		parts := strings.Split(q, "?")
		args := make([]any, len(parts)-1)
		var want strings.Builder
		want.WriteString(parts[0])
		for i := range args {
			args[i] = int64(i * 7)
			want.WriteString("$" + strconv.Itoa(i+1) + parts[i+1])
		}
		got, vars, err := Statement(pg, q, args...)
		if err != nil || got != want.String() || len(vars) != len(args) || (len(args) > 0 && !reflect.DeepEqual(vars, args)) {
			t.Fatalf("Statement(%q) = %q, %v, %v; want %q, %v", q, got, vars, err, want.String(), args)
		}
	})
}
