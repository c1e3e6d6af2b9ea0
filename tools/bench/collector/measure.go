package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"forumstats.local/shared/reports"
	"forumstats.local/shared/testutil"
	"forumstats.local/tools/stack"
)

// passResult is one timed `collector-svc run-once`.
type passResult struct {
	title    string
	err      error         // the command's failure, with its last output
	servers  int           // as it reports them
	written  int           // reports written, as it reports them
	passTime time.Duration // the pass itself, as it reports it
	wall     time.Duration // the whole command: start, database, lock, pass, exit
	start    time.Time     // collector_state.pass_started_at
	latency  time.Duration
	windows  []reports.Window
	needed   int // requests the windows need
	before   int // requests the same pass sends when every channel of every window is searched
	reports  int // reports the windows make
	traffic  traffic
}

var passLine = regexp.MustCompile(`pass finished: (\d+) servers, (\d+) reports written in (\S+)`)

// measurePasses times the first collection and, when second, a second pass in which nothing
// changed.
func measurePasses(ctx context.Context, e *benchEnv, o options, second bool) ([]passResult, error) {
	titles := []string{
		fmt.Sprintf("latency %s, pass 1, the first collection: 4 regular windows + 6 backfill days per server", e.latency),
		fmt.Sprintf("latency %s, pass 2, nothing changed: the 4 regular windows (the backfill days are stored)", e.latency),
	}
	if !second {
		titles = titles[:1]
	}
	have := map[string]bool{} // labels stored by earlier passes (every server alike)
	var out []passResult
	for _, title := range titles {
		r, err := e.pass(ctx, o)
		if err != nil {
			return nil, err
		}
		r.title, r.latency = title, e.latency
		for _, w := range reports.ForPass(r.start) {
			if !w.Backfill || !have[w.Label] {
				r.windows = append(r.windows, w)
			}
		}
		r.before, r.reports = e.plan.minimum(r.windows)
		if r.needed, err = e.needed(ctx, r.windows, have, r.start); err != nil {
			return nil, err
		}
		for _, w := range r.windows {
			have[w.Label] = true
		}
		out = append(out, r)
	}
	return out, nil
}

// pass runs `collector-svc run-once` through the proxy.
func (e *benchEnv) pass(ctx context.Context, o options) (passResult, error) {
	level := "warn"
	if o.verbose {
		level = "debug"
	}
	env := []string{"DATABASE_URL=" + e.dbURL, "DISCORD_API_BASE=" + e.proxyURL + "/api/v10", "CATALOG_FILE=" + e.catalog,
		"DISCORD_MAX_RPS=" + strconv.Itoa(o.rate), "REFRESH_MINUTES=10", "LOG_FORMAT=text", "LOG_LEVEL=" + level,
		// The benchmark measures the search-only pass.
		"DISCORD_GATEWAY=off"}
	e.proxy.reset()
	t0 := time.Now()
	stdout, stderr, err := stack.RunSplit(ctx, o.timeout, e.bin, env, "run-once")
	r := passResult{wall: time.Since(t0), traffic: e.proxy.snapshot()}
	if ctx.Err() != nil {
		return r, ctx.Err()
	}
	if o.verbose || err != nil {
		fmt.Print(stderr)
	}
	if err != nil {
		r.err = fmt.Errorf("run-once: %w: %s", err, lastLine(stderr))
	}
	if m := passLine.FindStringSubmatch(stdout); m != nil {
		r.servers, _ = strconv.Atoi(m[1])
		r.written, _ = strconv.Atoi(m[2])
		r.passTime, _ = time.ParseDuration(m[3])
	} else if r.err == nil {
		r.err = fmt.Errorf("run-once printed no pass line: %q", stdout)
	}
	start, err := passStart(ctx, e.dbURL)
	if err != nil {
		return r, err
	}
	r.start = start
	return r, nil
}

