package migratetest

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"gorm.io/gorm"

	sdb "forumstats.local/shared/db"
)

// Schema is what a migration tree built, stated in terms both databases can show, so that the
// PostgreSQL and SQLite trees of a component can be compared (see Compare).
type Schema struct {
	Dialect string
	Tables  map[string]Table
}

// Table is one table of a Schema. Key and constraint lists are sorted; names of constraints and
// indexes are left out, since each database names its implicit ones its own way.
type Table struct {
	Columns    []Column
	PrimaryKey []string
	// Uniques are the column lists of unique constraints and unique indexes, "a, b".
	Uniques []string
	// ForeignKeys read "(a, b) REFERENCES t (a, b) ON UPDATE NO ACTION ON DELETE CASCADE".
	ForeignKeys []string
	// Checks are the CHECK constraints in CanonicalCheck form.
	Checks []string
}

// Column is a column as its database declares it.
type Column struct {
	Name string
	// Type is PostgreSQL's format_type ("bigint", "timestamp with time zone") or SQLite's declared
	// type in upper case ("BIGINT", "DATETIME").
	Type    string
	NotNull bool
}

// Inspect reads the schema of the tables in gdb's database (PostgreSQL: the current schema),
// leaving out the runner's own schema_migrations. It fails on what it cannot state comparably:
// partial and expression unique indexes, and CHECK text it cannot parse.
func Inspect(ctx context.Context, gdb *gorm.DB) (Schema, error) {
	gdb = gdb.WithContext(ctx)
	dialect := sdb.DialectOf(gdb)
	s := Schema{Dialect: dialect.Name, Tables: map[string]Table{}}
	var err error
	if dialect == sdb.Postgres {
		err = inspectPostgres(gdb, s.Tables)
	} else {
		err = inspectSQLite(gdb, s.Tables)
	}
	if err != nil {
		return Schema{}, fmt.Errorf("inspect %s schema: %w", dialect.Name, err)
	}
	for name, t := range s.Tables {
		sort.Strings(t.Uniques)
		sort.Strings(t.ForeignKeys)
		sort.Strings(t.Checks)
		s.Tables[name] = t
	}
	return s, nil
}

func foreignKey(cols []string, ref string, refCols []string, onUpdate, onDelete string) string {
	return fmt.Sprintf("(%s) REFERENCES %s (%s) ON UPDATE %s ON DELETE %s",
		strings.Join(cols, ", "), ref, strings.Join(refCols, ", "), onUpdate, onDelete)
}

// update applies f to the table name of tables.
func update(tables map[string]Table, name string, f func(*Table)) {
	t := tables[name]
	f(&t)
	tables[name] = t
}
