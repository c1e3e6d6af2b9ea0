// Command collector-bench measures the real collection pass (collect.Collector.Pass, with the real
// discord.Client and the real store on PostgreSQL) against the bundled fake Discord, which
// enforces a global request rate limit:
//
//   - requests sent equal the minimum the windows need (computed here, independently of the
//     client, from a twin of the fake's deterministic dataset): per server 1 guild + 1 channel
//     list + per window (1 server total + 1 per message-bearing channel created before the
//     window's end);
//   - zero 429s received;
//   - pass time ≤ 1.1 × requests ÷ limit.
//
// It creates a PostgreSQL database (dropped at the end), applies the reports migrations, writes
// the fake's servers to a CATALOG_FILE that the pass syncs (as serve and run-once do), then times
// two passes: the first collection (4 regular windows + the 6 backfill days per server) and a
// second one (the 4 regular windows). Both are checked. Finally every stored report and channel
// count is compared with the fake's Count, so that the bench cannot pass by skipping work.
//
//	go run forumstats.local/collector-svc/cmd/collector-bench [-rate 200] [-latency D] [-concurrency N]
//
// The fake's latency defaults to 20 ms × 50 ÷ rate: the demo fake's 20 ms at Discord's 50/s,
// scaled with the rate, so that a shorter bench at a higher rate keeps the same ratio of latency
// to request interval (the requests that must be in flight to keep the pacer busy).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	_ "time/tzdata" // Europe/Moscow without system zoneinfo

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"forumstats.local/collector-svc/internal/collect"
	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/collector-svc/internal/fakediscord"
	"forumstats.local/collector-svc/internal/store"
	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/reports"
)

// maxRatio is the bound on pass time ÷ (requests ÷ limit).
const maxRatio = 1.1

type options struct {
	adminURL    string
	dbName      string
	keep        bool
	guilds      int
	channels    int
	seed        int64
	rate        float64
	bucketLimit int
	latency     time.Duration
	concurrency int
	timeout     time.Duration
	verbose     bool
}

