package app

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/attachment"
	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/forum-svc/migrations"
	"forumstats.local/shared/config"
	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/ratelimit"
	"forumstats.local/shared/testutil"
)

const sweepNow = 1_800_000_000

// sweepDB is a fresh migrated database of the dialect (postgres or sqlite) and its URL.
func sweepDB(t *testing.T, dialect string) (*gorm.DB, string) {
	t.Helper()
	u := "sqlite:" + t.TempDir() + "/forum.db"
	if dialect == "postgres" {
		u = testutil.NewDatabase(t, migrations.Set)
	}
	gdb, err := migrate.Open(context.Background(), u, nil, true, migrations.Set)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(gdb) })
	return gdb, u
}

// insertAnswers records an answer for user 1 to user n, in one statement (so that one sweep
// takes them all), created at the given Unix time.
func insertAnswers(t *testing.T, gdb *gorm.DB, key string, n int, created int64) {
	t.Helper()
	values, args := make([]string, n), []any{}
	for i := range n {
		values[i] = "(?, ?, ?, ?, ?, 200, '{}')"
		args = append(args, strings.Repeat("a", 64), i+1, key, strings.Repeat("f", 64), created)
	}
	if err := gdb.Exec(`INSERT INTO idempotency_keys (api_key_hash, user_id, idempotency_key, fingerprint, created_at, status, body)
VALUES `+strings.Join(values, ", "), args...).Error; err != nil {
		t.Fatal(err)
	}
}

// answers counts the recorded answers with key.
func answers(t *testing.T, gdb *gorm.DB, key string) int64 {
	t.Helper()
	var n int64
	if err := gdb.Raw(`SELECT COUNT(*) FROM idempotency_keys WHERE idempotency_key = ?`, key).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// eventually fails the test unless cond holds within 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
	}
}

// sweeping reports whether a goroutine runs App.sweepRetries.
func sweeping() bool {
	buf := make([]byte, 1<<20)
	return bytes.Contains(buf[:runtime.Stack(buf, true)], []byte("app.(*App).sweepRetries"))
}

// TestSweepRetriesLoop: the loop sweeps at every interval, logs the sweeps that deleted
// something, logs a failed sweep and goes on, and returns when its context ends.
func TestSweepRetriesLoop(t *testing.T) {
	expired := int64(sweepNow - conversation.RetryWindow - 1)
	for _, dialect := range []string{"postgres", "sqlite"} {
		t.Run(dialect, func(t *testing.T) {
			gdb, _ := sweepDB(t, dialect)
			var (
				logs   testutil.Buffer
				sweeps atomic.Int64 // each sweep reads the clock once
			)
			log := slog.New(slog.NewTextHandler(&logs, nil))
			svc, err := New(context.Background(), Config{RateLimit: ratelimit.Config{PerMinute: 600, Burst: 60}}, log, WithDB(gdb),
				WithClock(func() time.Time { sweeps.Add(1); return time.Unix(sweepNow, 0) }))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(svc.Close)
			insertAnswers(t, gdb, "fresh", 2, sweepNow-conversation.RetryWindow+1)
			insertAnswers(t, gdb, "first", 3, expired)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				svc.sweepRetries(ctx, 10*time.Millisecond)
			}()
			t.Cleanup(func() { cancel(); <-done })
			lines := func(s string) int { return strings.Count(logs.String(), s) }

			eventually(t, "the first rows swept", func() bool { return answers(t, gdb, "first") == 0 })
			eventually(t, "the first sweep logged", func() bool { return lines("deleted=3") == 1 })

			// An attachment key past its lifetime goes with its file; a younger one stays.
			day := int64(attachment.KeyLifetime / time.Second)
			tx := gdb.Begin()
			for _, q := range []struct {
				sql  string
				args []any
			}{
				{`INSERT INTO users (user_id, username) VALUES (1, 'alice')`, nil},
				{`INSERT INTO attachment_keys (attachment_key, user_id, created_at) VALUES ('old', 1, ?), ('young', 1, ?)`,
					[]any{sweepNow - day, sweepNow - day + 1}},
				{`INSERT INTO attachments (attachment_key, user_id, filename, file_size, file_hash, mime_type, attach_date)
VALUES ('old', 1, 'a.txt', 0, '', '', 1), ('young', 1, 'b.txt', 0, '', '', 1)`, nil},
			} {
				// One transaction: the running sweep sees the key with its file, never alone.
				if err := tx.Exec(q.sql, q.args...).Error; err != nil {
					t.Fatal(err)
				}
			}
			if err := tx.Commit().Error; err != nil {
				t.Fatal(err)
			}
			files := func() (names []string) {
				if err := gdb.Raw(`SELECT filename FROM attachments ORDER BY filename`).Scan(&names).Error; err != nil {
					t.Fatal(err)
				}
				return names
			}
			eventually(t, "the old key's file swept", func() bool { return len(files()) == 1 })
			if got := files(); got[0] != "b.txt" {
				t.Fatalf("files left: %v", got)
			}
			eventually(t, "the key sweep logged", func() bool { return lines("swept expired attachment keys") == 1 })

			if err := gdb.Exec(`ALTER TABLE idempotency_keys RENAME TO idempotency_keys_away`).Error; err != nil {
				t.Fatal(err)
			}
			eventually(t, "a failed sweep logged", func() bool { return lines("level=WARN") > 0 })
			if err := gdb.Exec(`ALTER TABLE idempotency_keys_away RENAME TO idempotency_keys`).Error; err != nil {
				t.Fatal(err)
			}
			insertAnswers(t, gdb, "second", 2, expired)
			eventually(t, "the rows after the failure swept", func() bool { return answers(t, gdb, "second") == 0 })
			eventually(t, "the second sweep logged", func() bool { return lines("deleted=2") == 1 })
			after := sweeps.Load()
			eventually(t, "three more sweeps", func() bool { return sweeps.Load() >= after+3 })

			cancel()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("the sweep goes on after its context ended")
			}
			if n := answers(t, gdb, "fresh"); n != 2 {
				t.Errorf("%d answers within the window left; want 2", n)
			}
			if n := lines("swept expired Idempotency-Key answers"); n != 2 {
				t.Errorf("%d sweeps logged; want 2 (those that deleted something):\n%s", n, logs.String())
			}
		})
	}
}

