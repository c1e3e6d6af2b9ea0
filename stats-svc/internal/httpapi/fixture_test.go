package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"forumstats.local/shared/migrate"
	"forumstats.local/shared/ratelimit"
	"forumstats.local/shared/reports"
	"forumstats.local/shared/testutil"
	"forumstats.local/stats-svc/internal/answers"
	"forumstats.local/stats-svc/internal/app"
	"forumstats.local/stats-svc/internal/cache"
	"forumstats.local/stats-svc/internal/httpapi"
	"forumstats.local/stats-svc/internal/query"
	"forumstats.local/stats-svc/internal/store"
)

// The fixed clock of these tests: 2026-11-20 13:00 in Moscow. Today is
// 2026-11-20, yesterday 2026-11-19, the live months 2026-11 and 2026-10.
var testNow = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

const cdn = "https://cdn.test"

var (
	pgURL    string
	redisURL string
)

func TestMain(m *testing.M) {
	var err error
	if redisURL, err = testutil.RedisURL(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testutil.Main(m, &pgURL, reports.Migrations)
}

var seeded atomic.Bool

// pgDB opens the package database, seeding the fixture on first use.
func pgDB(t *testing.T) *gorm.DB {
	t.Helper()
	gdb := testutil.OpenDB(t, pgURL)
	if seeded.CompareAndSwap(false, true) {
		seed(t, gdb)
	}
	return gdb
}

func migrateUp(gdb *gorm.DB) error {
	_, err := migrate.Up(context.Background(), gdb, reports.Migrations)
	return err
}

func ptr[T any](v T) *T { return &v }

const (
	alphaID = "81384788765712384"
	betaID  = "222222222222222222"
	gammaID = "1" // equals Alpha's number: the guildId match must win
)

// seed writes the fixture (see the expectations in the tests):
//
//	month 2026-11: Alpha ok and fresh; Beta ok but 2 h old (age-stale); Gamma none.
//	month 2026-10: Alpha stale with an error; Beta ok, 2026-09: Alpha ok.
//	days 2026-11-14..20: Alpha all ok; Beta lacks the 17th; Gamma's 18th
//	is stale with an error and its today is 1 h old (age-stale).
//	days 2026-11-06..13: Alpha only.
func seed(t *testing.T, gdb *gorm.DB) {
	t.Helper()
	err := gdb.Transaction(func(tx *gorm.DB) error {
		rows := []any{
			&[]reports.CatalogServer{{Number: 1, Name: "Alpha", GuildID: alphaID}, {Number: 2, Name: "Beta", GuildID: betaID}, {Number: 3, Name: "Gamma & Co", GuildID: gammaID}},
			&[]reports.Guild{
				{GuildID: alphaID, Icon: ptr("a_f00d"), Banner: ptr("b4nn3r"), BannerKnown: true, MetadataAt: ptr(testNow)},
				{GuildID: betaID, Icon: ptr("1c0n"), Banner: ptr("zzz"), BannerKnown: false, MetadataAt: ptr(testNow)},
			},
			&[]reports.MonthlyReport{
				{GuildID: alphaID, Month: "2026-11", GeneratedAt: testNow.Add(-5 * time.Minute), Status: "ok", TotalMessages: 300},
				{GuildID: betaID, Month: "2026-11", GeneratedAt: testNow.Add(-2 * time.Hour), Status: "ok", TotalMessages: 70},
				{GuildID: alphaID, Month: "2026-10", GeneratedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), Status: "stale",
					ErrorCode: ptr("rate_limited"), ErrorMessage: ptr("slow down"), TotalMessages: 1000},
				{GuildID: alphaID, Month: "2026-09", GeneratedAt: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC), Status: "ok", TotalMessages: 900},
			},
			&[]reports.MonthlyChannelCount{
				{GuildID: alphaID, Month: "2026-11", ChannelID: "10", Name: "general", Messages: 200},
				{GuildID: alphaID, Month: "2026-11", ChannelID: "11", Name: "memes", Messages: 50},
				{GuildID: alphaID, Month: "2026-11", ChannelID: "9", Name: "random", Messages: 50},
				{GuildID: betaID, Month: "2026-11", ChannelID: "20", Name: "lobby", Messages: 70},
			},
		}
		for _, r := range rows {
			if err := tx.Create(r).Error; err != nil {
				return err
			}
		}
		// A server that left the catalog keeps its reports; they are never served.
		gone := reports.MonthlyReport{GuildID: "4242", Month: "2026-11", GeneratedAt: testNow, Status: "ok", TotalMessages: 5000}
		if err := tx.Create(&gone).Error; err != nil {
			return err
		}
		if err := addDay(tx, "4242", "2026-11-16", testNow, "ok", nil, map[string]int64{"40": 5000}, nil); err != nil {
			return err
		}
		// Alpha also has 2026-11-06..13, so that a 15-day range is complete.
		first, _ := reports.ParseDay("2026-11-06")
		for d := first; d.Before(reports.Day{Year: 2026, Month: 11, Day: 14}); d = d.AddDays(1) {
			named := map[string]string{"12": "old-name"}
			if d.Day <= 7 {
				named["13"] = "archived" // only in the first half of a split range
			}
			if err := addDay(tx, alphaID, d.String(), d.AddDays(1).Start().Add(30*time.Minute), "ok", nil, map[string]int64{"10": 10}, named); err != nil {
				return err
			}
		}
		week, _ := reports.ParseDay("2026-11-14")
		for i := 0; i < 7; i++ {
			d := week.AddDays(i)
			done := d.AddDays(1).Start().Add(30 * time.Minute) // a finished day's last refresh
			if i >= 5 {
				done = testNow.Add(-10 * time.Minute) // yesterday and today: fresh
			}
			name := "old-name"
			if i == 6 {
				name = "new-name"
			}
			if err := addDay(tx, alphaID, d.String(), done, "ok", nil, map[string]int64{"10": 10}, map[string]string{"12": name}); err != nil {
				return err
			}
			if d.Day != 17 {
				if err := addDay(tx, betaID, d.String(), done, "ok", nil, map[string]int64{"20": 5}, nil); err != nil {
					return err
				}
			}
			status, code, gdone := "ok", (*string)(nil), done
			if d.Day == 18 {
				status, code = "stale", ptr("http_500")
			}
			if i == 6 {
				gdone = testNow.Add(-time.Hour)
			}
			if err := addDay(tx, gammaID, d.String(), gdone, status, code, map[string]int64{"30": 2}, nil); err != nil {
				return err
			}
		}
		if err := seedLive(tx); err != nil {
			return err
		}
		_, err := reports.BumpGeneration(tx)
		return err
	})
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
}