func main() {
	var o options
	flag.StringVar(&o.adminURL, "admin-url", envOr("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		"PostgreSQL URL of a database from which to create the bench database (env BENCH_POSTGRES_URL)")
	flag.StringVar(&o.dbName, "db", fmt.Sprintf("collector_bench_%d", os.Getpid()), "name of the bench database (created, then dropped)")
	flag.BoolVar(&o.keep, "keep", false, "keep the bench database afterwards")
	flag.IntVar(&o.guilds, "guilds", 20, "servers of the fake")
	flag.IntVar(&o.channels, "channels", 30, "listed channels per server (categories and forums included)")
	flag.Int64Var(&o.seed, "seed", 1, "seed of the fake's dataset")
	flag.Float64Var(&o.rate, "rate", 200, "the fake's global limit in requests/s, and the client's GlobalRate (Discord: 50)")
	flag.IntVar(&o.bucketLimit, "bucket-limit", 0, "the fake's per-route limit per guild and second (default rate ÷ 2, as the demo fake's 25 at 50/s; negative: none)")
	flag.DurationVar(&o.latency, "latency", 0, "the fake's latency before every answer (default 20ms × 50 ÷ rate)")
	flag.IntVar(&o.concurrency, "concurrency", 0, "collect.Config.Concurrency (0: the collector's default, 4)")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
	flag.BoolVar(&o.verbose, "v", false, "log the collector at debug level on stderr (default: warnings)")
	flag.Parse()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["bucket-limit"] {
		o.bucketLimit = int(o.rate / 2)
	}
	if !set["latency"] {
		o.latency = time.Duration(float64(20*time.Millisecond) * 50 / o.rate)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "collector-bench:", err)
		os.Exit(1)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

var dbNameRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func run(o options) (err error) {
	if o.guilds <= 0 || o.channels <= 0 || o.rate <= 0 || o.latency < 0 {
		return errors.New("-guilds, -channels and -rate must be positive, -latency not negative")
	}
	if !dbNameRE.MatchString(o.dbName) {
		return fmt.Errorf("-db %q: want lower-case letters, digits and _", o.dbName)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	// The fake, on loopback, with a recorder of what reaches it.
	fopts := fakediscord.Options{
		Seed: o.seed, Guilds: o.guilds, ChannelsPerGuild: o.channels,
		RateLimit: o.rate, BucketWindow: time.Second, Latency: o.latency,
	}
	if o.bucketLimit > 0 {
		fopts.BucketLimit = o.bucketLimit
	}
	fake := fakediscord.New(fopts)
	rec := &recorder{next: fake.Handler()}
	srv := httptest.NewUnstartedServer(rec)
	var conns atomic.Int64
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	// What the windows need, from a twin of the dataset: not from the client or the pass.
	plan, err := newPlan(fopts)
	if err != nil {
		return err
	}

	// The database.
	dbURL, drop, err := createDatabase(ctx, o.adminURL, o.dbName)
	if err != nil {
		return err
	}
	if o.keep {
		defer fmt.Printf("database %s kept\n", o.dbName)
	} else {
		defer drop()
	}
	gdb, err := db.Open(ctx, dbURL, nil)
	if err != nil {
		return err
	}
	defer db.Close(gdb)
	if _, err := migrate.Up(ctx, gdb, reports.Migrations); err != nil {
		return err
	}

	// The catalog, as serve and run-once get it: a CATALOG_FILE synced at every pass.
	dir, err := os.MkdirTemp("", "collector-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	catalogFile := filepath.Join(dir, "catalog.json")
	data, err := json.MarshalIndent(fake.Catalog(), "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(catalogFile, data, 0o644); err != nil {
		return err
	}

	client := discord.New(discord.Config{BaseURL: srv.URL + "/api/v10", GlobalRate: o.rate, Logger: log})
	concurrency := o.concurrency
	concNote := ""
	if concurrency <= 0 {
		concurrency, concNote = 4, " (the collector's default)"
	}
	col := collect.New(collect.Config{
		Discord:        client,
		Store:          store.New(gdb, nil, log),
		CatalogFile:    catalogFile,
		RefreshMinutes: 10,
		Concurrency:    o.concurrency,
		Logger:         log,
	})

	bucketNote := "none"
	if fopts.BucketLimit > 0 {
		bucketNote = fmt.Sprintf("%d per guild and second", fopts.BucketLimit)
	}
	fmt.Printf("collector-bench: the real collect.Pass (discord.Client, store on PostgreSQL) against the fake Discord\n")
	fmt.Printf("  %d servers × %d listed channels (%s message-bearing), fake limit %g req/s = client GlobalRate,\n",
		o.guilds, o.channels, plan.bearingSummary(), o.rate)
	fmt.Printf("  per-route bucket %s, fake latency %s, collect concurrency %d%s\n",
		bucketNote, o.latency, concurrency, concNote)
	fmt.Printf("  database %s, load average %s\n", o.dbName, loadAvg())

	var problems []string
	fail := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		problems = append(problems, msg)
		fmt.Println("  FAIL:", msg)
	}

	have := map[string]bool{}   // day labels stored by earlier passes (every server alike)
	counted := map[string]win{} // every window counted, by label
	var (
		latest    []win // the windows of the last pass
		lastStart time.Time
	)
	titles := []string{
		"pass 1, the first collection: 4 regular windows + 6 backfill days per server",
		"pass 2: the 4 regular windows (the backfill days are stored)",
	}
	for i, title := range titles {
		fmt.Printf("%s\n", title)
		statsBefore := fake.Stats()
		waitsBefore := discordWaits()
		connsBefore := conns.Load()
		rec.reset()
		t0 := time.Now()
		res, perr := col.Pass(ctx)
		elapsed := time.Since(t0)
		st := fake.Stats()
		waits := discordWaits()
		if ctx.Err() != nil {
			return fmt.Errorf("pass %d: %w", i+1, ctx.Err())
		}
		if perr != nil {
			fail("pass %d: %v", i+1, perr)
		}
		wins := passWindows(res.Start, have)
		minimum, reportsWanted := plan.minimum(wins)
		requests := st.Requests - statsBefore.Requests
		limited := (st.RateLimited - statsBefore.RateLimited) + (st.Injected429 - statsBefore.Injected429)
		global := st.GlobalLimited - statsBefore.GlobalLimited
		ideal := time.Duration(float64(requests) / o.rate * float64(time.Second))
		ratio := elapsed.Seconds() / ideal.Seconds()

		fmt.Printf("  requests sent %d, minimum the windows need %d\n", requests, minimum)
		fmt.Printf("  429s received %d (global %d)\n", limited, global)
		fmt.Printf("  elapsed %.3fs, requests/limit %.3fs, ratio %.3f (max %.1f)\n",
			elapsed.Seconds(), ideal.Seconds(), ratio, maxRatio)
		if res.Servers != o.guilds || res.Written != reportsWanted {
			fail("pass %d: %d servers, %d reports written; want %d and %d", i+1, res.Servers, res.Written, o.guilds, reportsWanted)
		}
		if requests != int64(minimum) {
			fail("pass %d: sent %d requests, the windows need %d", i+1, requests, minimum)
		}
		if limited != 0 {
			fail("pass %d: received %d 429s", i+1, limited)
		}
		if ratio > maxRatio {
			fail("pass %d: took %.3f × requests/limit, over %.1f", i+1, ratio, maxRatio)
		}
		// How busy the pacer was: time requests queued for it, and the time the pass's
		// goroutines spent elsewhere (answer round trips, decoding, database writes).
		pacing := waits["pacing"] - waitsBefore["pacing"]
		bucket := waits["bucket"] - waitsBefore["bucket"]
		arr := rec.snapshot()
		fmt.Printf("  pacer: %.1f req/s achieved (%.1f%% of the limit); requests queued %.1f ms each on average for it, %.1f ms for buckets\n",
			float64(requests)/elapsed.Seconds(), 100*float64(requests)/elapsed.Seconds()/o.rate,
			1000*pacing/float64(requests), 1000*bucket/float64(requests))
		cycle := (float64(concurrency)*elapsed.Seconds() - pacing - bucket) / float64(requests)
		interval := time.Duration(float64(time.Second) / o.rate)
		behindMax, behindLast := arr.behind(interval)
		fmt.Printf("  per request outside the limiter ≈ %.2f ms ((%d workers × elapsed − their waits) ÷ requests, tail included):\n"+
			"    %d workers sustain ≈ %.0f req/s; the limit needs ≈ %.1f in flight; the fake saw %.2f on average (max %d)\n",
			1000*cycle, concurrency, concurrency, float64(concurrency)/cycle, o.rate*cycle,
			arr.busy.Seconds()/elapsed.Seconds(), arr.maxInflight)
		fmt.Printf("  arrivals behind the ideal schedule (first arrival + i ÷ limit): at most %.0f ms, %.0f ms at the last; %d new TCP connections\n",
			1000*behindMax.Seconds(), 1000*behindLast.Seconds(), conns.Load()-connsBefore)

		for _, w := range wins {
			if w.backfill {
				have[w.label] = true
			}
			counted[w.label] = w
			if w.kind == "daily" && !w.backfill {
				have[w.label] = true
			}
		}
		latest = wins
		lastStart = res.Start
	}

	// Every stored report and channel count against the fake's own Count.
	nReports, nChannels, bad, err := verify(ctx, gdb, fake, plan, counted, latest, lastStart)
	if err != nil {
		return err
	}
	fmt.Printf("verification: %d stored reports and %d channel counts compared with the fake's Count\n", nReports, nChannels)
	for i, b := range bad {
		if i == 10 {
			fmt.Printf("  … and %d more\n", len(bad)-10)
			break
		}
		fmt.Println("  FAIL:", b)
	}
	if len(bad) > 0 {
		problems = append(problems, fmt.Sprintf("%d stored values differ from the fake's", len(bad)))
	}
	fmt.Printf("load average %s\n", loadAvg())
	if len(problems) > 0 {
		return fmt.Errorf("FAIL: %s", strings.Join(problems, "; "))
	}
	fmt.Println("PASS")
	return nil
}

// win is one window of a pass, computed here from the README's rules (Moscow calendar): today,
// yesterday, the current and the previous month, and the six days before yesterday when not
// stored yet.
type win struct {
	kind     string // daily, monthly
	label    string
	from, to time.Time
	backfill bool
}

var moscow = func() *time.Location {
	loc, err := time.LoadLocation("Europe/Moscow")
	if err != nil {
		panic(err)
	}
	return loc
}()

func passWindows(start time.Time, have map[string]bool) []win {
	m := start.In(moscow)
	y, mo, d := m.Date()
	day := func(d int) win {
		f, t := time.Date(y, mo, d, 0, 0, 0, 0, moscow), time.Date(y, mo, d+1, 0, 0, 0, 0, moscow)
		return win{kind: "daily", label: f.Format("2006-01-02"), from: f, to: t}
	}
	month := func(mo time.Month) win {
		f, t := time.Date(y, mo, 1, 0, 0, 0, 0, moscow), time.Date(y, mo+1, 1, 0, 0, 0, 0, moscow)
		return win{kind: "monthly", label: f.Format("2006-01"), from: f, to: t}
	}
	out := []win{day(d), day(d - 1), month(mo), month(mo - 1)}
	for i := 2; i < 8; i++ {
		w := day(d - i)
		w.backfill = true
		if !have[w.label] {
			out = append(out, w)
		}
	}
	return out
}

// plan is the fake's dataset as /channels lists it, read from a twin fake (same seed and
// sizes, no limits, its handler called in-process), not from the measured one nor the client.
type plan struct {
	guilds []planGuild
}

type planGuild struct {
	id      string
	bearing []planChannel // message-bearing channels (types 0, 2, 5, 13)
}

type planChannel struct {
	id, name string
	created  time.Time // from the snowflake
}

const discordEpochMs = 1420070400000

func newPlan(o fakediscord.Options) (*plan, error) {
	twin := fakediscord.New(fakediscord.Options{Seed: o.Seed, Guilds: o.Guilds, ChannelsPerGuild: o.ChannelsPerGuild})
	h := twin.Handler()
	p := &plan{}
	for _, e := range twin.Catalog() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/v10/guilds/"+e.GuildID+"/channels", nil))
		if w.Code != http.StatusOK {
			return nil, fmt.Errorf("twin fake: channels of %s: %d", e.GuildID, w.Code)
		}
		var chans []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
			Type int    `json:"type"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &chans); err != nil {
			return nil, fmt.Errorf("twin fake: channels of %s: %w", e.GuildID, err)
		}
		g := planGuild{id: e.GuildID}
		for _, c := range chans {
			switch c.Type {
			case 0, 2, 5, 13: // text, voice, announcement, stage
			default:
				continue
			}
			v, err := strconv.ParseUint(c.ID, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("twin fake: channel id %q", c.ID)
			}
			g.bearing = append(g.bearing, planChannel{id: c.ID, name: c.Name, created: time.UnixMilli(int64(v>>22) + discordEpochMs)})
		}
		p.guilds = append(p.guilds, g)
	}
	return p, nil
}

func (p *plan) bearingSummary() string {
	lo, hi := math.MaxInt, 0
	for _, g := range p.guilds {
		lo, hi = min(lo, len(g.bearing)), max(hi, len(g.bearing))
	}
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}

// channelsIn returns the channels a window's report holds: those created before its end.
func (g planGuild) channelsIn(w win) []planChannel {
	var out []planChannel
	for _, c := range g.bearing {
		if c.created.Before(w.to) {
			out = append(out, c)
		}
	}
	return out
}

// minimum is the fewest requests the windows need, and the reports they make.
func (p *plan) minimum(wins []win) (requests, reports int) {
	for _, g := range p.guilds {
		requests += 2 // the guild and its channel list
		for _, w := range wins {
			requests += 1 + len(g.channelsIn(w))
		}
		reports += len(wins)
	}
	return requests, reports
}

// verify compares every report the passes wrote with the fake's Count: status ok, the total,
// the channel set, each channel's count and name. The windows of the last pass must have been
// generated during it.
func verify(ctx context.Context, gdb *gorm.DB, fake *fakediscord.Server, p *plan, counted map[string]win,
	last []win, lastStart time.Time) (nReports, nChannels int, bad []string, err error) {
	type rep struct {
		status    string
		total     int64
		generated time.Time
		channels  map[string]reports.DailyChannelCount
	}
	stored := map[string]*rep{} // guild|label
	var daily []reports.DailyReport
	var monthly []reports.MonthlyReport
	var dch []reports.DailyChannelCount
	var mch []reports.MonthlyChannelCount
	q := gdb.WithContext(ctx)
	for _, e := range []error{q.Find(&daily).Error, q.Find(&monthly).Error, q.Find(&dch).Error, q.Find(&mch).Error} {
		if e != nil {
			return 0, 0, nil, fmt.Errorf("read the stored reports: %w", e)
		}
	}
	for _, r := range daily {
		stored[r.GuildID+"|"+r.Day] = &rep{r.Status, r.TotalMessages, r.GeneratedAt, map[string]reports.DailyChannelCount{}}
	}
	for _, r := range monthly {
		stored[r.GuildID+"|"+r.Month] = &rep{r.Status, r.TotalMessages, r.GeneratedAt, map[string]reports.DailyChannelCount{}}
	}
	for _, c := range dch {
		if r := stored[c.GuildID+"|"+c.Day]; r != nil {
			r.channels[c.ChannelID] = c
		}
	}
	for _, c := range mch {
		if r := stored[c.GuildID+"|"+c.Month]; r != nil {
			r.channels[c.ChannelID] = reports.DailyChannelCount{GuildID: c.GuildID, ChannelID: c.ChannelID, Name: c.Name, Messages: c.Messages}
		}
	}
	if want := len(p.guilds) * len(counted); len(stored) != want {
		bad = append(bad, fmt.Sprintf("%d reports stored, want %d", len(stored), want))
	}
	inLast := map[string]bool{}
	for _, w := range last {
		inLast[w.label] = true
	}
	labels := make([]string, 0, len(counted))
	for l := range counted {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	for _, g := range p.guilds {
		for _, l := range labels {
			w := counted[l]
			r := stored[g.id+"|"+l]
			if r == nil {
				bad = append(bad, fmt.Sprintf("guild %s %s: no report", g.id, l))
				continue
			}
			nReports++
			if r.status != reports.StatusOK {
				bad = append(bad, fmt.Sprintf("guild %s %s: status %s", g.id, l, r.status))
			}
			if want := fake.Count(g.id, "", w.from, w.to); r.total != want {
				bad = append(bad, fmt.Sprintf("guild %s %s: total %d, fake counts %d", g.id, l, r.total, want))
			}
			if inLast[l] && r.generated.Before(lastStart.Truncate(time.Microsecond)) {
				bad = append(bad, fmt.Sprintf("guild %s %s: generated at %s, before the last pass started", g.id, l, r.generated))
			}
			want := g.channelsIn(w)
			if len(r.channels) != len(want) {
				bad = append(bad, fmt.Sprintf("guild %s %s: %d channels stored, want %d", g.id, l, len(r.channels), len(want)))
			}
			for _, c := range want {
				sc, ok := r.channels[c.id]
				if !ok {
					bad = append(bad, fmt.Sprintf("guild %s %s: channel %s missing", g.id, l, c.id))
					continue
				}
				nChannels++
				if n := fake.Count(g.id, c.id, w.from, w.to); sc.Messages != n || sc.Name != c.name {
					bad = append(bad, fmt.Sprintf("guild %s %s channel %s: %d messages (%q), fake counts %d (%q)",
						g.id, l, c.id, sc.Messages, sc.Name, n, c.name))
				}
			}
		}
	}
	return nReports, nChannels, bad, nil
}

// recorder wraps the fake's handler and notes when requests arrive and how long they take.
type recorder struct {
	next http.Handler

	mu          sync.Mutex
	arrivals    []time.Time
	busy        time.Duration
	inflight    int
	maxInflight int
}

type recorded struct {
	arrivals    []time.Time
	busy        time.Duration
	maxInflight int
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	t := time.Now()
	r.mu.Lock()
	r.arrivals = append(r.arrivals, t)
	r.inflight++
	r.maxInflight = max(r.maxInflight, r.inflight)
	r.mu.Unlock()
	r.next.ServeHTTP(w, req)
	d := time.Since(t)
	r.mu.Lock()
	r.busy += d
	r.inflight--
	r.mu.Unlock()
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.arrivals, r.busy, r.maxInflight = make([]time.Time, 0, 8192), 0, 0
}

func (r *recorder) snapshot() recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := append([]time.Time(nil), r.arrivals...)
	sort.Slice(a, func(i, j int) bool { return a[i].Before(a[j]) })
	return recorded{arrivals: a, busy: r.busy, maxInflight: r.maxInflight}
}

// behind tells how far the arrivals fell behind a perfectly paced schedule from the first one:
// the most, and at the last arrival (what the pass lost to unsaturated pacing, or gained
// from the fake's burst when negative).
func (r recorded) behind(interval time.Duration) (most, last time.Duration) {
	for i, t := range r.arrivals {
		last = t.Sub(r.arrivals[0]) - time.Duration(i)*interval
		most = max(most, last)
	}
	return most, last
}

// discordWaits reads collector_discord_wait_seconds_total by reason from the default registry.
func discordWaits() map[string]float64 {
	out := map[string]float64{}
	mfs, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		return out
	}
	for _, mf := range mfs {
		if mf.GetName() != "collector_discord_wait_seconds_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" {
					out[l.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

func createDatabase(ctx context.Context, adminURL, name string) (string, func(), error) {
	admin, err := db.Open(ctx, adminURL, nil)
	if err != nil {
		return "", nil, fmt.Errorf("admin database: %w", err)
	}
	exec := func(ctx context.Context, q string) error { return admin.WithContext(ctx).Exec(q).Error }
	dropQ := `DROP DATABASE IF EXISTS "` + name + `" WITH (FORCE)`
	if err := exec(ctx, dropQ); err != nil {
		db.Close(admin)
		return "", nil, err
	}
	if err := exec(ctx, `CREATE DATABASE "`+name+`"`); err != nil {
		db.Close(admin)
		return "", nil, err
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		db.Close(admin)
		return "", nil, err
	}
	u.Path = "/" + name
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := exec(ctx, dropQ); err != nil {
			fmt.Fprintf(os.Stderr, "collector-bench: drop database %s: %v\n", name, err)
		}
		db.Close(admin)
	}
	return u.String(), drop, nil
}

func loadAvg() string {
	f, err := os.Open("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 128))
	fields := strings.Fields(string(b))
	if len(fields) < 3 {
		return "unknown"
	}
	return strings.Join(fields[:3], " ")
}
