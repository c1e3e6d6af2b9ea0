package lock

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"gorm.io/gorm"

	"forumstats.local/shared/db"
)

// PresenceKey names the shared advisory lock every replica counting live holds ("COLLPRES"), so
// that each can count the replicas and take its share of the gateway shards.
const PresenceKey int64 = 0x434f4c4c50524553

// Presence is this process's mark among the replicas: a shared advisory lock on a dedicated
// connection, which ends with the process's database session. It is not safe for concurrent use.
type Presence struct {
	sqlDB *sql.DB
	conn  *sql.Conn
}

// NewPresence returns the presence of this process on the database gdb was opened on; nil on
// SQLite, where one process holds every shard.
func NewPresence(gdb *gorm.DB) (*Presence, error) {
	if !db.DialectOf(gdb).AdvisoryLocks {
		return nil, nil
	}
	sqlDB, err := gdb.DB()
	if err != nil {
		return nil, err
	}
	return &Presence{sqlDB: sqlDB}, nil
}

// Replicas marks this process present (again, after its connection broke) and counts the
// processes present, itself included.
func (p *Presence) Replicas(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if p.conn != nil {
		if err := p.conn.PingContext(ctx); err != nil {
			discard(p.conn)
			p.conn = nil
		}
	}
	if p.conn == nil {
		conn, err := p.sqlDB.Conn(ctx)
		if err != nil {
			return 0, err
		}
		var ok bool
		if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock_shared($1)", PresenceKey).Scan(&ok); err != nil || !ok {
			discard(conn)
			return 0, fmt.Errorf("presence among the collector replicas: %v (taken %v)", err, ok)
		}
		p.conn = conn
	}
	var n int
	// pg_locks shows the whole cluster: only this database's replicas count.
	err := p.conn.QueryRowContext(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
AND classid::bigint = $1 AND objid::bigint = $2 AND objsubid = 1`,
		int64(uint64(PresenceKey)>>32), int64(uint64(PresenceKey)&0xffffffff)).Scan(&n)
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Leave ends the presence: unlocked first, since the server may notice a closed connection late.
func (p *Presence) Leave() {
	if p != nil && p.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, _ = p.conn.ExecContext(ctx, "SELECT pg_advisory_unlock_shared($1)", PresenceKey)
		cancel()
		discard(p.conn)
		p.conn = nil
	}
}
