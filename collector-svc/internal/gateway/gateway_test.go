package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"forumstats.local/collector-svc/internal/fakediscord"
	"forumstats.local/shared/testutil"
)

// env is a fake Discord with a virtual clock and fast timings.
type env struct {
	t     testing.TB
	fake  *fakediscord.Server
	srv   *httptest.Server
	clock *testutil.Clock
	start time.Time
}

func newEnv(t testing.TB, opts fakediscord.Options) *env {
	t.Helper()
	c := testutil.NewClock(time.Date(2026, 11, 20, 15, 0, 0, 0, time.UTC))
	opts.Token = "secret"
	opts.Clock = c.Now
	if opts.MessageRate == 0 {
		opts.MessageRate = 100
	}
	g := &opts.Gateway
	if g.IdentifyInterval == 0 {
		g.IdentifyInterval = 20 * time.Millisecond
	}
	if g.HeartbeatInterval == 0 {
		g.HeartbeatInterval = time.Second
	}
	if g.Tick == 0 {
		g.Tick = 5 * time.Millisecond
	}
	fake := fakediscord.New(opts)
	srv := httptest.NewServer(fake.Handler())
	t.Cleanup(func() {
		fake.Close()
		srv.Close()
	})
	return &env{t: t, fake: fake, srv: srv, clock: c, start: c.Now()}
}

func (e *env) apiBase() string { return e.srv.URL + "/api/v10" }

