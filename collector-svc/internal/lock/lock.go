// Package lock makes one collector per deployment the writer, and one replica the holder of each
// gateway shard (NewShard: a lock of the same kind per shard); Presence lets the replicas count
// one another, to share the shards. On PostgreSQL it is a session
// advisory lock held on a dedicated connection: it is released when the holder releases it,
// or when its connection ends (the process died), so that a standby takes over. SQLite has no
// advisory locks; there the lock is an exclusive lock on a file beside the database (on Unix;
// elsewhere run one collector per database).
package lock

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"gorm.io/gorm"

	"forumstats.local/shared/db"
)

// Key names the collector's lock among the advisory locks of the database ("COLLECTR"); the
// migrator uses another key.
const Key int64 = 0x434f4c4c45435452

// shardNamespace is the high six bytes of every shard lock's key ("COLLSH"), the low two the shard
// id: a fixed namespace apart from Key and the migrator's key, and room for 65,536 shards.
const shardNamespace int64 = 0x434f4c4c5348 << 16

// MaxShards is the number of shards ShardKey can name.
const MaxShards = 1 << 16

// ShardKey is the advisory lock key of a gateway shard: whoever holds it counts that shard live.
func ShardKey(shard int) int64 { return shardNamespace | int64(shard&(MaxShards-1)) }

// ErrLost means the lock is no longer held: its connection broke.
var ErrLost = errors.New("collector lock lost")

// Lock is the writer lock of one process. It is not safe for concurrent use.
type Lock struct {
	key   int64   // the advisory lock key
	sqlDB *sql.DB // PostgreSQL
	path  string  // SQLite: the lock file
	retry time.Duration
	log   *slog.Logger

	conn *sql.Conn // held PostgreSQL lock
	file *os.File  // held file lock
}

// New returns the lock for the database gdb was opened on (databaseURL is its URL, for the
// SQLite file path). retry is the pause between attempts of a standby.
func New(gdb *gorm.DB, databaseURL string, retry time.Duration, log *slog.Logger) (*Lock, error) {
	return newLock(gdb, databaseURL, Key, ".collector.lock", retry, log)
}

// NewShard returns the lock of one gateway shard (ShardKey) on the database gdb was opened on: on
// SQLite a file of its own beside the database, so that one process alone holds every shard.
func NewShard(gdb *gorm.DB, databaseURL string, shard int, retry time.Duration, log *slog.Logger) (*Lock, error) {
	if shard < 0 || shard >= MaxShards {
		return nil, fmt.Errorf("lock: shard %d is not in 0..%d", shard, MaxShards-1)
	}
	return newLock(gdb, databaseURL, ShardKey(shard), fmt.Sprintf(".collector.shard-%d.lock", shard), retry, log)
}

func newLock(gdb *gorm.DB, databaseURL string, key int64, suffix string, retry time.Duration, log *slog.Logger) (*Lock, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if retry <= 0 {
		retry = 5 * time.Second
	}
	l := &Lock{key: key, retry: retry, log: log}
	if db.DialectOf(gdb).AdvisoryLocks {
		sqlDB, err := gdb.DB()
		if err != nil {
			return nil, err
		}
		l.sqlDB = sqlDB
		return l, nil
	}
	path := strings.TrimPrefix(strings.TrimPrefix(databaseURL, "sqlite:"), "//")
	if path == "" || path == databaseURL {
		return nil, fmt.Errorf("lock: cannot tell the database file of %q", databaseURL)
	}
	l.path = path + suffix
	return l, nil
}

// Acquire blocks until the lock is held or ctx ends, trying every retry interval. Failures to
// reach the database are logged and retried: a standby must outlive a database restart.
func (l *Lock) Acquire(ctx context.Context) error {
	waiting := false
	for {
		ok, err := l.TryAcquire(ctx)
		if ok {
			if waiting {
				l.log.Info("collector lock acquired: this process now collects")
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch {
		case err != nil:
			l.log.Warn("cannot try the collector lock", "err", err)
		case !waiting:
			l.log.Info("another collector holds the lock: waiting as standby", "retry", l.retry.String())
		}
		waiting = true
		t := time.NewTimer(l.retry)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// TryAcquire takes the lock if it is free.
func (l *Lock) TryAcquire(ctx context.Context) (bool, error) {
	if l.conn != nil || l.file != nil {
		return true, nil
	}
	if l.sqlDB == nil {
		f, ok, err := lockFile(l.path)
		if ok {
			l.file = f
		}
		return ok, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := l.sqlDB.Conn(ctx)
	if err != nil {
		return false, err
	}
	var ok bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1)", l.key).Scan(&ok); err != nil {
		discard(conn)
		return false, err
	}
	if !ok {
		conn.Close() // holds nothing: back to the pool
		return false, nil
	}
	l.conn = conn
	return true, nil
}

// Check verifies that the lock is still held; the holder calls it before every pass and stops
// writing when it fails.
func (l *Lock) Check(ctx context.Context) error {
	switch {
	case l.file != nil:
		return nil
	case l.conn == nil:
		return ErrLost
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var held bool
	// A bigint advisory key shows in pg_locks as classid (high half), objid (low half), objsubid 1.
	err := l.conn.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'
AND pid = pg_backend_pid() AND granted AND classid::bigint = $1 AND objid::bigint = $2 AND objsubid = 1)`,
		int64(uint64(l.key)>>32), int64(uint64(l.key)&0xffffffff)).Scan(&held)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrLost, err)
	}
	if !held {
		return ErrLost
	}
	return nil
}

// Release gives the lock up. The PostgreSQL connection is closed rather than returned to the
// pool, so that a lock it might still hold can never outlive the release in a pooled session.
func (l *Lock) Release() {
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, _ = l.conn.ExecContext(ctx, "SELECT pg_advisory_unlock($1)", l.key)
		cancel()
		discard(l.conn)
		l.conn = nil
	}
	if l.file != nil {
		unlockFile(l.file)
		l.file = nil
	}
}

// discard closes the connection for good instead of returning it to the pool.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}
