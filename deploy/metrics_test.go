package deploy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"forumstats.local/tools/stack"
)

// targetLabels are the labels Prometheus (with the operator's ServiceMonitors) adds to every
// scraped series: queries may select and group by them although /metrics never shows them.
var targetLabels = []string{"job", "instance", "namespace", "service", "pod", "container", "endpoint"}

// synthesized are the series Prometheus writes itself for each target.
var synthesized = []string{"up"}

// family is one metric family of a scrape.
type family struct {
	Type   dto.MetricType
	Labels map[string]bool // label names over its samples
	Bounds []string        // histogram bucket bounds, as the le label writes them
}

// exposition is what the services expose, family by family.
type exposition map[string]*family

func (x exposition) add(mfs map[string]*dto.MetricFamily) {
	for name, mf := range mfs {
		f := x[name]
		if f == nil {
			f = &family{Type: mf.GetType(), Labels: map[string]bool{}}
			x[name] = f
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				f.Labels[l.GetName()] = true
			}
			for _, b := range m.GetHistogram().GetBucket() {
				if s := strconv.FormatFloat(b.GetUpperBound(), 'f', -1, 64); !slices.Contains(f.Bounds, s) {
					f.Bounds = append(f.Bounds, s)
				}
			}
		}
	}
}

// resolve finds the family behind a series name as PromQL sees it: a counter, gauge or
// untyped metric by its name, a histogram's _bucket, _sum and _count series by the family's
// name, a summary's by its name or _sum and _count. It returns the labels the series carry.
func (x exposition) resolve(name string) (fam string, lbls map[string]bool, ok bool) {
	if f, ok := x[name]; ok && f.Type != dto.MetricType_HISTOGRAM {
		return name, withLabel(f.Labels, "quantile", f.Type == dto.MetricType_SUMMARY), true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, found := strings.CutSuffix(name, suffix)
		if !found {
			continue
		}
		f, ok := x[base]
		switch {
		case !ok:
		case f.Type == dto.MetricType_HISTOGRAM:
			return base, withLabel(f.Labels, "le", suffix == "_bucket"), true
		case f.Type == dto.MetricType_SUMMARY && suffix != "_bucket":
			return base, f.Labels, true
		}
	}
	return "", nil, false
}

// parseExposition parses the Prometheus text format, as a scrape of /metrics answers it.
func parseExposition(r io.Reader) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}

func withLabel(m map[string]bool, name string, add bool) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	if add {
		out[name] = true
	}
	return out
}