// snowflake is the first id of the millisecond of t.
func snowflake(t time.Time) int64 { return (t.UnixMilli() - reports.DiscordEpoch) << 22 }

func liveHour(s string) int64 {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return reports.LiveHour(t)
}

// seedLive writes the live counts (see the expectations in activity_test.go):
//
//	Alpha counts from 2026-10-01 on, with an unfilled gap in 2026-11-10's 10:00 UTC hour and a
//	filled one in its 12:00 hour; Beta from 2026-11-01 06:30 UTC on; Gamma never; 4242 (not in
//	the catalog) counts too, never served. The shards last wrote at testNow.
//	Counts around New York's longest day (2026-11-01, 25 hours: 04:00 UTC to 05:00 the next day).
func seedLive(tx *gorm.DB) error {
	at := func(s string) time.Time { t, _ := time.Parse(time.RFC3339, s); return t }
	stmts := []struct {
		sql  string
		args []any
	}{
		{"INSERT INTO live_guilds (guild_id, since_id) VALUES (?, ?), (?, ?), (?, ?)", []any{
			alphaID, snowflake(at("2026-10-01T00:00:00Z")), betaID, snowflake(at("2026-11-01T06:30:00Z")), "4242", 1}},
		{"INSERT INTO live_gaps (guild_id, min_id, max_id, filled, recorded_at) VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?)", []any{
			alphaID, snowflake(at("2026-11-10T10:10:00Z")) - 1, snowflake(at("2026-11-10T10:20:00Z")), false, testNow,
			alphaID, snowflake(at("2026-11-10T12:10:00Z")) - 1, snowflake(at("2026-11-10T12:20:00Z")), true, testNow}},
		{"INSERT INTO live_checkpoints (shard, num_shards, session_id, seq, resume_url, flushed_at) VALUES (0, 2, 'a', 7, 'wss://gw.test', ?), (1, 2, 'b', 9, 'wss://gw.test', ?)",
			[]any{testNow.Add(-time.Hour), testNow}},
		{"INSERT INTO live_channels (guild_id, channel_id, name, thread, deleted) VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?), (?, ?, ?, ?, ?)", []any{
			alphaID, "10", "general", false, false, alphaID, "12", "=new-name", false, false, alphaID, "14", "a thread", true, false}},
	}
	type count struct {
		guild, hour, channel string
		messages             int64
	}
	for _, c := range []count{
		{alphaID, "2026-10-31T21:00:00Z", "", 1}, // Moscow's 2026-11-01 begins
		{alphaID, "2026-11-01T04:00:00Z", "", 3}, {alphaID, "2026-11-01T04:00:00Z", "10", 2}, {alphaID, "2026-11-01T04:00:00Z", "12", 1},
		{alphaID, "2026-11-01T06:00:00Z", "", 4}, {alphaID, "2026-11-01T06:00:00Z", "10", 1}, {alphaID, "2026-11-01T06:00:00Z", "12", 1},
		{alphaID, "2026-11-02T04:00:00Z", "", 6}, {alphaID, "2026-11-02T04:00:00Z", "10", 6},
		{alphaID, "2026-11-02T05:00:00Z", "", 7}, {alphaID, "2026-11-02T05:00:00Z", "12", 7},
		{alphaID, "2026-11-10T10:00:00Z", "", 2}, {alphaID, "2026-11-10T12:00:00Z", "", 9},
		{betaID, "2026-11-01T06:00:00Z", "", 10}, {betaID, "2026-11-01T07:00:00Z", "", 20},
		{"4242", "2026-11-01T07:00:00Z", "", 5000},
	} {
		stmts = append(stmts, struct {
			sql  string
			args []any
		}{"INSERT INTO live_counts (guild_id, hour, channel_id, messages) VALUES (?, ?, ?, ?)", []any{c.guild, liveHour(c.hour), c.channel, c.messages}})
	}
	for _, s := range stmts {
		if err := tx.Exec(s.sql, s.args...).Error; err != nil {
			return err
		}
	}
	return nil
}