func (e *env) shardConfig(id, count int) ShardConfig {
	return ShardConfig{
		ID: id, Count: count,
		URL:           strings.Replace(e.srv.URL, "http://", "ws://", 1) + "/gateway",
		Token:         "secret",
		Gate:          NewLimiter(SessionStartLimit{Total: 1000, Remaining: 1000, MaxConcurrency: 1}, 25*time.Millisecond),
		Backoff:       10 * time.Millisecond,
		MaxBackoff:    50 * time.Millisecond,
		ReidentifyMin: 10 * time.Millisecond,
		ReidentifyMax: 20 * time.Millisecond,
		Logger:        slog.New(slog.NewTextHandler(testLog{e.t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
}

// testLog shows the shard's log in the test's output, which prints it when the test fails.
type testLog struct{ t testing.TB }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// advance moves the clock and has the fake dispatch what it passed.
func (e *env) advance(d time.Duration) {
	e.clock.Add(d)
	e.fake.Pump()
}

// want is the number of messages of the guilds stamped since the sessions started (the first
// READY), as the search counts them.
func (e *env) want(guilds []uint64) int {
	from, to := e.start.Add(time.Millisecond), e.clock.Now().Add(time.Millisecond)
	var n int64
	for _, g := range guilds {
		n += e.fake.Count(strconv.FormatUint(g, 10), "", from, to)
	}
	return int(n)
}

// recorder collects a shard's events.
type recorder struct {
	mu     sync.Mutex
	events []Event
	signal chan struct{}
}

func newRecorder() *recorder { return &recorder{signal: make(chan struct{}, 1)} }

func (r *recorder) emit(ev Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	select {
	case r.signal <- struct{}{}:
	default:
	}
}

func (r *recorder) snapshot() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// waitFor waits until cond holds over the events.
func (r *recorder) waitFor(t *testing.T, what string, cond func([]Event) bool) []Event {
	t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		if evs := r.snapshot(); cond(evs) {
			return evs
		}
		select {
		case <-r.signal:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out waiting for %s; %d events: %s", what, len(r.snapshot()), summary(r.snapshot()))
		}
	}
}

func summary(evs []Event) string {
	var b strings.Builder
	for i, ev := range evs {
		if ev.Type != "MESSAGE_CREATE" || i == len(evs)-1 {
			b.WriteString(ev.Type + "#" + strconv.FormatInt(ev.Seq, 10) + " ")
		}
	}
	return b.String()
}

func count(evs []Event, typ string) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

// guildsOf lists the guilds of the shard's GUILD_CREATEs.
func guildsOf(evs []Event) []uint64 {
	var out []uint64
	for _, ev := range evs {
		if ev.Type == "GUILD_CREATE" {
			out = append(out, ev.GuildID)
		}
	}
	return out
}

// checkSequence asserts that every session's dispatches came once and in order: READY is 1 and
// each other event follows the previous one.
func checkSequence(t *testing.T, evs []Event) {
	t.Helper()
	var prev int64
	for i, ev := range evs {
		switch {
		case ev.Type == "READY" && ev.Seq != 1:
			t.Fatalf("event %d: READY with seq %d", i, ev.Seq)
		case ev.Type != "READY" && ev.Seq != prev+1:
			t.Fatalf("event %d (%s): seq %d after %d: lost or repeated; %s", i, ev.Type, ev.Seq, prev, summary(evs))
		}
		prev = ev.Seq
	}
}

// checkMessages asserts that the MESSAGE_CREATEs are exactly the messages searched: as many,
// none twice.
func checkMessages(t *testing.T, e *env, evs []Event, guilds []uint64) {
	t.Helper()
	seen := map[[2]uint64]bool{}
	for _, ev := range evs {
		if ev.Type != "MESSAGE_CREATE" {
			continue
		}
		k := [2]uint64{ev.ChannelID, ev.IDs[0]}
		if seen[k] {
			t.Fatalf("message %d handed on twice", ev.IDs[0])
		}
		seen[k] = true
	}
	if want := e.want(guilds); len(seen) != want {
		t.Fatalf("%d messages, the search counts %d", len(seen), want)
	}
}

// runShard runs a shard until the test ends, and returns it with its recorder and its result.
func runShard(t *testing.T, cfg ShardConfig, cp Checkpoint) (*Shard, *recorder, <-chan error, context.CancelFunc) {
	t.Helper()
	sh := NewShard(cfg, cp)
	rec := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	done, finished := make(chan error, 1), make(chan struct{})
	go func() {
		done <- sh.Run(ctx, rec.emit)
		close(finished)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-finished:
		case <-time.After(10 * time.Second):
			t.Error("the shard did not stop")
		}
	})
	return sh, rec, done, cancel
}

func ready(evs []Event) bool { return count(evs, "READY") > 0 && len(guildsOf(evs)) > 0 }

// allMessages waits until every message the clock passed arrived.
func allMessages(t *testing.T, e *env, rec *recorder) []Event {
	t.Helper()
	return rec.waitFor(t, "every message", func(evs []Event) bool {
		return count(evs, "MESSAGE_CREATE") >= e.want(guildsOf(evs))
	})
}

// TestRunIdentifiesEveryShard: Run reads /gateway/bot, identifies each shard within the fake's
// identify limit (no op 9), and hands on each shard's guilds and messages.
func TestRunIdentifiesEveryShard(t *testing.T) {
	e := newEnv(t, fakediscord.Options{Guilds: 6, Gateway: fakediscord.GatewayOptions{Shards: 2, IdentifyInterval: 40 * time.Millisecond}})
	rec := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		// The client waits ten times the fake's interval between identifies, so that a loaded
		// machine delaying one identify's arrival still keeps them apart at the fake.
		done <- Run(ctx, Config{APIBase: e.apiBase(), Token: "secret", IdentifyInterval: 400 * time.Millisecond,
			Shard: ShardConfig{Backoff: 10 * time.Millisecond}}, rec.emit)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	rec.waitFor(t, "both READYs", func(evs []Event) bool { return count(evs, "READY") == 2 && count(evs, "GUILD_CREATE") == 6 })
	e.advance(2 * time.Minute)
	evs := rec.waitFor(t, "the messages", func(evs []Event) bool { return count(evs, "MESSAGE_CREATE") >= e.want(guildsOf(evs)) })
	byShard := map[int][]Event{}
	for _, ev := range evs {
		byShard[ev.Shard] = append(byShard[ev.Shard], ev)
		if ev.Type == "GUILD_CREATE" {
			threads := 0
			for _, c := range ev.Channels {
				if c.Thread {
					threads++
					if c.ParentID == 0 || c.Name == "" {
						t.Errorf("thread %+v", c)
					}
				}
			}
			if int(ev.GuildID>>22)%2 != ev.Shard || len(ev.Channels) < 7 || threads != 2 {
				t.Errorf("GUILD_CREATE %+v on shard %d", ev, ev.Shard)
			}
		}
		if ev.Type == "READY" && (ev.SessionID == "" || ev.ResumeURL == "") {
			t.Errorf("READY %+v", ev)
		}
	}
	for shard, evs := range byShard {
		checkSequence(t, evs)
		checkMessages(t, e, evs, guildsOf(evs))
		if shard != 0 && shard != 1 {
			t.Errorf("events of shard %d", shard)
		}
	}
	if st := e.fake.GatewayStats(); st.Identifies != 2 || st.InvalidSessions != 0 {
		t.Errorf("fake stats %+v: want 2 identifies and no op 9", st)
	}
}

// TestHeartbeats: the shard heartbeats and its heartbeats are ACKed, so it never reconnects;
// op 1 from the server gets a heartbeat at once.
func TestHeartbeats(t *testing.T) {
	e := newEnv(t, fakediscord.Options{Gateway: fakediscord.GatewayOptions{HeartbeatInterval: 200 * time.Millisecond}})
	_, rec, _, _ := runShard(t, e.shardConfig(0, 1), Checkpoint{})
	rec.waitFor(t, "READY", ready)
	deadline := time.Now().Add(10 * time.Second)
	for e.fake.GatewayStats().Heartbeats < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v: too few heartbeats", e.fake.GatewayStats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	before := e.fake.GatewayStats().Heartbeats
	e.fake.RequestHeartbeat()
	time.Sleep(50 * time.Millisecond) // well under the 200 ms interval
	if st := e.fake.GatewayStats(); st.Heartbeats <= before || st.Connections != 1 || st.Resumes != 0 {
		t.Fatalf("stats %+v after op 1: want a heartbeat at once, on the first connection", st)
	}
}

// failureCase breaks the connection one way; the shard must resume (or re-identify) and hand on
// every message once, in order.
type failureCase struct {
	name       string
	fail       func(f *fakediscord.Server)
	heal       func(f *fakediscord.Server)
	resumes    bool // the shard resumes (else it identifies again)
	identifies int64
}

func TestFailuresResumeWithoutLossOrRepeat(t *testing.T) {
	tests := []failureCase{
		{name: "drop", fail: (*fakediscord.Server).DropConnections, resumes: true, identifies: 1},
		{name: "zombie", fail: func(f *fakediscord.Server) { f.SetZombie(true) }, heal: func(f *fakediscord.Server) { f.SetZombie(false) }, resumes: true, identifies: 1},
		{name: "op 7 reconnect", fail: (*fakediscord.Server).RequestReconnect, resumes: true, identifies: 1},
		{name: "op 9 resumable", fail: func(f *fakediscord.Server) { f.InvalidateSessions(true) }, resumes: true, identifies: 1},
		{name: "op 9 not resumable", fail: func(f *fakediscord.Server) { f.InvalidateSessions(false) }, identifies: 2},
		{name: "bad JSON", fail: func(f *fakediscord.Server) { f.InjectFrame([]byte(`{"op":0,"s":`)) }, resumes: true, identifies: 1},
		{name: "unknown opcode", fail: func(f *fakediscord.Server) { f.InjectFrame([]byte(`{"op":42,"d":null}`)) }, resumes: true, identifies: 1},
		{name: "oversized", fail: func(f *fakediscord.Server) {
			f.InjectFrame([]byte(`{"op":11,"d":"` + strings.Repeat("x", 1<<20) + `"}`))
		}, resumes: true, identifies: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, fakediscord.Options{Guilds: 2})
			cfg := e.shardConfig(0, 1)
			cfg.ReadLimit = 256 << 10
			_, rec, _, _ := runShard(t, cfg, Checkpoint{})
			rec.waitFor(t, "READY", ready)
			for round := range 3 {
				e.advance(time.Minute)
				if tt.resumes || round == 0 {
					allMessages(t, e, rec)
				}
				before := e.fake.GatewayStats()
				tt.fail(e.fake)
				e.advance(time.Minute) // dispatched while the shard is away
				rec.waitFor(t, "the next connection", func(evs []Event) bool {
					st := e.fake.GatewayStats()
					return st.Resumes > before.Resumes || st.Identifies > before.Identifies
				})
				if tt.heal != nil {
					tt.heal(e.fake)
				}
				if !tt.resumes {
					// A new session starts at its READY: what was sent meanwhile is a gap that
					// the search fills, not the gateway.
					rec.waitFor(t, "the new READY", func(evs []Event) bool { return count(evs, "READY") == round+2 })
					continue
				}
				evs := allMessages(t, e, rec)
				checkSequence(t, evs)
				checkMessages(t, e, evs, guildsOf(evs))
			}
			st := e.fake.GatewayStats()
			if tt.resumes && (st.Resumes < 3 || st.ResumesAtResumeURL != st.Resumes || st.Identifies != 1) {
				t.Fatalf("stats %+v: want 3 resumes at the resume URL and one identify", st)
			}
			if !tt.resumes && st.Identifies != 4 {
				t.Fatalf("stats %+v: want 4 identifies", st)
			}
			if !tt.resumes {
				evs := rec.snapshot()
				checkSequence(t, evs)
				if n := count(evs, "READY"); n != 4 {
					t.Fatalf("%d READY, want 4", n)
				}
			}
		})
	}
}

