package collect

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/collector-svc/internal/fakediscord"
	"forumstats.local/shared/reports"
	"forumstats.local/shared/testutil"
)

// The tests of this file run passes through the real discord.Client against the fake Discord
// over HTTP, so that the client's answers to 202, 429, 401 and 5xx meet the pass's rules.

const clientNow = "2026-11-19T12:00:00Z"

type httpEnv struct {
	fake  *fakediscord.Server
	clock *testutil.Clock
	st    *memStore
	url   string
}

// newHTTPEnv serves fake behind wrap (nil: none) and stores its catalog.
func newHTTPEnv(t *testing.T, opts fakediscord.Options, wrap func(http.Handler) http.Handler) *httpEnv {
	t.Helper()
	clock := testutil.NewClock(ts(clientNow))
	opts.Clock = clock.Now
	fake := fakediscord.New(opts)
	h := fake.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	st := newMemStore()
	var entries []catalog.Entry
	for _, e := range fake.Catalog() {
		entries = append(entries, catalog.Entry{Number: e.Number, Name: e.Name, GuildID: e.GuildID})
	}
	if err := st.SyncCatalog(context.Background(), entries); err != nil {
		t.Fatal(err)
	}
	return &httpEnv{fake: fake, clock: clock, st: st, url: srv.URL + "/api/v10"}
}

// collector is a Collector whose client knows token; retries wait a millisecond.
func (e *httpEnv) collector(token string) *Collector {
	client := discord.New(discord.Config{BaseURL: e.url, Token: token, GlobalRate: 5000,
		BackoffMin: time.Millisecond, BackoffMax: 2 * time.Millisecond})
	return New(Config{Discord: client, Store: e.st, Now: e.clock.Now, Concurrency: 2})
}

// checkStored compares every report of the pass's windows with the fake's exact counts.
func (e *httpEnv) checkStored(t *testing.T, guilds []string) {
	t.Helper()
	for _, g := range guilds {
		for _, w := range reports.ForPass(e.clock.Now()) {
			r, ok := e.st.report(w.Kind, g, w.Label)
			if !ok || r.Status != reports.StatusOK {
				t.Fatalf("%s %s: stored %v, status %q", g, w.Label, ok, r.Status)
			}
			if want := e.fake.Count(g, "", w.From, w.To); r.TotalMessages != want {
				t.Errorf("%s %s: total %d, the fake holds %d", g, w.Label, r.TotalMessages, want)
			}
			for id, c := range r.channels {
				if want := e.fake.Count(g, id, w.From, w.To); c.Messages != want {
					t.Errorf("%s %s channel %s: %d, the fake holds %d", g, w.Label, id, c.Messages, want)
				}
			}
		}
	}
}

func (e *httpEnv) guilds() []string {
	var out []string
	for _, c := range e.fake.Catalog() {
		out = append(out, c.GuildID)
	}
	return out
}

// TestClientWaitsAreNotFailures: the search index warming up (202, code 110000) and 429s are
// waited out: the pass succeeds with the exact counts.
func TestClientWaitsAreNotFailures(t *testing.T) {
	e := newHTTPEnv(t, fakediscord.Options{Seed: 3, Guilds: 2, IndexWarmup: 5 * time.Millisecond,
		Inject429Every: 9, InjectRetryAfter: time.Millisecond}, nil)
	res, err := e.collector("").Pass(context.Background())
	if err != nil || len(res.Failures) != 0 || res.Written != 2*10 {
		t.Fatalf("written %d, failures %+v, err %v", res.Written, res.Failures, err)
	}
	st := e.fake.Stats()
	if st.IndexWarmup != 2 || st.Injected429 == 0 {
		t.Fatalf("the fake answered %d × 202 and %d × 429; want 2 and some", st.IndexWarmup, st.Injected429)
	}
	e.checkStored(t, e.guilds())
}

