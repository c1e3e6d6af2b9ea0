package migratetest

import (
	"fmt"
	"strings"

	"gorm.io/gorm"
)

func inspectSQLite(gdb *gorm.DB, tables map[string]Table) error {
	var rows []struct{ Name, SQL string }
	err := gdb.Raw(`SELECT name, sql FROM sqlite_master WHERE type = 'table'
		AND name NOT LIKE 'sqlite\_%' ESCAPE '\' AND name <> 'schema_migrations'`).Scan(&rows).Error
	if err != nil {
		return err
	}
	for _, r := range rows {
		t, err := sqliteTable(gdb, r.Name, r.SQL)
		if err != nil {
			return fmt.Errorf("%s: %w", r.Name, err)
		}
		tables[r.Name] = t
	}
	// Foreign keys once every table is read: one written without its columns refers to the
	// parent's primary key.
	for _, r := range rows {
		fks, err := sqliteForeignKeys(gdb, r.Name, tables)
		if err != nil {
			return fmt.Errorf("%s: %w", r.Name, err)
		}
		update(tables, r.Name, func(t *Table) { t.ForeignKeys = fks })
	}
	return nil
}

func sqliteTable(gdb *gorm.DB, name, createSQL string) (Table, error) {
	var t Table
	var err error
	if t.Columns, t.PrimaryKey, err = sqliteColumns(gdb, name, createSQL); err != nil {
		return t, err
	}
	if t.Uniques, err = sqliteUniques(gdb, name); err != nil {
		return t, err
	}
	// SQLite keeps CHECK constraints nowhere but in the CREATE TABLE text.
	t.Checks, err = checksOf(createSQL, 1)
	return t, err
}

func sqliteColumns(gdb *gorm.DB, table, createSQL string) ([]Column, []string, error) {
	var rows []struct {
		Name, Type string
		NotNull    bool
		PK         int
	}
	err := gdb.Raw(`SELECT name, type, "notnull" AS not_null, pk FROM pragma_table_info(?) ORDER BY cid`, table).
		Scan(&rows).Error
	if err != nil {
		return nil, nil, err
	}
	pk := map[int]string{}
	for _, r := range rows {
		if r.PK > 0 {
			pk[r.PK] = r.Name
		}
	}
	withoutRowid := strings.Contains(strings.ToUpper(createSQL), "WITHOUT ROWID")
	cols := make([]Column, len(rows))
	for i, r := range rows {
		typ := strings.ToUpper(r.Type)
		// An INTEGER PRIMARY KEY is the rowid, which cannot be NULL (a NULL inserted there takes the
		// next rowid), and the key of a WITHOUT ROWID table is NOT NULL. Any other primary key
		// column of SQLite admits NULL unless declared NOT NULL.
		rowid := len(pk) == 1 && r.PK == 1 && typ == "INTEGER" && !withoutRowid
		cols[i] = Column{Name: r.Name, Type: typ, NotNull: r.NotNull || rowid || (withoutRowid && r.PK > 0)}
	}
	var key []string
	for i := 1; i <= len(pk); i++ {
		key = append(key, pk[i])
	}
	return cols, key, nil
}

func sqliteUniques(gdb *gorm.DB, table string) ([]string, error) {
	var indexes []struct {
		Name, Origin    string
		Unique, Partial bool
	}
	err := gdb.Raw(`SELECT name, "unique", origin, partial FROM pragma_index_list(?)`, table).Scan(&indexes).Error
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ix := range indexes {
		if !ix.Unique || ix.Origin == "pk" {
			continue
		}
		var cols []*string
		if err := gdb.Raw(`SELECT name FROM pragma_index_info(?) ORDER BY seqno`, ix.Name).Scan(&cols).Error; err != nil {
			return nil, err
		}
		names := make([]string, len(cols))
		for i, c := range cols {
			if c == nil || ix.Partial {
				return nil, fmt.Errorf("unique index %s: partial and expression indexes are not compared", ix.Name)
			}
			names[i] = *c
		}
		out = append(out, strings.Join(names, ", "))
	}
	return out, nil
}

func sqliteForeignKeys(gdb *gorm.DB, table string, tables map[string]Table) ([]string, error) {
	var rows []struct {
		ID                 int
		Ref, From          string
		To                 *string
		OnUpdate, OnDelete string
	}
	err := gdb.Raw(`SELECT id, "table" AS ref, "from", "to", on_update, on_delete
		FROM pragma_foreign_key_list(?) ORDER BY id, seq`, table).Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	var out []string
	for i := 0; i < len(rows); {
		j := i
		var from, to []string
		for ; j < len(rows) && rows[j].ID == rows[i].ID; j++ {
			from = append(from, rows[j].From)
			if rows[j].To != nil {
				to = append(to, *rows[j].To)
			}
		}
		if len(to) == 0 {
			to = tables[rows[i].Ref].PrimaryKey
		}
		out = append(out, foreignKey(from, rows[i].Ref, to, rows[i].OnUpdate, rows[i].OnDelete))
		i = j
	}
	return out, nil
}