// TestFatalCloseCodesStop: a close code that forbids reconnecting stops the shard with a
// FatalError after one connection, not a reconnect storm.
func TestFatalCloseCodesStop(t *testing.T) {
	tests := []struct {
		name    string
		token   string
		intents int
		code    int
	}{
		{"authentication failed", "wrong", 0, 4004},
		{"disallowed intents", "secret", DefaultIntents | 1<<15, 4014},
		{"invalid intents", "secret", 1 << 40, 4013},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, fakediscord.Options{})
			cfg := e.shardConfig(0, 1)
			cfg.Token, cfg.Intents = tt.token, tt.intents
			stopped := promtest.ToFloat64(metricStopped.WithLabelValues(strconv.Itoa(tt.code)))
			_, _, done, _ := runShard(t, cfg, Checkpoint{})
			select {
			case err := <-done:
				var fe *FatalError
				if !errors.As(err, &fe) || fe.Code != tt.code {
					t.Fatalf("Run = %v, want a FatalError %d", err, tt.code)
				}
				if n := promtest.ToFloat64(metricStopped.WithLabelValues(strconv.Itoa(tt.code))); n != stopped+1 {
					t.Fatalf("collector_gateway_stopped_total{code=%d} went from %v to %v", tt.code, stopped, n)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the shard kept going")
			}
			if st := e.fake.GatewayStats(); st.Connections != 1 {
				t.Fatalf("stats %+v: want one connection", st)
			}
		})
	}
	e := newEnv(t, fakediscord.Options{Gateway: fakediscord.GatewayOptions{Shards: 1}})
	_, _, done, _ := runShard(t, e.shardConfig(3, 2), Checkpoint{})
	var fe *FatalError
	if err := <-done; !errors.As(err, &fe) || fe.Code != 4010 {
		t.Fatalf("shard 3 of 2: %v, want 4010", err)
	}
	e = newEnv(t, fakediscord.Options{Guilds: 3, Gateway: fakediscord.GatewayOptions{MaxGuildsPerShard: 2}})
	_, _, done, _ = runShard(t, e.shardConfig(0, 1), Checkpoint{})
	if err := <-done; !errors.As(err, &fe) || fe.Code != 4011 {
		t.Fatalf("3 guilds on one shard of at most 2: %v, want 4011", err)
	}
}