// TestClientServerFailures: when one server's requests of a route keep failing through every
// retry of the client, that server's windows fail with the failure's code, stale with its
// message, and the other server is collected: a search that keeps answering 202 (index not
// ready), a channel list that keeps answering 503.
func TestClientServerFailures(t *testing.T) {
	tests := []struct {
		name, route string
		answer      http.HandlerFunc
		code, msg   string
	}{
		{"index never ready", "/messages/search", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{"message":"Index not yet available. Try again later","code":110000,"retry_after":0.001}`))
		}, CodeIndexNotReady, "Index not yet available"},
		{"channel list unavailable", "/channels", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, `{"message":"Service Unavailable","code":0}`, http.StatusServiceUnavailable)
		}, CodeDiscordUnavailable, "503"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var broken atomic.Value // the guild whose route answers tt.answer; "" none
			broken.Store("")
			e := newHTTPEnv(t, fakediscord.Options{Seed: 3, Guilds: 2}, func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if g := broken.Load().(string); g != "" && strings.HasSuffix(r.URL.Path, g+tt.route) {
						tt.answer(w, r)
						return
					}
					next.ServeHTTP(w, r)
				})
			})
			ctx := context.Background()
			col := e.collector("")
			if _, err := col.Pass(ctx); err != nil {
				t.Fatal(err)
			}
			gs := e.guilds()
			broken.Store(gs[1])
			e.clock.Set(ts("2026-11-19T13:00:00Z"))
			res, err := col.Pass(ctx)
			if !errors.Is(err, ErrPassFailed) || len(res.Failures) != 4 || res.Written != 4 {
				t.Fatalf("written %d, failures %+v, err %v", res.Written, res.Failures, err)
			}
			for _, f := range res.Failures {
				if f.GuildID != gs[1] || f.Code != tt.code || !f.Stale {
					t.Fatalf("failure %+v", f)
				}
			}
			m, _ := e.st.report(reports.KindMonth, gs[1], "2026-11")
			if m.Status != reports.StatusStale || *m.ErrorCode != tt.code || !strings.Contains(*m.ErrorMessage, tt.msg) {
				t.Fatalf("month of the failing server %+v", m.Row)
			}
			if r, _ := e.st.report(reports.KindDay, gs[0], "2026-11-19"); r.Status != reports.StatusOK || !r.GeneratedAt.Equal(e.clock.Now()) {
				t.Fatalf("the other server: %+v", r.Row)
			}
		})
	}
}

// TestClientUnauthorizedAborts: a refused token (401) stops the pass at its first answer:
// no request follows, and the regular windows of every server are stale with unauthorized
// while the backfill days stay as they were.
func TestClientUnauthorizedAborts(t *testing.T) {
	e := newHTTPEnv(t, fakediscord.Options{Seed: 3, Guilds: 3, Token: "right"}, nil)
	ctx := context.Background()
	if _, err := e.collector("right").Pass(ctx); err != nil {
		t.Fatal(err)
	}
	before := e.fake.Stats().Requests
	e.clock.Set(ts("2026-11-19T13:00:00Z"))
	col := e.collector("wrong")
	res, err := col.Pass(ctx)
	if !errors.Is(err, ErrPassFailed) || !strings.Contains(err.Error(), "401") || res.Written != 0 {
		t.Fatalf("written %d, err %v", res.Written, err)
	}
	// Only the requests already in flight when the first 401 came: one per concurrent server.
	if sent := e.fake.Stats().Requests - before; sent > int64(col.cfg.Concurrency) {
		t.Fatalf("%d requests after the token was refused, want at most %d", sent, col.cfg.Concurrency)
	}
	if len(res.Failures) != 3*4 {
		t.Fatalf("%d failures, want the 4 regular windows of 3 servers: %+v", len(res.Failures), res.Failures)
	}
	for _, g := range e.guilds() {
		for _, w := range reports.ForPass(e.clock.Now()) {
			r, _ := e.st.report(w.Kind, g, w.Label)
			want := reports.StatusStale
			if w.Backfill {
				want = reports.StatusOK
			}
			if r.Status != want || (!w.Backfill && *r.ErrorCode != CodeUnauthorized) {
				t.Fatalf("%s %s: %+v, want status %s", g, w.Label, r.Row, want)
			}
		}
	}
}
