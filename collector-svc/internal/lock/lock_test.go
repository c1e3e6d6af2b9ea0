package lock

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"forumstats.local/shared/reports"
	"forumstats.local/shared/testutil"
)

var pgURL string

func TestMain(m *testing.M) { testutil.Main(m, &pgURL, reports.Migrations) }

// pair returns two locks on the same database, as two processes would hold them.
func pair(t *testing.T, url string) (*Lock, *Lock) {
	t.Helper()
	a, err := New(testutil.OpenDB(t, url), url, 50*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(testutil.OpenDB(t, url), url, 50*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Release(); b.Release() })
	return a, b
}

func TestOneHolder(t *testing.T) {
	for name, url := range map[string]string{
		"postgres": pgURL,
		"sqlite":   "sqlite:" + filepath.Join(t.TempDir(), "stats.db"),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			a, b := pair(t, url)
			if ok, err := a.TryAcquire(ctx); !ok || err != nil {
				t.Fatalf("first: %v %v", ok, err)
			}
			if ok, err := b.TryAcquire(ctx); ok || err != nil {
				t.Fatalf("second took a held lock: %v %v", ok, err)
			}
			if err := a.Check(ctx); err != nil {
				t.Fatal(err)
			}
			if err := b.Check(ctx); !errors.Is(err, ErrLost) {
				t.Fatalf("standby's check: %v", err)
			}
			// The standby blocks in Acquire until the holder lets go.
			acquired := make(chan error, 1)
			go func() { acquired <- b.Acquire(ctx) }()
			select {
			case err := <-acquired:
				t.Fatalf("standby acquired a held lock: %v", err)
			case <-time.After(200 * time.Millisecond):
			}
			a.Release()
			select {
			case err := <-acquired:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("standby did not take over")
			}
			if ok, _ := a.TryAcquire(ctx); ok {
				t.Fatal("the old holder took the lock back while the standby holds it")
			}
		})
	}
}

// TestConnectionLoss: when the holder's session ends (as when its process dies), the lock is
// free for the standby, and the old holder's Check says it lost it.
func TestConnectionLoss(t *testing.T) {
	ctx := context.Background()
	a, b := pair(t, pgURL)
	if ok, err := a.TryAcquire(ctx); !ok || err != nil {
		t.Fatalf("%v %v", ok, err)
	}
	var pid int
	if err := a.conn.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	admin := testutil.OpenDB(t, pgURL)
	if err := admin.Exec("SELECT pg_terminate_backend(?)", pid).Error; err != nil {
		t.Fatal(err)
	}
	if err := a.Check(ctx); !errors.Is(err, ErrLost) {
		t.Fatalf("check after the session ended: %v", err)
	}
	ctx2, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := b.Acquire(ctx2); err != nil {
		t.Fatalf("standby did not take over: %v", err)
	}
	a.Release() // releasing a lost lock is harmless
	if err := b.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestAcquireHonoursContext(t *testing.T) {
	a, b := pair(t, pgURL)
	if ok, _ := a.TryAcquire(context.Background()); !ok {
		t.Fatal("not acquired")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	if err := b.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
}

func TestNewRejectsUnknownSQLitePath(t *testing.T) {
	gdb := testutil.OpenDB(t, "sqlite:"+filepath.Join(t.TempDir(), "x.db"))
	if _, err := New(gdb, "postgres://elsewhere", time.Second, nil); err == nil {
		t.Fatal("accepted a URL that names no SQLite file")
	}
}

// TestShardLocks: each shard's lock is held by one process at a time, apart from the other
// shards' and from the writer lock, on both dialects.
func TestShardLocks(t *testing.T) {
	for name, url := range map[string]string{
		"postgres": pgURL,
		"sqlite":   "sqlite:" + filepath.Join(t.TempDir(), "stats.db"),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			gA, gB := testutil.OpenDB(t, url), testutil.OpenDB(t, url)
			writer, err := New(gA, url, time.Second, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(writer.Release)
			if ok, err := writer.TryAcquire(ctx); !ok || err != nil {
				t.Fatalf("writer: %v %v", ok, err)
			}
			for shard := range 3 {
				a, err := NewShard(gA, url, shard, time.Second, nil)
				if err != nil {
					t.Fatal(err)
				}
				b, err := NewShard(gB, url, shard, time.Second, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { a.Release(); b.Release() })
				if ok, err := a.TryAcquire(ctx); !ok || err != nil {
					t.Fatalf("shard %d, first: %v %v", shard, ok, err)
				}
				if ok, err := b.TryAcquire(ctx); ok || err != nil {
					t.Fatalf("shard %d: a second holder: %v %v", shard, ok, err)
				}
				if err := a.Check(ctx); err != nil {
					t.Fatalf("shard %d: %v", shard, err)
				}
				a.Release()
				if ok, err := b.TryAcquire(ctx); !ok || err != nil {
					t.Fatalf("shard %d after the release: %v %v", shard, ok, err)
				}
			}
		})
	}
}

func TestShardKeys(t *testing.T) {
	seen := map[int64]int{Key: -1}
	for _, shard := range []int{0, 1, 2, 255, MaxShards - 1} {
		k := ShardKey(shard)
		if other, ok := seen[k]; ok {
			t.Fatalf("shard %d has the key of %d", shard, other)
		}
		seen[k] = shard
	}
	if _, err := NewShard(nil, "sqlite:x.db", MaxShards, time.Second, nil); err == nil {
		t.Fatal("accepted a shard out of range")
	}
}

// TestPresence: each process present counts once, and one that leaves is no longer counted.
func TestPresence(t *testing.T) {
	ctx := context.Background()
	url := testutil.NewDatabase(t, reports.Migrations)
	var ps []*Presence
	for i := range 3 {
		p, err := NewPresence(testutil.OpenDB(t, url))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Leave)
		ps = append(ps, p)
		if n, err := p.Replicas(ctx); n != i+1 || err != nil {
			t.Fatalf("with %d present: %d %v", i+1, n, err)
		}
	}
	ps[0].Leave()
	if n, err := ps[1].Replicas(ctx); n != 2 || err != nil {
		t.Fatalf("after one left: %d %v", n, err)
	}
	if p, err := NewPresence(testutil.OpenDB(t, "sqlite:"+filepath.Join(t.TempDir(), "x.db"))); p != nil || err != nil {
		t.Fatalf("SQLite: %v %v", p, err)
	}
}