// TestRestartResumesFromCheckpoint: a shard stopped (as at shutdown) leaves its session
// resumable; a new shard given the stored checkpoint resumes it and hands on exactly the
// dispatches after it, including those of the time in between.
func TestRestartResumesFromCheckpoint(t *testing.T) {
	e := newEnv(t, fakediscord.Options{Guilds: 2})
	sh, rec, done, cancel := runShard(t, e.shardConfig(0, 1), Checkpoint{})
	rec.waitFor(t, "READY", ready)
	e.advance(time.Minute)
	first := allMessages(t, e, rec)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	cp := sh.Checkpoint()
	if !cp.Resumable() || cp.Seq != first[len(first)-1].Seq {
		t.Fatalf("checkpoint %+v, last event seq %d", cp, first[len(first)-1].Seq)
	}
	e.advance(time.Minute) // while no process runs

	// The stored checkpoint may lag the last event handed on (it is flushed periodically).
	cp.Seq -= 10
	kept := first[:len(first)-10]
	_, rec2, _, _ := runShard(t, e.shardConfig(0, 1), cp)
	evs := rec2.waitFor(t, "RESUMED", func(evs []Event) bool { return count(evs, "RESUMED") == 1 })
	if count(evs, "READY") != 0 || evs[0].Seq != cp.Seq+1 {
		t.Fatalf("after the restart: %s", summary(evs))
	}
	guilds := guildsOf(first)
	all := waitAll(t, e, rec2, kept, guilds)
	checkSequence(t, all)
	checkMessages(t, e, all, guilds)
	if st := e.fake.GatewayStats(); st.Identifies != 1 || st.Resumes != 1 {
		t.Fatalf("stats %+v: want one identify and one resume", st)
	}
}

