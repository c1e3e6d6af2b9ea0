package db

import "gorm.io/gorm"

// Statement renders q, written with GORM's ? placeholders like every statement of a service,
// and args as GORM would send them to gdb's database: on PostgreSQL the placeholders become $1,
// $2, ... and a slice argument (IN ?) expands into one placeholder per element. It runs nothing.
// It is for a hot path that runs a statement on pgx itself, so that such a path keeps the one
// placeholder style and GORM's rules for arguments instead of a rewriter of its own.
func Statement(gdb *gorm.DB, q string, args ...any) (string, []any, error) {
	stmt := gdb.Session(&gorm.Session{DryRun: true, NewDB: true}).Raw(q, args...)
	if stmt.Error != nil {
		return "", nil, stmt.Error
	}
	return stmt.Statement.SQL.String(), stmt.Statement.Vars, nil
}