// addDay writes one daily report; named channels get 1 message each.
func addDay(tx *gorm.DB, guild, day string, at time.Time, status string, code *string, counts map[string]int64, named map[string]string) error {
	var total int64
	var chans []reports.DailyChannelCount
	for id, n := range counts {
		chans = append(chans, reports.DailyChannelCount{GuildID: guild, Day: day, ChannelID: id, Name: "general", Messages: n})
		total += n
	}
	for id, name := range named {
		chans = append(chans, reports.DailyChannelCount{GuildID: guild, Day: day, ChannelID: id, Name: name, Messages: 1})
		total++
	}
	r := reports.DailyReport{GuildID: guild, Day: day, GeneratedAt: at, Status: status, ErrorCode: code, ErrorMessage: code, TotalMessages: total}
	if err := tx.Create(&r).Error; err != nil {
		return err
	}
	return tx.Create(&chans).Error
}

type stack struct {
	url    string
	cache  *cache.Cache
	prefix string // Redis key prefix
}

type stackOptions struct {
	redis  *redis.Client // nil: in-process cache only
	poll   time.Duration
	direct bool // no cache at all: the store answers
	// limiter limits the client addresses (nil: none).
	limiter httpapi.Limiter
	// coldLimit and coldWait bound the cache's reads of the store (0: none, the default wait).
	coldLimit int
	coldWait  time.Duration
	// hold, when set, holds every read of the store until it is closed; each read that starts
	// first sends on entered (when set and ready).
	hold    <-chan struct{}
	entered chan<- struct{}
	// now is the clock (nil: testNow).
	now func() time.Time
	// readTimeout bounds the cache's reads of the store (0: the default).
	readTimeout time.Duration
}

// staleIfError is the window the stacks serve stale answers in and announce.
const staleIfError = 24 * time.Hour

// heldSource is the store with every answer held until hold is closed.
type heldSource struct {
	*store.Store
	hold    <-chan struct{}
	entered chan<- struct{}
}

func (h heldSource) wait() {
	select {
	case h.entered <- struct{}{}:
	default:
	}
	<-h.hold
}

func (h heldSource) Statistics(ctx context.Context, q query.Query, now time.Time) (answers.Answer, error) {
	h.wait()
	return h.Store.Statistics(ctx, q, now)
}