// TestServeSweeps: `serve` sweeps the primary (not the read replica) every
// IDEMPOTENCY_SWEEP_INTERVAL, and no sweep outlives it, whether it stops because its context
// ended or because it could not listen; with the interval 0 it does not sweep.
func TestServeSweeps(t *testing.T) {
	expired := time.Now().Unix() - conversation.RetryWindow - 1
	for _, tc := range []struct {
		name     string
		interval time.Duration
		busyAddr bool // serve cannot listen (and may stop before its first sweep)
		swept    bool
	}{
		{"sweeps", 10 * time.Millisecond, false, true},
		{"off", 0, false, false},
		{"cannot listen", 10 * time.Millisecond, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primary, primaryURL := sweepDB(t, "sqlite")
			replica, replicaURL := sweepDB(t, "sqlite")
			for _, gdb := range []*gorm.DB{primary, replica} {
				insertAnswers(t, gdb, "old", 3, expired)
			}
			addr := "127.0.0.1:0"
			if tc.busyAddr {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				addr = ln.Addr().String()
			}
			cfg := Config{
				Common:    config.Common{HTTPAddr: addr, DatabaseURL: primaryURL, MigrateOnStart: true},
				RateLimit: ratelimit.Config{PerMinute: 600, Burst: 60}, DatabaseReadURL: replicaURL,
				PrimaryAfterWrite: time.Second, RetrySweepInterval: tc.interval,
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			served := make(chan error, 1)
			go func() { served <- Serve(ctx, cfg, slog.New(slog.DiscardHandler)) }()
			switch {
			case tc.swept:
				eventually(t, "the primary swept", func() bool { return answers(t, primary, "old") == 0 })
			case !tc.busyAddr:
				time.Sleep(100 * time.Millisecond)
			}
			if !tc.busyAddr {
				cancel()
			}
			select {
			case err := <-served:
				if tc.busyAddr != (err != nil) {
					t.Fatalf("serve: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("serve did not stop")
			}
			if sweeping() {
				t.Error("a sweep outlives serve")
			}
			if n := answers(t, replica, "old"); n != 3 {
				t.Errorf("%d expired answers left on the replica; want 3 (a sweep deletes on the primary)", n)
			}
			if n := answers(t, primary, "old"); !tc.swept && !tc.busyAddr && n != 3 {
				t.Errorf("%d expired answers left on the primary; want 3 (no sweep)", n)
			}
		})
	}
}

// heldSweeper is a sweep that runs until released.
type heldSweeper struct{ started, release chan struct{} }

func (h heldSweeper) SweepRetries(context.Context, int64, int) (int64, error) {
	h.started <- struct{}{}
	<-h.release
	return 0, nil
}

func (h heldSweeper) SweepAttachmentKeys(context.Context, int64, int) (int64, error) { return 0, nil }

// TestStartSweepStops: stop ends the sweep's goroutine and returns only once it has, so that
// serve closes no database under a running sweep.
func TestStartSweepStops(t *testing.T) {
	held := heldSweeper{make(chan struct{}), make(chan struct{})}
	svc := &App{retries: held, log: slog.New(slog.DiscardHandler), now: time.Now}
	stop := svc.startSweep(context.Background(), time.Hour)
	<-held.started
	stopped := make(chan struct{})
	go func() {
		stop()
		close(stopped)
	}()
	select {
	case <-stopped:
		t.Fatal("stop returned while a sweep ran")
	case <-time.After(50 * time.Millisecond):
	}
	close(held.release)
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the sweep goes on after stop")
	}
	if sweeping() {
		t.Error("a sweep outlives stop")
	}
	if stop := (&App{}).startSweep(context.Background(), 0); sweeping() {
		t.Error("interval 0 sweeps")
	} else {
		stop()
	}
}
