package migratetest

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// sqliteTypes maps each PostgreSQL column type the trees use to the SQLite declared types that
// stand for it. A PostgreSQL type missing here fails the comparison: add it with the reason.
var sqliteTypes = map[string][]string{
	// SQLite stores every integer in up to 8 bytes; INTEGER is required where the column is the
	// rowid (INTEGER PRIMARY KEY), BIGINT says the width elsewhere.
	"bigint": {"BIGINT", "INTEGER"},
	// SQLite has no 4-byte integer: an integer column there also takes values beyond 2^31.
	"integer": {"INTEGER"},
	"text":    {"TEXT"},
	// Stored as 0/1 with NUMERIC affinity.
	"boolean": {"BOOLEAN"},
	// The driver stores a time as text in UTC; the instant is the same.
	"timestamp with time zone": {"DATETIME"},
	// SQLite does not enforce a length; the only such column holds a SHA-256 digest in hex,
	// always 64 characters, computed by the service.
	"character(64)": {"TEXT"},
	// Bytes as stored: SQLite's BLOB keeps them unchanged.
	"bytea": {"BLOB"},
}

// Equivalents pairs a PostgreSQL CHECK with the SQLite CHECK that enforces the same rule where
// the two dialects cannot share one spelling (a regular expression against GLOB). Either side may
// be written as its database shows it; Compare canonicalises both with CanonicalCheck.
type Equivalents map[string]string

// Compare lists the differences between the PostgreSQL and the SQLite schema of one component:
// tables, columns in order, types (through sqliteTypes), nullability, primary, unique and foreign
// keys, and CHECK constraints (through eq). Every entry of eq must be used. No difference: nil.
func Compare(pg, lite Schema, eq Equivalents) []string {
	equivalent, diffs := canonicalEquivalents(eq)
	used := map[string]bool{}
	for _, name := range tableNames(pg, lite) {
		p, inPG := pg.Tables[name]
		l, inLite := lite.Tables[name]
		switch {
		case !inLite:
			diffs = append(diffs, name+": table only in postgres")
		case !inPG:
			diffs = append(diffs, name+": table only in sqlite")
		default:
			for _, d := range compareTable(p, l, equivalent, used) {
				diffs = append(diffs, name+": "+d)
			}
		}
	}
	for pgCheck := range equivalent {
		if !used[pgCheck] {
			diffs = append(diffs, fmt.Sprintf("equivalence for CHECK (%s): no such postgres check", pgCheck))
		}
	}
	sort.Strings(diffs)
	return diffs
}

func canonicalEquivalents(eq Equivalents) (map[string]string, []string) {
	out := make(map[string]string, len(eq))
	var diffs []string
	for pg, lite := range eq {
		cp, err1 := CanonicalCheck(pg)
		cl, err2 := CanonicalCheck(lite)
		if err1 != nil || err2 != nil {
			diffs = append(diffs, fmt.Sprintf("equivalence %q = %q does not parse: %v", pg, lite, errors.Join(err1, err2)))
			continue
		}
		out[cp] = cl
	}
	return out, diffs
}

func tableNames(schemas ...Schema) []string {
	seen := map[string]bool{}
	var names []string
	for _, s := range schemas {
		for n := range s.Tables {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	sort.Strings(names)
	return names
}

func compareTable(pg, lite Table, equivalent map[string]string, used map[string]bool) []string {
	diffs := compareColumns(pg.Columns, lite.Columns)
	if !slices.Equal(pg.PrimaryKey, lite.PrimaryKey) {
		diffs = append(diffs, fmt.Sprintf("primary key (%s) in postgres, (%s) in sqlite",
			strings.Join(pg.PrimaryKey, ", "), strings.Join(lite.PrimaryKey, ", ")))
	}
	diffs = append(diffs, compareSets("unique", pg.Uniques, lite.Uniques)...)
	diffs = append(diffs, compareSets("foreign key", pg.ForeignKeys, lite.ForeignKeys)...)
	want := make([]string, len(pg.Checks))
	for i, c := range pg.Checks {
		want[i] = c
		if lc, ok := equivalent[c]; ok {
			want[i], used[c] = lc, true
		}
	}
	sort.Strings(want)
	return append(diffs, compareSets("CHECK", want, lite.Checks)...)
}

func compareColumns(pg, lite []Column) []string {
	var diffs []string
	byName := map[string]Column{}
	for _, c := range lite {
		byName[c.Name] = c
	}
	var pgOrder, liteOrder []string
	for _, p := range pg {
		l, ok := byName[p.Name]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("column %s only in postgres", p.Name))
			continue
		}
		delete(byName, p.Name)
		pgOrder = append(pgOrder, p.Name)
		diffs = append(diffs, compareColumn(p, l)...)
	}
	for _, l := range lite {
		if _, only := byName[l.Name]; only {
			diffs = append(diffs, fmt.Sprintf("column %s only in sqlite", l.Name))
		} else {
			liteOrder = append(liteOrder, l.Name)
		}
	}
	if !slices.Equal(pgOrder, liteOrder) {
		diffs = append(diffs, fmt.Sprintf("column order (%s) in postgres, (%s) in sqlite",
			strings.Join(pgOrder, ", "), strings.Join(liteOrder, ", ")))
	}
	return diffs
}

func compareColumn(pg, lite Column) []string {
	var diffs []string
	if allowed, ok := sqliteTypes[pg.Type]; !ok {
		diffs = append(diffs, fmt.Sprintf("column %s: postgres type %q has no SQLite mapping", pg.Name, pg.Type))
	} else if !slices.Contains(allowed, lite.Type) {
		diffs = append(diffs, fmt.Sprintf("column %s: postgres %s is %s in sqlite, want one of %s",
			pg.Name, pg.Type, lite.Type, strings.Join(allowed, ", ")))
	}
	if pg.NotNull != lite.NotNull {
		diffs = append(diffs, fmt.Sprintf("column %s: NOT NULL %t in postgres, %t in sqlite", pg.Name, pg.NotNull, lite.NotNull))
	}
	return diffs
}

// compareSets reports the members of two sorted lists (duplicates counted) found on one side only.
func compareSets(what string, pg, lite []string) []string {
	var diffs []string
	i, j := 0, 0
	for i < len(pg) || j < len(lite) {
		switch {
		case j == len(lite) || (i < len(pg) && pg[i] < lite[j]):
			diffs = append(diffs, fmt.Sprintf("%s %s only in postgres", what, pg[i]))
			i++
		case i == len(pg) || lite[j] < pg[i]:
			diffs = append(diffs, fmt.Sprintf("%s %s only in sqlite", what, lite[j]))
			j++
		default:
			i, j = i+1, j+1
		}
	}
	return diffs
}