func (h heldSource) Icons(ctx context.Context, server string) (answers.Answer, error) {
	h.wait()
	return h.Store.Icons(ctx, server)
}

func (h heldSource) Series(ctx context.Context, q query.Series, now time.Time) (answers.Answer, error) {
	h.wait()
	return h.Store.Series(ctx, q, now)
}

func (h heldSource) Activity(ctx context.Context, q query.Activity, now time.Time) (answers.Answer, error) {
	h.wait()
	return h.Store.Activity(ctx, q, now)
}

var prefixSeq atomic.Int64

// newStack serves the service's handler (app.New's: shared/server's middleware and probes, the
// API over the cache or the store, the dashboard) on a loopback port with the fixed clock.
func newStack(t *testing.T, gdb *gorm.DB, o stackOptions) *stack {
	t.Helper()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := store.New(gdb, answers.Links{CDN: cdn})
	s := &stack{}
	var reportsAPI httpapi.Reports = st
	if !o.direct {
		prefix := fmt.Sprintf("test:stats:%d:%d:%s:", os.Getpid(), prefixSeq.Add(1), t.Name())
		s.prefix = prefix
		var src cache.Source = st
		if o.hold != nil {
			src = heldSource{Store: st, hold: o.hold, entered: o.entered}
		}
		s.cache = cache.New(src, o.redis, cache.Options{KeyPrefix: prefix, Poll: o.poll, Logger: log, ColdLimit: o.coldLimit, ColdWait: o.coldWait, StaleIfError: staleIfError,
			ReadTimeout: o.readTimeout})
		if err := s.cache.Refresh(context.Background()); err != nil {
			t.Fatalf("refresh generation: %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { s.cache.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		if o.redis != nil {
			t.Cleanup(func() { cleanKeys(o.redis, prefix) })
		}
		reportsAPI = s.cache
	}
	now := o.now
	if now == nil {
		now = func() time.Time { return testNow }
	}
	// No limit unless the test sets one: the API tests make many requests from one address.
	cfg := app.Config{CDN: cdn, RateLimit: ratelimit.Config{PerMinute: 1_000_000, Burst: 1_000_000}, StaleIfError: staleIfError}
	opts := []app.Option{app.WithDB(gdb), app.WithReports(reportsAPI), app.WithClock(now)}
	if o.limiter != nil {
		opts = append(opts, app.WithLimiter(o.limiter))
	}
	a, err := app.New(context.Background(), cfg, log, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func cleanKeys(rdb *redis.Client, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	keys, _ := rdb.Keys(ctx, escapeGlob(prefix)+"*").Result()
	if len(keys) > 0 {
		rdb.Del(ctx, keys...)
	}
}

func escapeGlob(s string) string {
	return strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`).Replace(s)
}

func newRedis(t *testing.T, addr string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	if addr != "" {
		opts.Addr = addr
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = 200*time.Millisecond, 100*time.Millisecond, 100*time.Millisecond
	opts.MaxRetries, opts.ContextTimeoutEnabled = 0, true
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return c
}

type response struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, method, url string) response {
	t.Helper()
	return doWith(t, method, url, nil)
}

// doWith is do with request headers.
func doWith(t *testing.T, method, url string, header map[string]string) response {
	t.Helper()
	_, r, err := send(method, url, header, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// getJSON GETs target, which must answer 200, and decodes the body into a T.
func getJSON[T any](t *testing.T, s *stack, target string) T {
	t.Helper()
	r := do(t, "GET", s.url+target)
	if r.status != 200 {
		t.Fatalf("%s: %d %s", target, r.status, r.body)
	}
	var b T
	if err := json.Unmarshal([]byte(r.body), &b); err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	return b
}

// request is do for goroutines other than the test's.
func request(method, url string) (response, error) {
	_, r, err := send(method, url, nil, nil)
	return r, err
}

// client asks for no content coding unless a test sets Accept-Encoding itself (Go's default
// transport would ask gzip and decode it out of sight), so that bodies and Content-Length are the
// bytes the service sent.
var client = &http.Client{Transport: &http.Transport{DisableCompression: true}}

// send makes a request with header and body and reads the whole answer; it returns the request
// too.
func send(method, url string, header map[string]string, body []byte) (*http.Request, response, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return nil, response{}, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, response{}, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, response{}, err
	}
	return req, response{res.StatusCode, res.Header, string(b)}, nil
}