func waitAll(t *testing.T, e *env, rec *recorder, kept []Event, guilds []uint64) []Event {
	t.Helper()
	evs := rec.waitFor(t, "every message", func(evs []Event) bool {
		return count(kept, "MESSAGE_CREATE")+count(evs, "MESSAGE_CREATE") >= e.want(guilds)
	})
	return append(append([]Event(nil), kept...), evs...)
}

// TestDeletesAreHandedOn: MESSAGE_DELETE and MESSAGE_DELETE_BULK carry the channel, the guild
// and every id.
func TestDeletesAreHandedOn(t *testing.T) {
	e := newEnv(t, fakediscord.Options{Guilds: 1})
	_, rec, _, _ := runShard(t, e.shardConfig(0, 1), Checkpoint{})
	rec.waitFor(t, "READY", ready)
	e.advance(time.Minute)
	evs := allMessages(t, e, rec)
	var msgs []Event
	for _, ev := range evs {
		if ev.Type == "MESSAGE_CREATE" && (len(msgs) == 0 || ev.ChannelID == msgs[0].ChannelID) {
			msgs = append(msgs, ev)
		}
	}
	if len(msgs) < 3 {
		t.Fatalf("%d messages in one channel, want 3", len(msgs))
	}
	if err := e.fake.Delete(msgs[0].ChannelID, msgs[0].IDs[0]); err != nil {
		t.Fatal(err)
	}
	if err := e.fake.Delete(msgs[1].ChannelID, msgs[1].IDs[0], msgs[2].IDs[0]); err != nil {
		t.Fatal(err)
	}
	evs = rec.waitFor(t, "the deletes", func(evs []Event) bool { return count(evs, "MESSAGE_DELETE_BULK") == 1 })
	checkSequence(t, evs)
	del, bulk := evs[len(evs)-2], evs[len(evs)-1]
	if del.Type != "MESSAGE_DELETE" || del.ChannelID != msgs[0].ChannelID || del.GuildID != msgs[0].GuildID || len(del.IDs) != 1 || del.IDs[0] != msgs[0].IDs[0] {
		t.Fatalf("MESSAGE_DELETE %+v", del)
	}
	if bulk.ChannelID != msgs[1].ChannelID || len(bulk.IDs) != 2 || bulk.IDs[0] != msgs[1].IDs[0] || bulk.IDs[1] != msgs[2].IDs[0] {
		t.Fatalf("MESSAGE_DELETE_BULK %+v", bulk)
	}
}

// TestUnreachableResumeURL: a checkpoint whose resume URL no longer answers is resumed at the
// gateway URL after a few tries, not abandoned and not retried forever.
func TestUnreachableResumeURL(t *testing.T) {
	e := newEnv(t, fakediscord.Options{Guilds: 1})
	sh, rec, done, cancel := runShard(t, e.shardConfig(0, 1), Checkpoint{})
	rec.waitFor(t, "READY", ready)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	cp := sh.Checkpoint()
	dead := httptest.NewServer(nil)
	cp.ResumeURL = strings.Replace(dead.URL, "http://", "ws://", 1) + "/gateway/resume"
	dead.Close()
	_, rec2, _, _ := runShard(t, e.shardConfig(0, 1), cp)
	evs := rec2.waitFor(t, "RESUMED", func(evs []Event) bool { return count(evs, "RESUMED") == 1 })
	if count(evs, "READY") != 0 {
		t.Fatalf("identified instead of resuming: %s", summary(evs))
	}
	if st := e.fake.GatewayStats(); st.Resumes != 1 || st.ResumesAtResumeURL != 0 || st.Identifies != 1 {
		t.Fatalf("stats %+v: want one resume, at the gateway URL", st)
	}
}