// checkExpr checks one expression against the exposition: every metric it selects is
// exposed (or made by Prometheus or a recording rule), every label it matches on exists on
// that metric or is a target label, every label it groups by exists on one of its metrics,
// and an le it selects is a real bucket bound.
func (x exposition) checkExpr(e promExpr, recorded map[string]bool) []error {
	f, err := analyze(e.Expr)
	if err != nil {
		return []error{err}
	}
	var errs []error
	known := map[string]bool{}
	for _, l := range targetLabels {
		known[l] = true
	}
	exprLabels := withLabel(known, "", false)
	for _, vs := range f.Selectors {
		name := selectorName(vs)
		var lbls map[string]bool
		fam := name
		switch {
		case slices.Contains(synthesized, name):
			lbls = map[string]bool{}
		case recorded[name]:
			continue // its labels are those of its own expression, checked there
		default:
			var ok bool
			fam, lbls, ok = x.resolve(name)
			if !ok {
				errs = append(errs, fmt.Errorf("metric %s is not exposed by any service", name))
				continue
			}
		}
		for l := range lbls {
			exprLabels[l] = true
		}
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName {
				continue
			}
			if !lbls[m.Name] && !known[m.Name] {
				errs = append(errs, fmt.Errorf("%s: label %s does not exist on %s (it has %v)", vs, m.Name, name, sortedKeys(lbls)))
			}
			if m.Name == "le" && (m.Type == labels.MatchEqual || m.Type == labels.MatchRegexp) &&
				!slices.ContainsFunc(x[fam].Bounds, m.Matches) {
				errs = append(errs, fmt.Errorf("%s: %s matches no bucket of %s (bounds %v)", vs, m, fam, x[fam].Bounds))
			}
		}
	}
	for _, l := range append(f.Grouping, e.Label) {
		if l != "" && !exprLabels[l] {
			errs = append(errs, fmt.Errorf("label %s is on none of the expression's metrics (they have %v)", l, sortedKeys(exprLabels)))
		}
	}
	return errs
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestExpositionChecksCanFail keeps checkExpr honest on a small exposition: a misspelled
// metric, a histogram's bare family name, a label the metric lacks and a bucket that does
// not exist are refused; histogram suffixes, target labels and up are accepted.
func TestExpositionChecksCanFail(t *testing.T) {
	text := `# TYPE http_requests_total counter
http_requests_total{route="/a",method="GET",status="200"} 1
# TYPE http_request_duration_seconds histogram
http_request_duration_seconds_bucket{route="/a",method="GET",le="0.5"} 1
http_request_duration_seconds_bucket{route="/a",method="GET",le="+Inf"} 1
http_request_duration_seconds_sum{route="/a",method="GET"} 0.1
http_request_duration_seconds_count{route="/a",method="GET"} 1
`
	mfs, err := parseExposition(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	x := exposition{}
	x.add(mfs)
	for _, tc := range []struct {
		expr string
		ok   bool
	}{
		{`sum by (job, route) (rate(http_requests_total{namespace="x", status=~"5.."}[5m]))`, true},
		{`histogram_quantile(0.9, sum by (le) (rate(http_request_duration_seconds_bucket[5m])))`, true},
		{`rate(http_request_duration_seconds_sum[5m]) / rate(http_request_duration_seconds_count[5m])`, true},
		{`http_request_duration_seconds_bucket{le=~"0.5(\\.0)?"}`, true},
		{`up{job="stats-svc"} == 0`, true},
		{`rate(http_request_total[5m])`, false},
		{`rate(http_request_duration_seconds[5m])`, false},
		{`rate(http_requests_total_count[5m])`, false},
		{`rate(http_requests_total{code="500"}[5m])`, false},
		{`sum by (code) (rate(http_requests_total[5m]))`, false},
		{`http_request_duration_seconds_bucket{le="600"}`, false},
		{`http_request_duration_seconds_sum{le="0.5"}`, false},
	} {
		errs := x.checkExpr(promExpr{Expr: tc.expr}, nil)
		if (len(errs) == 0) != tc.ok {
			t.Errorf("%s: errors %v; want ok=%v", tc.expr, errs, tc.ok)
		}
	}
}

// TestMetricsExposed checks every metric name in every dashboard and alert rule against the
// /metrics of the three services, built from this workspace and running on SQLite: forum-svc
// and stats-svc answer a few requests, collector-svc passes against its fake Discord (behind
// a proxy that answers one request with a 429, which the fake never sends to a collector
// that keeps to its limits) and counts live from its gateway, so that every labelled series has
// appeared.
func TestMetricsExposed(t *testing.T) {
	var exprs []promExpr
	for _, d := range readDashboards(t) {
		e, err := dashboardExprs(d)
		if err != nil {
			t.Fatal(err)
		}
		exprs = append(exprs, e...)
	}
	pr := readRules(t)
	exprs = append(exprs, ruleExprs(rulesFile, pr)...)
	recorded := recordedNames(pr)

	sys := startSystem(t)
	// Labelled series appear with their first observation, and the collector's with its
	// passes: scrape until every expression is satisfied, for a minute at most.
	var x exposition
	failures := map[string][]error{}
	start := time.Now()
	deadline := start.Add(time.Minute)
	for scrapes := 1; ; scrapes++ {
		sys.exercise(t)
		x = sys.scrape(t)
		clear(failures)
		for _, e := range exprs {
			if errs := x.checkExpr(e, recorded); len(errs) > 0 {
				failures[e.Where] = errs
			}
		}
		if len(failures) == 0 {
			t.Logf("%d expressions satisfied after %d scrape(s), %v", len(exprs), scrapes, time.Since(start).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	for _, e := range exprs {
		for _, err := range failures[e.Where] {
			t.Errorf("%s\n\t%s\n\t%v", e.Where, e.Raw, err)
		}
	}
	if t.Failed() {
		t.Logf("families exposed: %v", sortedFamilies(x))
	}
}

func sortedFamilies(x exposition) []string {
	out := make([]string, 0, len(x))
	for k := range x {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// system is the three services running for TestMetricsExposed.
type system struct {
	forum, stats, collector *stack.Service
	forumKey                string
	conversation, message   int64
}

func startSystem(t *testing.T) *system {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	start := time.Now()
	bins, err := stack.Build(ctx, dir, stack.Forum, stack.Stats, stack.Collector)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("services built in %v", time.Since(start).Round(time.Millisecond))
	keep := func(p *stack.Proc) {
		t.Cleanup(func() {
			p.Stop(5 * time.Second)
			if t.Failed() {
				t.Logf("%s output (end):\n%s", p.Name, tailOf(p.Output(), 4000))
			}
		})
	}

	// The fake Discord with one server, and its catalog.
	fakeAddr, err := stack.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	catalog := filepath.Join(dir, "catalog.json")
	fake, err := stack.StartProc("fake-discord", bins[stack.Collector], []string{"LOG_FORMAT=json"},
		"fake-discord", "--addr", fakeAddr, "--guilds", "1", "--catalog", catalog)
	if err != nil {
		t.Fatal(err)
	}
	keep(fake)
	waitListening(t, fakeAddr, fake)
	if _, err := os.Stat(catalog); err != nil {
		t.Fatalf("fake-discord --catalog: %v", err)
	}
	proxy := httptest.NewServer(inject429(t, "http://"+fakeAddr, 5))
	t.Cleanup(proxy.Close)

	// collector-svc first: its serve migrates the reports database that stats-svc reads.
	reportsDB := "DATABASE_URL=sqlite:" + filepath.Join(dir, "stats.db")
	col, err := stack.StartService("collector-svc", bins[stack.Collector], []string{reportsDB,
		"DISCORD_API_BASE=" + proxy.URL + "/api/v10", "DISCORD_TOKEN=metrics-test-token",
		"CATALOG_FILE=" + catalog, "REFRESH_INTERVAL=1s",
		// Live counting too, through the same proxy (it forwards the gateway's websocket), so
		// that the collector_live_* series appear.
		"DISCORD_GATEWAY=on", "LIVE_FLUSH_INTERVAL=1s", "LIVE_SHARD_LOCK_RETRY=1s"})
	if err != nil {
		t.Fatal(err)
	}
	keep(col.Proc)
	// The reports file again as a "read replica": the replica's series
	// (db_replica_fallbacks_total) appear only when one is configured.
	readDB := "DATABASE_READ_URL=sqlite:" + filepath.Join(dir, "stats.db")
	stats, err := stack.StartService("stats-svc", bins[stack.Stats], []string{reportsDB, readDB})
	if err != nil {
		t.Fatal(err)
	}
	keep(stats.Proc)

	// forum-svc on a seeded database.
	fx := stack.NewForumFixture(30, 10)
	seed, err := fx.SeedJSON()
	if err != nil {
		t.Fatal(err)
	}
	seedFile := filepath.Join(dir, "seed.json")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	forumDB := "DATABASE_URL=sqlite:" + filepath.Join(dir, "forum.db")
	if out, err := stack.Run(ctx, 2*time.Minute, bins[stack.Forum], []string{forumDB}, "seed", "--file", seedFile); err != nil {
		t.Fatalf("forum-svc seed: %v\n%s", err, out)
	}
	forum, err := stack.StartService("forum-svc", bins[stack.Forum], []string{forumDB})
	if err != nil {
		t.Fatal(err)
	}
	keep(forum.Proc)
	return &system{forum: forum, stats: stats, collector: col, forumKey: fx.UserKey, conversation: fx.Own, message: fx.OwnMessage}
}

// exercise sends each service requests of its routes, answered with 2xx and 4xx, so that
// the request metrics have series with route, method and status.
func (s *system) exercise(t *testing.T) {
	t.Helper()
	conv := strconv.FormatInt(s.conversation, 10)
	reqs := []struct {
		svc          *stack.Service
		method, path string
		key          bool
	}{
		{s.forum, "GET", "/api/conversations/" + conv + "/messages?page=1", true},
		{s.forum, "GET", "/api/conversations/" + conv + "/", true},
		{s.forum, "GET", "/api/conversation-messages/" + strconv.FormatInt(s.message, 10) + "/", true},
		{s.forum, "POST", "/api/conversations/" + conv + "/mark-read", true},
		{s.forum, "GET", "/api/conversations/" + conv + "/messages", false},
		{s.stats, "GET", "/api/chat-statistics", false},
		{s.stats, "GET", "/api/chat-statistics?period=day&server=99999", false},
		{s.stats, "GET", "/api/chat-icons", false},
	}
	for _, svc := range []*stack.Service{s.forum, s.stats, s.collector} {
		for _, p := range []string{"/healthz", "/readyz"} {
			reqs = append(reqs, struct {
				svc          *stack.Service
				method, path string
				key          bool
			}{svc, "GET", p, false})
		}
	}
	client := &http.Client{Timeout: 10 * time.Second}
	for _, r := range reqs {
		req, err := http.NewRequest(r.method, r.svc.URL+r.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.key {
			req.Header.Set("Forum-Api-Key", s.forumKey)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", r.method, r.path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// scrape reads /metrics of the three services.
func (s *system) scrape(t *testing.T) exposition {
	t.Helper()
	x := exposition{}
	client := &http.Client{Timeout: 10 * time.Second}
	for _, svc := range []*stack.Service{s.forum, s.stats, s.collector} {
		resp, err := client.Get(svc.URL + "/metrics")
		if err != nil {
			t.Fatalf("%s /metrics: %v", svc.Name, err)
		}
		mfs, err := parseExposition(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s /metrics: %v", svc.Name, err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s /metrics: %s", svc.Name, resp.Status)
		}
		x.add(mfs)
	}
	return x
}

// inject429 forwards to target and answers its nth request with a user-scope 429 as Discord
// writes them.
func inject429(t *testing.T, target string, nth int64) http.Handler {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == nth {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-RateLimit-Scope", "user")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"message": "You are being rate limited.", "retry_after": 0.05, "global": false}`)
			return
		}
		proxy.ServeHTTP(w, r)
	})
}

func waitListening(t *testing.T, addr string, p *stack.Proc) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		select {
		case <-p.Done():
			t.Fatalf("%s exited:\n%s", p.Name, p.Output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not listen on %s:\n%s", p.Name, addr, p.Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
