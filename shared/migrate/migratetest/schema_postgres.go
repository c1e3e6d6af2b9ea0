package migratetest

import (
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// inCurrentSchema restricts pg_class c to the ordinary tables of the current schema.
const inCurrentSchema = `c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
	AND c.relname <> 'schema_migrations'`

// columnNames lists the names of attribute numbers nums (an int2 array) of relation rel in order,
// comma-separated; limit keeps the first limit of them (an index's key columns).
func columnNames(nums, rel, limit string) string {
	return `array_to_string(ARRAY(SELECT a.attname FROM unnest(` + nums + `::int2[]) WITH ORDINALITY u(num, ord)
		JOIN pg_attribute a ON a.attrelid = ` + rel + ` AND a.attnum = u.num
		WHERE u.ord <= ` + limit + ` ORDER BY u.ord), ',')`
}

func inspectPostgres(gdb *gorm.DB, tables map[string]Table) error {
	var names []string
	if err := gdb.Raw(`SELECT c.relname FROM pg_class c WHERE ` + inCurrentSchema).Scan(&names).Error; err != nil {
		return err
	}
	for _, n := range names {
		tables[n] = Table{}
	}
	for _, step := range []func(*gorm.DB, map[string]Table) error{
		pgColumns, pgUniqueIndexes, pgChecks, pgForeignKeys,
	} {
		if err := step(gdb, tables); err != nil {
			return err
		}
	}
	return nil
}

func pgColumns(gdb *gorm.DB, tables map[string]Table) error {
	var rows []struct {
		Table, Name, Type string
		NotNull           bool
	}
	err := gdb.Raw(`SELECT c.relname AS "table", a.attname AS name,
			format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS not_null
		FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
		WHERE ` + inCurrentSchema + ` AND a.attnum > 0 AND NOT a.attisdropped
		ORDER BY c.relname, a.attnum`).Scan(&rows).Error
	for _, r := range rows {
		update(tables, r.Table, func(t *Table) {
			t.Columns = append(t.Columns, Column{Name: r.Name, Type: r.Type, NotNull: r.NotNull})
		})
	}
	return err
}

// pgUniqueIndexes reads the primary key and the unique keys, through the indexes behind them.
func pgUniqueIndexes(gdb *gorm.DB, tables map[string]Table) error {
	var rows []struct {
		Table, Index, Columns         string
		Primary, Partial, Expressions bool
	}
	err := gdb.Raw(`SELECT c.relname AS "table", ic.relname AS index, i.indisprimary AS primary,
			i.indpred IS NOT NULL AS partial, i.indexprs IS NOT NULL AS expressions,
			` + columnNames("i.indkey", "c.oid", "i.indnkeyatts") + ` AS columns
		FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_class ic ON ic.oid = i.indexrelid
		WHERE ` + inCurrentSchema + ` AND i.indisunique`).Scan(&rows).Error
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r.Partial || r.Expressions {
			return fmt.Errorf("unique index %s: partial and expression indexes are not compared", r.Index)
		}
		cols := strings.Split(r.Columns, ",")
		update(tables, r.Table, func(t *Table) {
			if r.Primary {
				t.PrimaryKey = cols
			} else {
				t.Uniques = append(t.Uniques, strings.Join(cols, ", "))
			}
		})
	}
	return nil
}

func pgChecks(gdb *gorm.DB, tables map[string]Table) error {
	var rows []struct{ Table, Name, Def string }
	err := gdb.Raw(`SELECT c.relname AS "table", k.conname AS name, pg_get_constraintdef(k.oid) AS def
		FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
		WHERE ` + inCurrentSchema + ` AND k.contype = 'c'`).Scan(&rows).Error
	if err != nil {
		return err
	}
	for _, r := range rows {
		checks, err := checksOf(r.Def, 0)
		if err == nil && len(checks) != 1 {
			err = fmt.Errorf("%d CHECKs", len(checks))
		}
		if err != nil {
			return fmt.Errorf("%s.%s: %q: %w", r.Table, r.Name, r.Def, err)
		}
		update(tables, r.Table, func(t *Table) { t.Checks = append(t.Checks, checks[0]) })
	}
	return nil
}

// pgActions names pg_constraint's confupdtype/confdeltype codes as SQLite's foreign_key_list does.
var pgActions = map[string]string{"a": "NO ACTION", "r": "RESTRICT", "c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT"}

func pgForeignKeys(gdb *gorm.DB, tables map[string]Table) error {
	var rows []struct{ Table, Ref, Columns, RefColumns, OnUpdate, OnDelete string }
	err := gdb.Raw(`SELECT c.relname AS "table", f.relname AS ref,
			` + columnNames("k.conkey", "k.conrelid", "32767") + ` AS columns,
			` + columnNames("k.confkey", "k.confrelid", "32767") + ` AS ref_columns,
			k.confupdtype::text AS on_update, k.confdeltype::text AS on_delete
		FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class f ON f.oid = k.confrelid
		WHERE ` + inCurrentSchema + ` AND k.contype = 'f'`).Scan(&rows).Error
	for _, r := range rows {
		fk := foreignKey(strings.Split(r.Columns, ","), r.Ref, strings.Split(r.RefColumns, ","),
			pgActions[r.OnUpdate], pgActions[r.OnDelete])
		update(tables, r.Table, func(t *Table) { t.ForeignKeys = append(t.ForeignKeys, fk) })
	}
	return err
}
