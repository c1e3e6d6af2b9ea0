package livegw

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"forumstats.local/collector-svc/internal/fakediscord"
	"forumstats.local/collector-svc/internal/lock"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/reports"
	"forumstats.local/shared/testutil"
)

func TestMain(m *testing.M) { testutil.Run(m) }

const numShards = 4

// holders records which replica holds each shard, as the replicas' locks say.
type holders struct {
	mu       sync.Mutex
	by       map[int]string
	released map[string]int // shards let go, by replica
}

func (h *holders) releases(replica string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.released[replica]
}

func (h *holders) snapshot() map[int]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[int]string{}
	for k, v := range h.by {
		out[k] = v
	}
	return out
}

// recordingLock is a shard lock that tells holders when its replica takes and lets go of it.
type recordingLock struct {
	*lock.Lock
	h       *holders
	replica string
	shard   int
}

func (l *recordingLock) TryAcquire(ctx context.Context) (bool, error) {
	ok, err := l.Lock.TryAcquire(ctx)
	if ok {
		l.h.mu.Lock()
		l.h.by[l.shard] = l.replica
		l.h.mu.Unlock()
	}
	return ok, err
}

func (l *recordingLock) Release() {
	l.Lock.Release()
	l.h.mu.Lock()
	if l.h.by[l.shard] == l.replica {
		delete(l.h.by, l.shard)
		l.h.released[l.replica]++
	}
	l.h.mu.Unlock()
}

type rig struct {
	t     *testing.T
	url   string
	fake  *fakediscord.Server
	srv   *httptest.Server
	clock *testutil.Clock
	t0    time.Time
	h     *holders
	db    *gorm.DB
	// afterFlush, when set, is every replica's AfterFlush.
	afterFlush AfterFlush
}

func newRig(t *testing.T, url string) *rig {
	t.Helper()
	t0 := time.Date(2026, 11, 20, 15, 0, 0, 0, time.UTC)
	clock := testutil.NewClock(t0)
	fake := fakediscord.New(fakediscord.Options{Guilds: 8, MessageRate: 200, Token: "secret", Clock: clock.Now,
		Gateway: fakediscord.GatewayOptions{Shards: numShards, MaxConcurrency: numShards, IdentifyInterval: time.Millisecond,
			ResumeWindow: time.Hour}})
	srv := httptest.NewServer(fake.Handler())
	t.Cleanup(func() { srv.Close(); fake.Close() })
	return &rig{t: t, url: url, fake: fake, srv: srv, clock: clock, t0: t0, h: &holders{by: map[int]string{}, released: map[string]int{}}, db: testutil.OpenDB(t, url)}
}

// replica starts one replica's live counting on its own connections; stop ends it and waits.
func (r *rig) replica(name string) (gdb *gorm.DB, stop func()) {
	r.t.Helper()
	gdb = testutil.OpenDB(r.t, r.url)
	presence, err := lock.NewPresence(gdb)
	if err != nil {
		r.t.Fatal(err)
	}
	var replicas Replicas
	if presence != nil {
		replicas = presence
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{
			Replicas: replicas,
			APIBase:  r.srv.URL + "/api/v10", Token: "secret", DB: gdb,
			Lock: func(shard int) (Locker, error) {
				l, err := lock.NewShard(gdb, r.url, shard, time.Second, nil)
				return &recordingLock{Lock: l, h: r.h, replica: name, shard: shard}, err
			},
			FlushInterval: 100 * time.Millisecond, LockRetry: 200 * time.Millisecond, IdentifyInterval: time.Millisecond,
			Now: r.clock.Now, AfterFlush: r.afterFlush,
		})
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					r.t.Errorf("replica %s: %v", name, err)
				}
			case <-time.After(10 * time.Second):
				r.t.Errorf("replica %s did not stop", name)
			}
		})
	}
	r.t.Cleanup(stop)
	return gdb, stop
}

