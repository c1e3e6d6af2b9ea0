package db

import "gorm.io/gorm"

// Dialect says what the open database can do. It is resolved once, where a store or a lock is
// built over a connection pool, so that no query asks which database it runs on.
type Dialect struct {
	// Name is the GORM dialector's name: "postgres" or "sqlite". It also names the directory of a
	// migration set's files for this database.
	Name string
	// SnapshotReads: read-only REPEATABLE READ transactions give a consistent view without
	// blocking writers. SQLite has one writer and serialises readers behind it instead.
	SnapshotReads bool
	// ExportSnapshot: pg_export_snapshot lets a second connection read the same snapshot.
	ExportSnapshot bool
	// AdvisoryLocks: session and transaction advisory locks (pg_advisory_lock and friends).
	AdvisoryLocks bool
	// NativeConn: the pool's connections are pgx connections, reachable through database/sql's
	// Conn.Raw, so a hot path may use pgx's own encoding and pipelines.
	NativeConn bool
	// ByteOrderCollation is the COLLATE clause that makes text comparisons byte order on this
	// database ("" where byte order is already the default).
	ByteOrderCollation string
}

// Postgres and SQLite are the two databases a service runs on.
var (
	Postgres = Dialect{
		Name:               "postgres",
		SnapshotReads:      true,
		ExportSnapshot:     true,
		AdvisoryLocks:      true,
		NativeConn:         true,
		ByteOrderCollation: ` COLLATE "C"`,
	}
	SQLite = Dialect{Name: "sqlite"}
)

// DialectOf resolves the dialect of a database opened by Open.
func DialectOf(gdb *gorm.DB) Dialect {
	if gdb.Dialector.Name() == Postgres.Name {
		return Postgres
	}
	return SQLite
}