// passStart reads when the last pass started, as the collector recorded it: the windows follow.
func passStart(ctx context.Context, dbURL string) (time.Time, error) {
	conn, err := sql.Open("pgx", dbURL)
	if err != nil {
		return time.Time{}, err
	}
	defer conn.Close()
	var at sql.NullTime
	if err := conn.QueryRowContext(ctx, "SELECT pass_started_at FROM collector_state WHERE id = 1").Scan(&at); err != nil {
		return time.Time{}, fmt.Errorf("read the pass start: %w", err)
	}
	if !at.Valid {
		return time.Time{}, fmt.Errorf("the collector recorded no pass start")
	}
	return at.Time, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// channelsIn returns the channels a window's report holds: those created before its end.
func (g planGuild) channelsIn(w reports.Window) []planChannel {
	var out []planChannel
	for _, c := range g.bearing {
		if c.created.Before(w.To) {
			out = append(out, c)
		}
	}
	return out
}

// needed is the fewest requests the windows need: per server the guild and its channel list; per
// window its total, and each channel's count unless the total is 0 or the window is closed and
// stored with the same total (stored: the labels earlier passes wrote; the fake's clock is
// frozen, so a stored total is the fake's count).
func (e *benchEnv) needed(ctx context.Context, wins []reports.Window, stored map[string]bool, start time.Time) (int, error) {
	n := 0
	for _, g := range e.plan.guilds {
		n += 2
		for _, w := range wins {
			n++
			total, err := e.count(ctx, g.id, "", w)
			if err != nil {
				return 0, err
			}
			if total == 0 || (stored[w.Label] && !w.To.After(start)) {
				continue
			}
			n += len(g.channelsIn(w))
		}
	}
	return n, nil
}

// minimum is the requests the windows take when every channel of every window is searched (the
// baseline of the second pass), and the reports they make.
func (p *plan) minimum(wins []reports.Window) (requests, reportCount int) {
	for _, g := range p.guilds {
		requests += 2 // the guild and its channel list
		for _, w := range wins {
			requests += 1 + len(g.channelsIn(w))
		}
		reportCount += len(wins)
	}
	return requests, reportCount
}

// verification is the comparison of the stored reports with the fake's exact counts.
type verification struct {
	reports, channels int
	bad               []string
}

// exportedReport is a report of `collector-svc export` (collector-svc/README.md, Import and
// export file), as far as read here.
type exportedReport struct {
	GuildID       string            `json:"guildId"`
	Date          string            `json:"date"`
	Month         string            `json:"month"`
	GeneratedAt   time.Time         `json:"generatedAt"`
	Status        string            `json:"status"`
	TotalMessages int64             `json:"totalMessages"`
	Channels      []exportedChannel `json:"channels"`
}

type exportedChannel struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Messages int64  `json:"messages"`
}

// verify compares every report the passes wrote, as `collector-svc export` gives them, with the
// fake's exact counts: status ok, the total, the channel set, each channel's count and name. The
// windows of the last pass must have been generated during it.
func verify(ctx context.Context, e *benchEnv, passes []passResult) (verification, error) {
	stdout, stderr, err := stack.RunSplit(ctx, 2*time.Minute, e.bin, []string{"DATABASE_URL=" + e.dbURL}, "export", "--file", "-")
	if err != nil {
		return verification{}, fmt.Errorf("export: %w: %s", err, lastLine(stderr))
	}
	var file struct{ Daily, Monthly []exportedReport }
	if err := json.Unmarshal([]byte(stdout), &file); err != nil {
		return verification{}, fmt.Errorf("export: %w", err)
	}
	stored := map[string]exportedReport{} // guild|period
	for _, r := range append(file.Daily, file.Monthly...) {
		stored[r.GuildID+"|"+r.Date+r.Month] = r
	}
	counted := map[string]reports.Window{}
	for _, p := range passes {
		for _, w := range p.windows {
			counted[w.Label] = w
		}
	}
	var v verification
	if want := len(e.plan.guilds) * len(counted); len(stored) != want {
		v.bad = append(v.bad, fmt.Sprintf("%d reports stored, want %d", len(stored), want))
	}
	last := passes[len(passes)-1]
	labels := slices.Sorted(maps.Keys(counted))
	for _, g := range e.plan.guilds {
		for _, l := range labels {
			r, ok := stored[g.id+"|"+l]
			if !ok {
				v.bad = append(v.bad, fmt.Sprintf("guild %s %s: no report", g.id, l))
				continue
			}
			inLast := slices.ContainsFunc(last.windows, func(w reports.Window) bool { return w.Label == l })
			if err := e.checkReport(ctx, &v, g, counted[l], r, inLast, last.start); err != nil {
				return v, err
			}
		}
	}
	return v, nil
}