func (r *rig) eventually(what string, within time.Duration, ok func() (bool, string)) {
	r.t.Helper()
	deadline := time.Now().Add(within)
	for {
		done, state := ok()
		if done {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: not within %s: %s", what, within, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// split waits until every shard is held and each of the replicas holds its share.
func (r *rig) split(replicas ...string) {
	r.t.Helper()
	share := (numShards + len(replicas) - 1) / len(replicas)
	r.eventually(fmt.Sprintf("the shards split over %v", replicas), 10*time.Second, func() (bool, string) {
		by := r.h.snapshot()
		n := map[string]int{}
		for _, name := range by {
			n[name]++
		}
		if len(by) != numShards {
			return false, fmt.Sprint(by)
		}
		for _, name := range replicas {
			if n[name] != share {
				return false, fmt.Sprint(by)
			}
		}
		return true, ""
	})
}

// heldBy waits until every shard is held, each by want (when not "").
func (r *rig) heldBy(want string, within time.Duration) {
	r.t.Helper()
	r.eventually("every shard held by "+want, within, func() (bool, string) {
		by := r.h.snapshot()
		for s := range numShards {
			if by[s] == "" || want != "" && by[s] != want {
				return false, fmt.Sprint(by)
			}
		}
		return true, ""
	})
}

// exact moves the clock by d, lets the fake dispatch what it passed, and waits until the stored
// server totals equal the fake's count of every message since counting began.
func (r *rig) exact(d time.Duration) {
	r.t.Helper()
	r.clock.Add(d)
	r.fake.Pump()
	from, to := r.t0.Add(time.Millisecond), r.clock.Now().Add(time.Millisecond)
	var total int64
	for _, c := range r.fake.Catalog() {
		total += r.fake.Count(c.GuildID, "", from, to)
	}
	if total < 100 {
		r.t.Fatalf("only %d messages since counting began: the test needs more", total)
	}
	r.eventually("live counts equal to the fake's", 15*time.Second, func() (bool, string) {
		var rows []struct {
			GuildID  string
			Messages int64
		}
		if err := r.db.Table("live_counts").Select("guild_id, SUM(messages) AS messages").Where("channel_id = ''").
			Group("guild_id").Find(&rows).Error; err != nil {
			return false, err.Error()
		}
		got := map[string]int64{}
		for _, row := range rows {
			got[row.GuildID] = row.Messages
		}
		var diff string
		for _, c := range r.fake.Catalog() {
			if want := r.fake.Count(c.GuildID, "", from, to); got[c.GuildID] != want {
				diff += fmt.Sprintf(" guild %s: stored %d, fake %d;", c.GuildID, got[c.GuildID], want)
			}
		}
		return diff == "", diff
	})
}

func (r *rig) guildsCounted() {
	r.t.Helper()
	r.eventually("every server counted", 15*time.Second, func() (bool, string) {
		var n int64
		if err := r.db.Table("live_guilds").Count(&n).Error; err != nil {
			return false, err.Error()
		}
		return n == int64(len(r.fake.Catalog())), strconv.FormatInt(n, 10)
	})
}

// TestShardsAcrossReplicas: two replicas over one PostgreSQL database share the fake's four
// shards, each held by one replica, two each (the first lets two go when the second comes);
// when a holder stops (cleanly, or its lock connections are cut), the others take its shards
// within the retry period and resume each session from the stored checkpoint: no identify
// beyond the first four, and the counts stay exact.
func TestShardsAcrossReplicas(t *testing.T) {
	r := newRig(t, testutil.NewDatabase(t, reports.Migrations))
	_, stopA := r.replica("a")
	r.heldBy("a", 10*time.Second)
	r.guildsCounted()
	_, stopB := r.replica("b")
	r.split("a", "b")
	r.exact(3 * time.Minute)

	// A clean stop: a last flush, the connection closed with 4000; b resumes.
	stopA()
	r.heldBy("b", 5*time.Second)
	r.exact(2 * time.Minute)

	// b's lock connections are cut (as when its database session ends): b lets every shard go
	// at its next flush; each is taken again, by c or, trying again itself, by b, and resumed
	// from what b stored.
	_, stopC := r.replica("c")
	defer stopC()
	r.split("b", "c")
	r.exact(time.Minute)
	released := r.h.releases("b")
	var cut int
	for shard, name := range r.h.snapshot() {
		if name != "b" {
			continue
		}
		k := uint64(lock.ShardKey(shard))
		if err := r.db.Exec(`SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND classid::bigint = ? AND objid::bigint = ? AND objsubid = 1`, int64(k>>32), int64(k&0xffffffff)).Error; err != nil {
			t.Fatal(err)
		}
		cut++
	}
	r.eventually("b lets its shards go", 5*time.Second, func() (bool, string) {
		n := r.h.releases("b") - released
		return n >= cut, fmt.Sprint(n)
	})
	r.heldBy("", 5*time.Second)
	r.exact(2 * time.Minute)
	stopB()
	if st := r.fake.GatewayStats(); st.Identifies != numShards {
		t.Fatalf("%d identifies, want %d (every later session resumed): %+v", st.Identifies, numShards, st)
	}
}

// TestSQLiteOneProcessAllShards: on SQLite one process holds every shard and counts exactly.
func TestSQLiteOneProcessAllShards(t *testing.T) {
	url := "sqlite:" + filepath.Join(t.TempDir(), "stats.db")
	gdb := testutil.OpenDB(t, url)
	if _, err := migrate.Up(context.Background(), gdb, reports.Migrations); err != nil {
		t.Fatal(err)
	}
	r := newRig(t, url)
	heard := &flushes{}
	r.afterFlush = heard
	_, stop := r.replica("only")
	r.heldBy("only", 10*time.Second)
	r.guildsCounted()
	r.exact(3 * time.Minute)
	stop()
	if st := r.fake.GatewayStats(); st.Identifies != numShards {
		t.Fatalf("%d identifies: %+v", st.Identifies, st)
	}
	// AfterFlush hears each stored flush with the batch it stored: the messages counted reach it.
	if err := heard.check(); err != nil {
		t.Fatal(err)
	}
}

// flushes records what AfterFlush is told.
type flushes struct {
	mu       sync.Mutex
	messages int64
	bad      string
}

func (f *flushes) Flushed(_ context.Context, fl Flushed) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case fl.Batch == nil:
		f.bad = "a flush without its batch"
	case fl.Batch.Next != fl.Checkpoint:
		f.bad = fmt.Sprintf("batch checkpoint %+v, told %+v", fl.Batch.Next, fl.Checkpoint)
	case fl.Shard < 0 || fl.Shard >= fl.NumShards || fl.Flusher == nil:
		f.bad = fmt.Sprintf("shard %d of %d, flusher %v", fl.Shard, fl.NumShards, fl.Flusher != nil)
	default:
		for k, n := range fl.Batch.Counts {
			if k.Channel == 0 {
				f.messages += n
			}
		}
	}
	return nil
}

func (f *flushes) check() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.bad != "" {
		return errors.New(f.bad)
	}
	if f.messages < 100 {
		return fmt.Errorf("the batches told of held %d messages", f.messages)
	}
	return nil
}