func (e *benchEnv) checkReport(ctx context.Context, v *verification, g planGuild, w reports.Window, r exportedReport, inLast bool, lastStart time.Time) error {
	v.reports++
	bad := func(format string, args ...any) {
		v.bad = append(v.bad, fmt.Sprintf("guild %s %s: ", g.id, w.Label)+fmt.Sprintf(format, args...))
	}
	if r.Status != reports.StatusOK {
		bad("status %s", r.Status)
	}
	total, err := e.count(ctx, g.id, "", w)
	if err != nil {
		return err
	}
	if r.TotalMessages != total {
		bad("total %d, the fake counts %d", r.TotalMessages, total)
	}
	if inLast && r.GeneratedAt.Before(lastStart.Truncate(time.Microsecond)) {
		bad("generated at %s, before the last pass started", r.GeneratedAt)
	}
	want := g.channelsIn(w)
	if len(r.Channels) != len(want) {
		bad("%d channels stored, want %d", len(r.Channels), len(want))
	}
	for _, c := range want {
		i := slices.IndexFunc(r.Channels, func(s exportedChannel) bool { return s.ID == c.id })
		if i < 0 {
			bad("channel %s missing", c.id)
			continue
		}
		v.channels++
		n, err := e.count(ctx, g.id, c.id, w)
		if err != nil {
			return err
		}
		if sc := r.Channels[i]; sc.Messages != n || sc.Name != c.name {
			bad("channel %s: %d messages (%q), the fake counts %d (%q)", c.id, sc.Messages, sc.Name, n, c.name)
		}
	}
	return nil
}

// count asks the fake for its exact count of the window (channelID "": the whole server).
func (e *benchEnv) count(ctx context.Context, guildID, channelID string, w reports.Window) (int64, error) {
	q := url.Values{"guild_id": {guildID}, "channel_id": {channelID},
		"from": {w.From.Format(time.RFC3339Nano)}, "to": {w.To.Format(time.RFC3339Nano)}}
	var res struct {
		Count *int64 `json:"count"`
	}
	if err := e.getFake(ctx, "/_fake/count?"+q.Encode(), &res); err != nil {
		return 0, err
	}
	if res.Count == nil {
		return 0, fmt.Errorf("the fake's count of %s %s %s has no count", guildID, channelID, w.Label)
	}
	return *res.Count, nil
}

// recorder is the reverse proxy between the collector and the fake. It notes when each request
// arrives and leaves, how many are in flight, the 429s, and the TCP connections the collector
// opens.
type recorder struct {
	proxy *httputil.ReverseProxy
	conns atomic.Int64

	mu       sync.Mutex
	t        traffic
	inflight int
}

// traffic is what the recorder saw of one pass.
type traffic struct {
	arrivals    []time.Time
	busy        time.Duration // sum of the time requests spent at the fake
	maxInflight int
	limited     int // 429 answers
	global      int // of which global
	conns       int64
}

func newRecorder(target string) (*recorder, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	r := &recorder{proxy: httputil.NewSingleHostReverseProxy(u)}
	// Enough idle connections for every request in flight: the proxy must not add a TCP
	// handshake per request at the limit.
	r.proxy.Transport = &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}
	r.proxy.ModifyResponse = func(resp *http.Response) error {
		if resp.StatusCode == http.StatusTooManyRequests {
			r.mu.Lock()
			r.t.limited++
			if resp.Header.Get("X-RateLimit-Global") == "true" {
				r.t.global++
			}
			r.mu.Unlock()
		}
		return nil
	}
	r.reset()
	return r, nil
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	t := time.Now()
	r.mu.Lock()
	r.t.arrivals = append(r.t.arrivals, t)
	r.inflight++
	r.t.maxInflight = max(r.t.maxInflight, r.inflight)
	r.mu.Unlock()
	r.proxy.ServeHTTP(w, req)
	d := time.Since(t)
	r.mu.Lock()
	r.t.busy += d
	r.inflight--
	r.mu.Unlock()
}

// connState counts the TCP connections the collector opens to the proxy.
func (r *recorder) connState(_ net.Conn, s http.ConnState) {
	if s == http.StateNew {
		r.conns.Add(1)
	}
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.t = traffic{arrivals: make([]time.Time, 0, 8192), conns: r.conns.Load()}
}

func (r *recorder) snapshot() traffic {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.t
	t.arrivals = slices.Clone(t.arrivals)
	sort.Slice(t.arrivals, func(i, j int) bool { return t.arrivals[i].Before(t.arrivals[j]) })
	t.conns = r.conns.Load() - t.conns
	return t
}

// behind tells how far the arrivals fell behind a perfectly paced schedule from the first one:
// the most, and at the last arrival (what the pass lost to unsaturated pacing, or gained from the
// fake's burst when negative).
func (t traffic) behind(interval time.Duration) (most, last time.Duration) {
	for i, a := range t.arrivals {
		last = a.Sub(t.arrivals[0]) - time.Duration(i)*interval
		most = max(most, last)
	}
	return most, last
}

// busiestSecond is the most requests that left for the fake within any one second.
func (t traffic) busiestSecond() int { return testutil.Busiest(t.arrivals, time.Second) }
