package web_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"gorm.io/gorm"

	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/reports"
	"forumstats.local/shared/testutil/browsertest"
	"forumstats.local/stats-svc/internal/answers"
	"forumstats.local/stats-svc/internal/httpapi"
	"forumstats.local/stats-svc/internal/store"
	"forumstats.local/stats-svc/internal/web"
)

// The seeded catalog's channels: general is the busiest every day; the other six are small, so
// that the channel trend draws five and sums two as "other".
var channelNames = []string{"general", "random", "help", "memes", "dev", "music", "games"}

// dayCounts are a seeded day's channel counts, i days before today.
func dayCounts(i int) []int64 {
	out := make([]int64, len(channelNames))
	out[0] = int64(50 + i)
	for k := 1; k < len(out); k++ {
		out[k] = int64((k*3 + i) % 7)
	}
	return out
}

// seed writes known data relative to today (Moscow): Alpha (an icon the CDN cannot serve) has
// this month's monthly report and daily reports for the last 70 days but one (missing, ten days
// ago), one of them stale (five days ago); Beta has nothing (missing everywhere).
func seed(t *testing.T, gdb *gorm.DB, now time.Time) (missing, stale reports.Day) {
	t.Helper()
	today, month := reports.DayOf(now), reports.MonthOf(now)
	missing, stale = today.AddDays(-10), today.AddDays(-5)
	icon := "a_icon"
	err := gdb.Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&[]reports.CatalogServer{{Number: 1, Name: "Alpha", GuildID: "111"}, {Number: 2, Name: "Beta", GuildID: "222"}}).Error; err != nil {
			return err
		}
		if err := tx.Create(&reports.Guild{GuildID: "111", Icon: &icon}).Error; err != nil {
			return err
		}
		if err := tx.Create(&reports.MonthlyReport{GuildID: "111", Month: month.String(), GeneratedAt: now, Status: "ok", TotalMessages: 1234}).Error; err != nil {
			return err
		}
		if err := tx.Create(&[]reports.MonthlyChannelCount{
			{GuildID: "111", Month: month.String(), ChannelID: "10", Name: "general", Messages: 1000},
			{GuildID: "111", Month: month.String(), ChannelID: "11", Name: "random", Messages: 234},
		}).Error; err != nil {
			return err
		}
		for i := 0; i < 70; i++ {
			d := today.AddDays(-i)
			if d == missing {
				continue
			}
			status := "ok"
			if d == stale {
				status = "stale"
			}
			var total int64
			for _, n := range dayCounts(i) {
				total += n
			}
			if err := tx.Create(&reports.DailyReport{GuildID: "111", Day: d.String(), GeneratedAt: now, Status: status, TotalMessages: total}).Error; err != nil {
				return err
			}
			for k, n := range dayCounts(i) {
				if err := tx.Create(&reports.DailyChannelCount{GuildID: "111", Day: d.String(), ChannelID: strconv.Itoa(10 + k), Name: channelNames[k], Messages: n}).Error; err != nil {
					return err
				}
			}
		}
		// Live counts: Alpha counted since 70 days ago, 40 messages in today's first hour and 2 in
		// its second (Moscow); Beta never counted.
		since := (today.AddDays(-70).Start().UnixMilli() - reports.DiscordEpoch) << 22
		if err := tx.Exec("INSERT INTO live_guilds (guild_id, since_id) VALUES ('111', ?)", since).Error; err != nil {
			return err
		}
		h0 := reports.LiveHour(today.Start())
		if err := tx.Exec("INSERT INTO live_counts (guild_id, hour, channel_id, messages) VALUES ('111', ?, '', 40), ('111', ?, '10', 40), ('111', ?, '', 2)",
			h0, h0, h0+1).Error; err != nil {
			return err
		}
		_, err := reports.BumpGeneration(tx)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return missing, stale
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, res.StatusCode)
	}
	if err := json.NewDecoder(res.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// hit is one request the service answered, with the gzip size of its body.
type hit struct {
	Path, Query, IfNoneMatch string
	Status                   int
	Bytes, Gzip              int
}

// recorder counts what the browser asks of the service: the 304 refresh and the first load's
// weight are measured at the server, not guessed from the page.
type recorder struct {
	h    http.Handler
	mu   sync.Mutex
	hits []hit
	// doc, when set, is served as /api/openapi.json instead of the service's: a later API.
	doc []byte
}

type capture struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (c *capture) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *capture) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	c.body.Write(b)
	return c.ResponseWriter.Write(b)
}

func (c *capture) Unwrap() http.ResponseWriter { return c.ResponseWriter }

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := &capture{ResponseWriter: w}
	rec.mu.Lock()
	doc := rec.doc
	rec.mu.Unlock()
	if doc != nil && r.URL.Path == "/api/openapi.json" {
		c.Header().Set("Content-Type", "application/json")
		_, _ = c.Write(doc)
	} else {
		rec.h.ServeHTTP(c, r)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(c.body.Bytes())
	_ = zw.Close()
	size := gz.Len()
	switch {
	case c.body.Len() == 0:
		size = 0
	case c.Header().Get("Content-Encoding") == "gzip":
		size = c.body.Len() // the service compressed it already
	}
	rec.mu.Lock()
	rec.hits = append(rec.hits, hit{r.URL.Path, r.URL.RawQuery, r.Header.Get("If-None-Match"), c.status, c.body.Len(), size})
	rec.mu.Unlock()
}

// take returns the requests recorded since the last take and forgets them.
func (rec *recorder) take() []hit {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	h := rec.hits
	rec.hits = nil
	return h
}

// browser is one Chromium tab on the test's service.
type browser struct {
	t         *testing.T
	ctx       context.Context
	base      string
	artifacts string
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("chromium: %v", err)
	}
}

// on is the tab for a subtest: its failures are the subtest's.
func (b *browser) on(t *testing.T) *browser {
	c := *b
	c.t = t
	return &c
}

// open loads the page at query and waits until it has drawn its data (or failed to).
func (b *browser) open(query string) {
	b.t.Helper()
	b.do(chromedp.Navigate(b.base+"/"+query), chromedp.WaitReady(`body[data-ready]`))
	if got := evaluate[string](b.t, b.ctx, `document.body.dataset.ready + " " + (document.body.dataset.error || "")`); got != "true " {
		b.t.Fatalf("%s: the page did not load its data: %q", query, got)
	}
}

// waitFor polls a JavaScript predicate until it holds.
func (b *browser) waitFor(what, expr string, timeout time.Duration) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		b.t.Fatalf("%s: %s never held: %v", what, expr, err)
	}
}

// screenshot saves the whole page as name under the artifacts directory and prints its path.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	shot, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	p := filepath.Join(b.artifacts, name)
	if err := os.WriteFile(p, shot, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s (%d bytes)", p, len(shot))
}

// fits checks the page at width × height: nothing wider than the viewport, and every chart's
// canvas as wide as its container (the ResizeObserver's setSize may land a frame later).
func (b *browser) fits(width, height int64) {
	b.t.Helper()
	b.do(chromedp.EmulateViewport(width, height))
	b.waitFor(fmt.Sprintf("charts at %d px", width), `innerWidth === `+strconv.FormatInt(width, 10)+` && [...document.querySelectorAll(".chart")].every(el => {
		const c = el.querySelector("canvas");
		return c && Math.abs(c.getBoundingClientRect().width - el.clientWidth) <= 1;
	})`, 5*time.Second)
	type size struct{ Scroll, Inner, Chart, Canvas int }
	s := evaluate[size](b.t, b.ctx, `({Scroll: document.documentElement.scrollWidth, Inner: innerWidth,
		Chart: document.getElementById("chart").clientWidth, Canvas: Math.round(document.querySelector("#chart canvas").getBoundingClientRect().width)})`)
	if s.Scroll > s.Inner {
		b.t.Errorf("at %d×%d the page is %d px wide: wider than the viewport", width, height, s.Scroll)
	}
	// The tables sit in scrolling boxes as a last resort; from 320 px they fit without.
	if over := evaluate[[]string](b.t, b.ctx, `[...document.querySelectorAll(".scroll")].filter(el => el.scrollWidth > el.clientWidth).map(el => el.firstElementChild.id + " " + el.scrollWidth + ">" + el.clientWidth)`); len(over) > 0 {
		b.t.Errorf("at %d px tables scroll sideways: %v", width, over)
	}
	if s.Chart > s.Inner || s.Chart < s.Inner/2 {
		b.t.Errorf("at %d px the chart's container is %d px", width, s.Chart)
	}
}

// luminance and contrast are WCAG 2's relative luminance and contrast ratio.
func luminance(rgb [3]float64) float64 {
	var l [3]float64
	for i, c := range rgb {
		c /= 255
		if c <= 0.04045 {
			l[i] = c / 12.92
		} else {
			l[i] = math.Pow((c+0.055)/1.055, 2.4)
		}
	}
	return 0.2126*l[0] + 0.7152*l[1] + 0.0722*l[2]
}

func contrast(a, b [3]float64) float64 {
	la, lb := luminance(a), luminance(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

func hexColor(t *testing.T, s string) [3]float64 {
	t.Helper()
	var r, g, b int
	if _, err := fmt.Sscanf(s, "#%02x%02x%02x", &r, &g, &b); err != nil || len(s) != 7 {
		t.Fatalf("colour %q is not #rrggbb", s)
	}
	return [3]float64{float64(r), float64(g), float64(b)}
}

type seriesAnswer struct {
	Timezone string
	Days     []string
	Servers  []struct {
		Number   int
		Name     string
		Totals   []*int64
		Statuses []string
		Channels []struct {
			ID, Name string
			Totals   []*int64
		}
	}
}

type statsAnswer struct {
	TotalMessages *int64
	ReadyServers  int
	Servers       []struct {
		Number        int
		Name          string
		TotalMessages *int64
		Status        string
	}
	Server struct {
		Name          string
		TotalMessages *int64
		Channels      []struct {
			ID, Name string
			Messages int64
		}
	}
}

func num(p *int64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatInt(*p, 10)
}

func TestDashboardInChromium(t *testing.T) {
	browsertest.Path(t, "the dashboard test") // fail before the setup when it is missing
	gdb, err := db.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "stats.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(gdb) })
	if _, err := migrate.Up(context.Background(), gdb, reports.Migrations); err != nil {
		t.Fatal(err)
	}
	missing, stale := seed(t, gdb, time.Now())
	today := reports.DayOf(time.Now())
	month := reports.MonthOf(time.Now())

	const cdn = "http://127.0.0.1:1" // nothing listens there: every icon fails to load
	h := httpapi.New(store.New(gdb, answers.Links{CDN: cdn}), httpapi.Options{Now: time.Now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Dashboard: web.New(web.Options{CDN: cdn})})
	rec := &recorder{h: h}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)

	artifacts := os.Getenv("TEST_ARTIFACTS")
	if artifacts == "" {
		artifacts = t.TempDir()
	} else if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}

	ctx := browsertest.Context(t, "the dashboard test", chromedp.WindowSize(390, 844))

	// Every request the page makes must go to the service (or to the CDN for icons): none
	// leaves for the internet. The page runs under its Content-Security-Policy: anything the
	// policy blocks and any script error is a failure.
	var mu sync.Mutex
	var elsewhere, blocked []string
	pagePolicy := ""
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			u := ev.Request.URL
			if !strings.HasPrefix(u, srv.URL+"/") && !strings.HasPrefix(u, cdn+"/") && !strings.HasPrefix(u, "data:") {
				elsewhere = append(elsewhere, u)
			}
		case *network.EventResponseReceived:
			if strings.HasPrefix(ev.Response.URL, srv.URL+"/?") || ev.Response.URL == srv.URL+"/" {
				pagePolicy, _ = ev.Response.Headers["Content-Security-Policy"].(string)
			}
		case *cdplog.EventEntryAdded:
			if ev.Entry.Source == cdplog.EntrySourceSecurity || strings.Contains(ev.Entry.Text, "Content Security Policy") {
				blocked = append(blocked, ev.Entry.Text)
			}
		case *runtime.EventExceptionThrown:
			blocked = append(blocked, "exception: "+ev.ExceptionDetails.Text+" "+ev.ExceptionDetails.Exception.Description)
		}
	}); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()
	b := &browser{t: t, ctx: ctx, base: srv.URL, artifacts: artifacts}
	// The visitor's device is in New York: the page must still count in the API's zone.
	b.do(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "America/New_York"})
		return err
	}), chromedp.EmulateViewport(390, 844))

	rec.take()
	b.open("")
	firstLoad := rec.take()

	t.Run("first load within budget", func(t *testing.T) {
		total, api := 0, 0
		var files []string
		for _, h := range firstLoad {
			total += h.Gzip
			if strings.HasPrefix(h.Path, "/api/") {
				api += h.Gzip
			}
			files = append(files, fmt.Sprintf("%s %d→%d", h.Path, h.Bytes, h.Gzip))
		}
		t.Logf("first load: %d requests, %d bytes gzip (API answers %d): %s", len(firstLoad), total, api, strings.Join(files, ", "))
		if total > 150*1024 {
			t.Errorf("the first load weighs %d bytes gzip, over 150 KB", total)
		}
		if len(firstLoad) < 8 {
			t.Errorf("the first load made %d requests: %v", len(firstLoad), firstLoad)
		}
	})

	// The benchmark times the first load by the page's own mark: one, once a chart is drawn
	// from the series the page asked for, and the same as dashboard.firstChart.
	t.Run("first chart marked once, after its data", func(t *testing.T) {
		b := b.on(t)
		b.waitFor("the first-chart mark", `performance.getEntriesByName("first-chart").length > 0`, 5*time.Second)
		type mark struct {
			Marks               int
			At, Dash, SeriesEnd float64
			Charts              int
		}
		m := evaluate[mark](t, b.ctx, `(() => {
			const marks = performance.getEntriesByName("first-chart");
			const series = performance.getEntriesByType("resource").filter((e) => e.name.includes("/api/chat-series"));
			return {Marks: marks.length, At: marks[0].startTime, Dash: dashboard.firstChart,
				SeriesEnd: Math.min(...series.map((e) => e.responseEnd)), Charts: document.querySelectorAll(".chart canvas").length};
		})()`)
		if m.Marks != 1 || m.At <= 0 || m.At != m.Dash {
			t.Errorf("first-chart: %d marks, at %v ms, dashboard.firstChart %v: want one mark, the same time", m.Marks, m.At, m.Dash)
		}
		if m.At < m.SeriesEnd || m.Charts == 0 {
			t.Errorf("first-chart at %v ms, before the first series answer ended (%v ms) or with no chart (%d canvases)", m.At, m.SeriesEnd, m.Charts)
		}
	})

	t.Run("servers, totals and the comparison", func(t *testing.T) {
		b := b.on(t)
		var cur, prev statsAnswer
		getJSON(t, srv.URL+"/api/chat-statistics?period=month&month="+month.String(), &cur)
		// The month in progress against the same days of the month before.
		n := today.Day
		pm := month.AddMonths(-1)
		if last := pm.Last().Day; n > last {
			n = last
		}
		pfrom := reports.Day{Year: pm.Year, Month: pm.Month, Day: 1}
		getJSON(t, srv.URL+"/api/chat-statistics?period=range&from="+pfrom.String()+"&to="+pfrom.AddDays(n-1).String(), &prev)
		type row struct{ Number, Name, Total, Status, Initials string }
		b.waitFor("icon fallback", `document.querySelector("#servers tr[data-number='1'] .initials")`, 5*time.Second)
		rows := evaluate[[]row](t, ctx, `[...document.querySelectorAll("#servers tbody tr")].map(tr => ({Number: tr.dataset.number,
			Name: tr.querySelector(".name").textContent, Total: tr.querySelector(".total").textContent,
			Status: tr.querySelector(".status").textContent, Initials: (tr.querySelector(".initials") || {}).textContent || ""}))`)
		want := []row{{"1", "Alpha", "1,234", "ok", "A"}, {"2", "Beta", "—", "missing", "B"}}
		if len(rows) != len(want) || len(cur.Servers) != 2 {
			t.Fatalf("rows %+v, API %+v", rows, cur.Servers)
		}
		for i := range want {
			if rows[i] != want[i] || cur.Servers[i].Name != want[i].Name || cur.Servers[i].Status != want[i].Status {
				t.Errorf("row %d: %+v, want %+v (API %+v)", i, rows[i], want[i], cur.Servers[i])
			}
		}
		type headline struct{ Total, Previous, Delta, Progress, Compare string }
		h := evaluate[headline](t, ctx, `({Total: document.getElementById("total").dataset.total, Previous: document.getElementById("compare").dataset.previous,
			Delta: document.getElementById("compare").dataset.delta, Progress: document.getElementById("progress").hidden ? "" : document.getElementById("progress").textContent,
			Compare: document.getElementById("compare").textContent})`)
		if prev.TotalMessages == nil || cur.TotalMessages == nil {
			t.Fatalf("the API has no totals to compare: %v %v", cur.TotalMessages, prev.TotalMessages)
		}
		if h.Total != num(cur.TotalMessages) || h.Previous != num(prev.TotalMessages) || h.Delta != strconv.FormatInt(*cur.TotalMessages-*prev.TotalMessages, 10) {
			t.Errorf("headline %+v, want total %d against %d", h, *cur.TotalMessages, *prev.TotalMessages)
		}
		if !strings.Contains(h.Progress, "in progress") || !strings.Contains(h.Compare, "against") {
			t.Errorf("headline %+v: the month in progress is not said so", h)
		}
		if got := evaluate[string](t, ctx, `location.search`); got != "?period=month&month="+month.String() {
			t.Errorf("the page's URL says %q", got)
		}
		upd := evaluate[string](t, ctx, `document.getElementById("updated").textContent`)
		if !strings.HasPrefix(upd, "Updated just now") && !strings.HasPrefix(upd, "Updated 1 min ago") {
			t.Errorf("updated: %q", upd)
		}
	})

	t.Run("daily trend: in progress, missing and stale", func(t *testing.T) {
		var series seriesAnswer
		first := reports.Day{Year: month.Year, Month: month.Month, Day: 1}
		getJSON(t, srv.URL+"/api/chat-series?from="+first.String()+"&to="+today.String(), &series)
		type line struct {
			Name   string
			Totals []*float64
			Marks  struct {
				Missing, Stale []int
				InProgress     int
			}
		}
		lines := evaluate[[]line](t, ctx, `dashboard.trend.lines`)
		if len(lines) != 2 || len(series.Servers) != 2 {
			t.Fatalf("%d lines, API %d servers", len(lines), len(series.Servers))
		}
		wantMissing, wantStale := 0, 0
		for i, s := range series.Servers {
			ln := lines[i]
			var miss, st []int
			for j, d := range series.Days {
				api, got := s.Totals[j], ln.Totals[j]
				if (api == nil) != (got == nil) || (api != nil && float64(*api) != *got) {
					t.Errorf("%s %s: chart %v, API %v", s.Name, d, got, api)
				}
				switch s.Statuses[j] {
				case "missing":
					miss = append(miss, j)
				case "stale":
					st = append(st, j)
				}
				if s.Number == 1 && d == missing.String() && s.Statuses[j] != "missing" {
					t.Errorf("the seeded missing day %s is %s", d, s.Statuses[j])
				}
			}
			wantMissing += len(miss)
			wantStale += len(st)
			if fmt.Sprint(ln.Marks.Missing) != fmt.Sprint(miss) && !(len(miss) == 0 && len(ln.Marks.Missing) == 0) {
				t.Errorf("%s: missing marks %v, want %v", s.Name, ln.Marks.Missing, miss)
			}
			if fmt.Sprint(ln.Marks.Stale) != fmt.Sprint(st) && !(len(st) == 0 && len(ln.Marks.Stale) == 0) {
				t.Errorf("%s: stale marks %v, want %v", s.Name, ln.Marks.Stale, st)
			}
			if ln.Marks.InProgress != len(series.Days)-1 {
				t.Errorf("%s: in progress at %d, want today (%d)", s.Name, ln.Marks.InProgress, len(series.Days)-1)
			}
		}
		type counts struct{ Missing, Stale, InProgress, Text string }
		c := evaluate[counts](t, ctx, `({Missing: document.getElementById("marks").dataset.missing, Stale: document.getElementById("marks").dataset.stale,
			InProgress: document.getElementById("marks").dataset.inProgress, Text: document.getElementById("marks").textContent})`)
		if c.Missing != strconv.Itoa(wantMissing) || c.Stale != strconv.Itoa(wantStale) || c.InProgress != "true" || !strings.Contains(c.Text, "today, in progress") {
			t.Errorf("marks %+v, want %d missing, %d stale, today in progress", c, wantMissing, wantStale)
		}
		// One legend entry per server, Beta's counting every day missing.
		legend := evaluate[[]string](t, ctx, `[...document.querySelectorAll("#legend li")].map(li => li.querySelector(".name").textContent + "|" + ((li.querySelector(".counts") || {}).textContent || ""))`)
		if len(legend) != 2 || !strings.HasPrefix(legend[0], "Alpha|") || legend[1] != fmt.Sprintf("Beta| (%d missing)", len(series.Days)) {
			t.Errorf("legend %q", legend)
		}
	})

	t.Run("channel trend of the busiest server", func(t *testing.T) {
		var series seriesAnswer
		first := reports.Day{Year: month.Year, Month: month.Month, Day: 1}
		getJSON(t, srv.URL+"/api/chat-series?server=1&from="+first.String()+"&to="+today.String(), &series)
		chans := series.Servers[0].Channels
		if len(chans) != len(channelNames) {
			t.Fatalf("the API has %d channels", len(chans))
		}
		// The API orders channels by their sum: the first five by name, the rest summed.
		type line struct {
			Name   string
			Totals []*float64
			Other  bool
		}
		want := make([]line, 0, 6)
		for _, c := range chans[:5] {
			l := line{Name: "#" + c.Name}
			for _, v := range c.Totals {
				if v == nil {
					l.Totals = append(l.Totals, nil)
				} else {
					f := float64(*v)
					l.Totals = append(l.Totals, &f)
				}
			}
			want = append(want, l)
		}
		other := line{Name: "other (2 channels)", Other: true}
		for j := range series.Days {
			var sum float64
			known := false
			for _, c := range chans[5:] {
				if c.Totals[j] != nil {
					known = true
					sum += float64(*c.Totals[j])
				}
			}
			if known {
				s := sum
				other.Totals = append(other.Totals, &s)
			} else {
				other.Totals = append(other.Totals, nil)
			}
		}
		want = append(want, other)
		got := evaluate[[]line](t, ctx, `dashboard.channelTrend`)
		if fmt.Sprint(jsonOf(t, got)) != fmt.Sprint(jsonOf(t, want)) {
			t.Errorf("channel trend\n got %s\nwant %s", jsonOf(t, got), jsonOf(t, want))
		}
		type row struct{ Name, Total string }
		rows := evaluate[[]row](t, ctx, `[...document.querySelectorAll("#channels tbody tr")].map(tr => ({Name: tr.cells[0].textContent, Total: tr.cells[1].textContent}))`)
		if fmt.Sprint(rows) != "[{#general 1,000} {#random 234}]" {
			t.Errorf("channels %+v", rows)
		}
		title := evaluate[string](t, ctx, `document.getElementById("channels-title").textContent`)
		if !strings.HasPrefix(title, "Channels of Alpha (the busiest") {
			t.Errorf("channels title %q", title)
		}
	})

	t.Run("time zone picker follows the API", func(t *testing.T) {
		// The API takes tz: the picker is enabled, starts in the API's own zone (whatever the
		// device's), whose addresses carry no tz, and offers only zones a whole number of hours
		// off UTC.
		type tz struct {
			Value, Note      string
			Disabled         bool
			Options          int
			Kolkata, NewYork bool
		}
		got := evaluate[tz](t, ctx, `(() => { const s = document.getElementById("tz"); const has = (z) => [...s.options].some(o => o.value === z);
			return {Value: s.value, Disabled: s.disabled, Note: document.getElementById("tz-note").textContent, Options: s.options.length,
				Kolkata: has("Asia/Kolkata"), NewYork: has("America/New_York")}; })()`)
		if got.Value != "Europe/Moscow" || got.Disabled || got.Options < 100 || got.Kolkata || !got.NewYork || !strings.HasPrefix(got.Note, "Days are counted in Europe/Moscow.") {
			t.Errorf("zone picker %+v", got)
		}
		activity := false
		for _, h := range firstLoad {
			if strings.Contains(h.Query, "tz=") {
				t.Errorf("%s?%s: tz sent for the API's own zone", h.Path, h.Query)
			}
			activity = activity || h.Path == "/api/chat-activity"
		}
		if !activity {
			t.Error("the first load did not ask chat-activity")
		}
	})

	t.Run("CSV links and a download", func(t *testing.T) {
		b := b.on(t)
		first := reports.Day{Year: month.Year, Month: month.Month, Day: 1}
		links := evaluate[map[string]string](t, ctx, `Object.fromEntries(["servers-csv", "series-csv", "channels-csv"].map(id => [id, document.getElementById(id).href]))`)
		want := map[string]string{
			"servers-csv":  srv.URL + "/api/chat-statistics?period=month&month=" + month.String() + "&format=csv",
			"series-csv":   srv.URL + "/api/chat-series?from=" + first.String() + "&to=" + today.String() + "&format=csv",
			"channels-csv": srv.URL + "/api/chat-statistics?period=month&month=" + month.String() + "&server=1&format=csv",
		}
		for id, w := range want {
			if links[id] != w {
				t.Errorf("%s: %q, want %q", id, links[id], w)
			}
		}
		// Following a link downloads the API's CSV under its own name.
		dir := t.TempDir()
		b.do(chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			_, err := cdp.Call(ctx, chromedp.FromContext(ctx).Browser, cdpbrowser.SetDownloadBehavior,
				cdpbrowser.SetDownloadBehaviorParams{Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir})
			return err
		}), chromedp.Evaluate[chromedp.Void](`document.getElementById("series-csv").click()`))
		name := filepath.Join(dir, "chat-series-all-"+first.String()+"-"+today.String()+".csv")
		var got []byte
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if got, err = os.ReadFile(name); err == nil && bytes.HasSuffix(got, []byte("\r\n")) {
				break
			}
		}
		lines := strings.Split(strings.TrimSuffix(string(got), "\r\n"), "\r\n")
		if days := first.DaysUntil(today) + 1; len(lines) != 1+2*days || lines[0] != "date,server_number,server_name,guild_id,messages,status" ||
			!strings.HasPrefix(lines[1], first.String()+",1,Alpha,111,") || !strings.HasPrefix(lines[2], first.String()+",2,Beta,222,,missing") {
			entries, _ := os.ReadDir(dir)
			t.Errorf("downloaded %s (%v): %d lines, want 1 + 2 × %d: %.300q", name, entries, len(lines), days, got)
		}
	})

	t.Run("text, labels, keyboard and contrast", func(t *testing.T) {
		b := b.on(t)
		// User text only ever enters the DOM as text.
		for _, f := range []string{"app.js", "lib.js", "heatmap.js"} {
			src, err := os.ReadFile(filepath.Join("static", f))
			if err != nil {
				t.Fatal(err)
			}
			for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"} {
				if bytes.Contains(src, []byte(bad)) {
					t.Errorf("%s uses %s", f, bad)
				}
			}
		}
		// Every visible control has a name and is reached with Tab, in order.
		unnamed := evaluate[[]string](t, ctx, `[...document.querySelectorAll("input, select, button, a")].filter(el => el.checkVisibility() &&
			!((el.labels && el.labels.length && el.labels[0].textContent.trim()) || el.getAttribute("aria-label") || el.textContent.trim())).map(el => el.id || el.tagName)`)
		if len(unnamed) > 0 {
			t.Errorf("controls without a label: %v", unnamed)
		}
		var reached []string
		b.do(chromedp.Evaluate[chromedp.Void](`document.activeElement && document.activeElement.blur()`))
		for i := 0; i < 12; i++ {
			b.do(chromedp.KeyEvent(kb.Tab))
			reached = append(reached, evaluate[string](t, ctx, `document.activeElement.id || document.activeElement.tagName`))
		}
		wantOrder := []string{"period", "month-input", "server", "show", "servers-csv", "series-csv", "channels-csv"}
		i := 0
		for _, id := range reached {
			if i < len(wantOrder) && id == wantOrder[i] {
				i++
			}
		}
		if i != len(wantOrder) {
			t.Errorf("Tab reached %v, want %v in that order", reached, wantOrder)
		}
		// WCAG AA: 4.5:1 for text (3:1 from 24 px, or 18.66 px bold), over the background it sits on.
		type sample struct {
			Text   string
			Fg, Bg []float64
			Size   float64
			Bold   bool
		}
		samples := evaluate[[]sample](t, ctx, `(() => {
			const parse = (c) => { const m = c.match(/rgba?\(([^)]+)\)/); if (!m) return null; const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number); return p.length === 3 ? [...p, 1] : p; };
			const bg = (el) => { for (let e = el; e; e = e.parentElement) { const c = parse(getComputedStyle(e).backgroundColor); if (c && c[3] > 0) return c; } return [255, 255, 255, 1]; };
			const out = [];
			const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
			for (let n = w.nextNode(); n; n = w.nextNode()) {
				const el = n.parentElement;
				if (!n.textContent.trim() || el.closest("option, script, svg") || !el.checkVisibility()) continue;
				const cs = getComputedStyle(el);
				out.push({Text: n.textContent.trim().slice(0, 40), Fg: parse(cs.color), Bg: bg(el), Size: parseFloat(cs.fontSize), Bold: Number(cs.fontWeight) >= 700});
			}
			return out;
		})()`)
		if len(samples) < 20 {
			t.Fatalf("only %d text samples", len(samples))
		}
		for _, s := range samples {
			fg, bg := [3]float64{s.Fg[0], s.Fg[1], s.Fg[2]}, [3]float64{s.Bg[0], s.Bg[1], s.Bg[2]}
			for i := range fg { // a translucent colour over its background
				fg[i] = fg[i]*s.Fg[3] + bg[i]*(1-s.Fg[3])
			}
			min := 4.5
			if s.Size >= 24 || (s.Bold && s.Size >= 18.66) {
				min = 3
			}
			if r := contrast(fg, bg); r < min {
				t.Errorf("%q: contrast %.2f:1, under %.1f:1 (%v on %v)", s.Text, r, min, s.Fg, s.Bg)
			}
		}
		// The series colours: 4.5:1 on the white chart, so lines, markers and × read.
		colors := evaluate[[]string](t, ctx, `[...Array(8).keys()].map(i => "--c" + i).concat(["--other"]).map(v => getComputedStyle(document.documentElement).getPropertyValue(v).trim())`)
		for _, c := range colors {
			if r := contrast(hexColor(t, c), [3]float64{255, 255, 255}); r < 4.5 {
				t.Errorf("series colour %s: %.2f:1 on white", c, r)
			}
		}
	})

	t.Run("sizes 390, 320–1920, rotation, resize 390→1280", func(t *testing.T) {
		b := b.on(t)
		b.fits(390, 844)
		b.screenshot("dashboard-390.png")
		for _, s := range [][2]int64{{320, 640}, {844, 390}, {1920, 1080}} {
			b.fits(s[0], s[1])
		}
		b.fits(390, 844)
		b.fits(1280, 900)
		b.screenshot("dashboard-390-to-1280.png")
		w := evaluate[int](t, ctx, `dashboard.charts.main.width`)
		if w < 900 {
			t.Errorf("after 390→1280 the chart is %d px wide", w)
		}
		b.open("")
		b.fits(1280, 900)
		b.screenshot("dashboard-1280.png")
		b.fits(390, 844)
	})

	t.Run("a range of one server, shared by its URL", func(t *testing.T) {
		b := b.on(t)
		from := today.AddDays(-13)
		q := "?period=range&from=" + from.String() + "&to=" + today.String() + "&server=1"
		b.open(q)
		check := func() {
			t.Helper()
			type view struct {
				Search, Fields, Compare, Delta, Title string
				Total, Channels                       string
				Missing, Stale                        []int
				InProgress, Lines                     int
			}
			v := evaluate[view](t, ctx, `({Search: location.search, Total: document.getElementById("total").textContent,
				Channels: document.querySelector("#channels tbody").textContent,
				Fields: [...document.querySelectorAll("#view-form input")].filter(el => el.checkVisibility()).map(el => el.id).join(","),
				Compare: document.getElementById("compare").textContent, Delta: document.getElementById("compare").dataset.delta,
				Title: document.getElementById("channels-title").textContent,
				Missing: dashboard.trend.lines[0].marks.missing, Stale: dashboard.trend.lines[0].marks.stale,
				InProgress: dashboard.trend.lines[0].marks.inProgress, Lines: dashboard.trend.lines.length})`)
			if v.Search != q || v.Fields != "from-input,to-input" || v.Lines != 1 || v.Title != "Channels of Alpha" {
				t.Errorf("view %+v", v)
			}
			// The range holds a missing day: no total, so no comparison is made up.
			if v.Delta != "" || !strings.HasPrefix(v.Compare, "No comparison") || !strings.HasPrefix(v.Total, "No total") || !strings.HasPrefix(v.Channels, "No channel counts") {
				t.Errorf("comparison %q (delta %q) for a range without a total", v.Compare, v.Delta)
			}
			wantMissing, wantStale := []int{from.DaysUntil(missing)}, []int{from.DaysUntil(stale)}
			if fmt.Sprint(v.Missing) != fmt.Sprint(wantMissing) || fmt.Sprint(v.Stale) != fmt.Sprint(wantStale) || v.InProgress != 13 {
				t.Errorf("marks: missing %v, stale %v, in progress %d; want %v, %v, 13", v.Missing, v.Stale, v.InProgress, wantMissing, wantStale)
			}
			link := evaluate[string](t, ctx, `document.getElementById("series-csv").href`)
			if link != srv.URL+"/api/chat-series?from="+from.String()+"&to="+today.String()+"&server=1&format=csv" {
				t.Errorf("series CSV %q", link)
			}
		}
		check()
		b.do(chromedp.Reload(), chromedp.WaitReady(`body[data-ready="true"]`))
		check()
		b.screenshot("dashboard-range-390.png")
	})

	t.Run("a week against the week before; the form rewrites the URL", func(t *testing.T) {
		b := b.on(t)
		end := today.AddDays(-11)
		b.open("?period=week&date=" + end.String() + "&server=1")
		var cur, prev statsAnswer
		getJSON(t, srv.URL+"/api/chat-statistics?period=week&server=1&date="+end.String(), &cur)
		getJSON(t, srv.URL+"/api/chat-statistics?period=week&server=1&date="+end.AddDays(-7).String(), &prev)
		if cur.Server.TotalMessages == nil || prev.Server.TotalMessages == nil {
			t.Fatalf("the API has no weekly totals: %v %v", cur.Server.TotalMessages, prev.Server.TotalMessages)
		}
		type view struct{ Total, Previous, Delta, Label, Fields string }
		v := evaluate[view](t, ctx, `({Total: document.getElementById("total").dataset.total, Previous: document.getElementById("compare").dataset.previous,
			Delta: document.getElementById("compare").dataset.delta, Label: document.getElementById("date-label").textContent,
			Fields: [...document.querySelectorAll("#view-form input")].filter(el => el.checkVisibility()).map(el => el.id).join(",")})`)
		want := view{num(cur.Server.TotalMessages), num(prev.Server.TotalMessages), strconv.FormatInt(*cur.Server.TotalMessages-*prev.Server.TotalMessages, 10), "Week ending", "date-input"}
		if v != want {
			t.Errorf("week view %+v, want %+v", v, want)
		}
		b.do(chromedp.Evaluate[chromedp.Void](`(() => { const p = document.getElementById("period"); p.value = "day"; p.dispatchEvent(new Event("change")); })()`))
		b.waitFor("the day view", `location.search === "?period=day&date=`+end.String()+`&server=1" && document.getElementById("total").dataset.total !== "`+want.Total+`"`, 5*time.Second)
		if got := evaluate[int](t, ctx, `dashboard.trend.days.length`); got != 30 {
			t.Errorf("a day's chart has %d days, want the 30 that end on it", got)
		}
	})

	t.Run("a link to a server the catalog lacks shows all servers", func(t *testing.T) {
		b := b.on(t)
		b.open("?server=99")
		type view struct{ Search, Error string }
		v := evaluate[view](t, ctx, `({Search: location.search, Error: document.getElementById("error").hidden ? "" : document.getElementById("error").textContent})`)
		if v.Search != "?period=month&month="+month.String() || v.Error != "Server 99 is not in the catalog: showing all servers." {
			t.Errorf("%+v", v)
		}
	})

	t.Run("pure rules", func(t *testing.T) {
		type tc struct {
			Expr, Want string
		}
		for _, c := range []tc{
			{`l.previousView({period: "month", month: "2026-03", server: ""}, "2026-03-31")`, `{"period":"range","month":"2026-03","server":"","from":"2026-02-01","to":"2026-02-28"}`},
			{`l.previousView({period: "month", month: "2026-03", server: ""}, "2026-05-02")`, `{"period":"month","month":"2026-02","server":""}`},
			{`l.previousView({period: "month", month: "2026-01", server: ""}, "2026-01-05")`, `{"period":"range","month":"2026-01","server":"","from":"2025-12-01","to":"2025-12-05"}`},
			{`l.previousView({period: "range", from: "2026-03-01", to: "2026-03-31"}, "2026-05-02")`, `{"period":"range","from":"2026-01-29","to":"2026-02-28"}`},
			{`l.previousView({period: "week", date: "2026-03-03"}, "2026-05-02")`, `{"period":"week","date":"2026-02-24"}`},
			{`l.previousView({period: "day", date: "2024-03-01"}, "2026-05-02")`, `{"period":"day","date":"2024-02-29"}`},
			{`l.normalizeView({period: "year", month: "2026-13", date: "2026-02-30", from: "2026-01-01", to: "2026-03-01", server: "x"}, "2026-05-02")`,
				`{"period":"month","month":"2026-05","date":"2026-05-02","from":"2026-01-30","to":"2026-03-01","server":""}`},
			{`l.viewParams({period: "range", month: "2026-05", date: "2026-05-02", from: "2026-04-01", to: "2026-04-30", server: "7"}).toString()`, `"period=range&from=2026-04-01&to=2026-04-30&server=7"`},
			{`l.chartSpan({period: "month", month: "2026-05"}, "2026-05-02")`, `{"from":"2026-05-01","to":"2026-05-02"}`},
			{`l.chartSpan({period: "day", date: "2026-05-02"}, "2026-05-02")`, `{"from":"2026-04-03","to":"2026-05-02"}`},
			{`l.marks(["a", "b", "c", "d"], ["ok", "missing", "stale", "ok"], "d")`, `{"missing":[1],"stale":[2],"inProgress":3}`},
			{`l.change(150, 100)`, `{"delta":50,"pct":50,"text":"+50 (+50 %)"}`},
			{`l.change(1000, 1050)`, `{"delta":-50,"pct":-4.761904761904762,"text":"−50 (−4.8 %)"}`},
			{`l.change(5, 0)`, `{"delta":5,"pct":null,"text":"+5"}`},
			{`l.change(null, 5)`, `null`},
			{`l.ago("2026-05-02T10:00:00Z", new Date("2026-05-02T10:07:59Z"))`, `"7 min ago"`},
			{`l.ago("2026-05-02T10:00:00Z", new Date("2026-05-04T11:00:00Z"))`, `"2 days ago"`},
			{`[l.initials("alpha beta gamma"), l.initials("Ёлки-палки"), l.initials("!!!")]`, `["AB","ЁП","?"]`},
			{`l.channelTrend([{id: "2", name: "b", totals: [1, null]}, {id: "1", name: "a", totals: [1, null]}, {id: "3", name: "c", totals: [0, null]}], ["x", "y"], 1)`,
				`[{"id":"1","name":"#a","totals":[1,null],"sum":1},{"id":"","name":"other (2 channels)","totals":[1,null],"sum":1,"other":true}]`},
			{`l.acceptsParam({paths: {"/api/chat-series": {get: {parameters: [{$ref: "#/components/parameters/tz"}]}}}, components: {parameters: {tz: {name: "tz", in: "query"}}}}, "/api/chat-series", "tz")`, `true`},
			{`l.acceptsParam({paths: {"/api/chat-series": {get: {parameters: [{name: "tz", in: "header"}]}}}}, "/api/chat-series", "tz")`, `false`},
			{`l.acceptsParam(null, "/api/chat-series", "tz")`, `false`},
		} {
			got := evaluate[string](t, ctx, `import("/static/lib.js").then(l => JSON.stringify(`+c.Expr+`))`)
			if got != c.Want {
				t.Errorf("%s\n got %s\nwant %s", c.Expr, got, c.Want)
			}
		}
		// The API's own document: chat-series and chat-activity take tz, chat-statistics does not.
		if got := evaluate[string](t, ctx, `Promise.all([import("/static/lib.js"), fetch("/api/openapi.json").then(r => r.json())]).then(([l, d]) => JSON.stringify([l.acceptsParam(d, "/api/chat-series", "tz"), l.acceptsParam(d, "/api/chat-series", "from"), l.acceptsParam(d, "/api/chat-activity", "tz"), l.acceptsParam(d, "/api/chat-statistics", "tz"), l.hasPath(d, "/api/chat-activity")]))`); got != "[true,true,true,false,true]" {
			t.Errorf("the API's document read as %s", got)
		}
	})

	t.Run("heatmap renderer on a fixture", func(t *testing.T) {
		type out struct {
			Rects, Max   int
			Cells        map[string]string
			Width, Inner float64
		}
		got := evaluate[out](t, ctx, `import("/static/heatmap.js").then(h => {
			const box = document.createElement("div");
			document.body.appendChild(box);
			const r = h.renderHeatmap(box, [{hour: 0, count: 5}, {hour: 167, count: 50}, {hour: 30, count: 25}, {hour: 30, count: 25},
				{hour: 168, count: 99}, {hour: -1, count: 9}, {hour: 2.5, count: 9}, {hour: 5, count: -3}, {hour: 6, count: "7"}, null]);
			const cell = (i) => { const el = box.querySelector("rect[data-hour='" + i + "']"); return el.dataset.count + "|" + el.dataset.bucket + "|" + el.getAttribute("fill") + "|" + el.textContent; };
			const res = {Rects: box.querySelectorAll("rect").length, Max: r.max, Cells: {0: cell(0), 1: cell(1), 5: cell(5), 30: cell(30), 167: cell(167)},
				Width: box.querySelector("svg").getBoundingClientRect().width, Inner: innerWidth};
			box.remove();
			return res;
		})`)
		want := map[string]string{
			"0":   "5|1|#c6dbef|Mon 00:00–01:00: 5 messages",
			"1":   "0|0|#f0f4f8|Mon 01:00–02:00: 0 messages",
			"5":   "0|0|#f0f4f8|Mon 05:00–06:00: 0 messages",
			"30":  "50|5|#08519c|Tue 06:00–07:00: 50 messages",
			"167": "50|5|#08519c|Sun 23:00–24:00: 50 messages",
		}
		if got.Rects != 168 || got.Max != 50 || fmt.Sprint(got.Cells) != fmt.Sprint(want) {
			t.Errorf("heatmap %+v, want 168 cells, max 50, %v", got, want)
		}
		if got.Width <= 0 || got.Width > got.Inner {
			t.Errorf("heatmap %v px wide in a %v px viewport", got.Width, got.Inner)
		}
	})

	t.Run("heatmap drawn from chat-activity", func(t *testing.T) {
		b := b.on(t)
		b.open("")
		// Today's first two Moscow hours hold 40 and 2 messages: their cells in today's row.
		row := (int(time.Date(today.Year, today.Month, today.Day, 0, 0, 0, 0, time.UTC).Weekday()) + 6) % 7
		type out struct {
			Hidden        bool
			Max, Rects    int
			First, Second string
			Note, CSV     string
			Label         string
		}
		got := evaluate[out](t, ctx, `(() => { const box = document.getElementById("heatmap"); const c = (i) => { const el = box.querySelector("rect[data-hour='" + i + "']"); return el ? el.dataset.count + "|" + el.dataset.bucket : ""; };
			return {Hidden: document.getElementById("activity").hidden, Max: dashboard.heatmap.max, Rects: box.querySelectorAll("rect").length,
				First: c(`+strconv.Itoa(row*24)+`), Second: c(`+strconv.Itoa(row*24+1)+`), Note: document.getElementById("activity-note").textContent,
				CSV: document.getElementById("activity-csv").href, Label: box.querySelector("svg > title").textContent}; })()`)
		first := reports.Day{Year: month.Year, Month: month.Month, Day: 1}
		if got.Hidden || got.Rects != 168 || got.Max != 40 || got.First != "40|5" || got.Second != "2|1" ||
			!strings.Contains(got.Label, "all servers, Europe/Moscow") || !strings.Contains(got.Note, "not completely counted") ||
			got.CSV != srv.URL+"/api/chat-activity?from="+first.String()+"&to="+month.Last().String()+"&format=csv" {
			t.Errorf("heatmap %+v", got)
		}
	})

	t.Run("refresh: 304 without redraw, a change redrawn", func(t *testing.T) {
		b := b.on(t)
		from := today.AddDays(-13)
		b.open("?period=range&from=" + from.String() + "&to=" + today.String() + "&server=1&refresh=1")
		redraws := evaluate[int](t, ctx, `dashboard.redraws`)
		rec.take()
		b.waitFor("two refreshes", `dashboard.refreshes >= 2`, 10*time.Second)
		hits := rec.take()
		conditional := 0
		for _, h := range hits {
			if !strings.HasPrefix(h.Path, "/api/") {
				continue
			}
			if h.IfNoneMatch == "" || h.Status != http.StatusNotModified {
				t.Errorf("refresh of %s?%s: If-None-Match %q, status %d; want a 304", h.Path, h.Query, h.IfNoneMatch, h.Status)
			}
			conditional++
		}
		if conditional < 5 {
			t.Errorf("the refreshes asked %d conditional requests: %+v", conditional, hits)
		}
		if got := evaluate[int](t, ctx, `dashboard.redraws`); got != redraws {
			t.Errorf("redrawn %d times on 304s", got-redraws)
		}
		// New numbers for today: the next refresh gets a 200 and draws them.
		err := gdb.Transaction(func(tx *gorm.DB) error {
			if err := tx.Model(&reports.DailyReport{}).Where("guild_id = ? AND day = ?", "111", today.String()).Update("total_messages", 9999).Error; err != nil {
				return err
			}
			_, err := reports.BumpGeneration(tx)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		b.waitFor("the redraw", `dashboard.redraws > `+strconv.Itoa(redraws)+` && dashboard.trend.lines[0].totals[13] === 9999`, 10*time.Second)
		if got := evaluate[int](t, ctx, `dashboard.redraws`); got != redraws+1 {
			t.Errorf("one change redrawn %d times", got-redraws)
		}
		// A redraw is no first chart: the page's timeline keeps its one mark.
		if got := evaluate[int](t, ctx, `performance.getEntriesByName("first-chart").length`); got != 1 {
			t.Errorf("after a redraw the page has %d first-chart marks, want 1", got)
		}
	})

	t.Run("another zone asked of the operations that take it", func(t *testing.T) {
		b := b.on(t)
		b.open("?period=week&server=1")
		rec.take()
		b.do(chromedp.Evaluate[chromedp.Void](`(() => { const s = document.getElementById("tz"); s.value = "America/New_York"; s.dispatchEvent(new Event("change")); })()`))
		b.waitFor("the heatmap in New York", `(document.querySelector("#heatmap svg > title") || {}).textContent.includes("America/New_York")`, 10*time.Second)
		// A request is recorded once its answer is written, which the page may draw before the
		// recorder has appended it: the requests are gathered until both are seen or 5 s pass.
		asked := map[string]int{}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			for _, h := range rec.take() {
				if strings.HasPrefix(h.Path, "/api/chat-") {
					q, _ := url.ParseQuery(h.Query)
					asked[h.Path+" tz="+q.Get("tz")]++
				}
			}
			if asked["/api/chat-series tz=America/New_York"] > 0 && asked["/api/chat-activity tz=America/New_York"] > 0 || time.Now().After(deadline) {
				break
			}
		}
		// chat-statistics does not list tz: never asked with it.
		for k := range asked {
			if strings.HasPrefix(k, "/api/chat-statistics tz=") && k != "/api/chat-statistics tz=" {
				t.Errorf("chat-statistics asked with %s, which its document does not list", k)
			}
		}
		if asked["/api/chat-series tz=America/New_York"] == 0 || asked["/api/chat-activity tz=America/New_York"] == 0 {
			t.Errorf("the zone was not asked of chat-series and chat-activity: %v", asked)
		}
		type tz struct{ Value, Note, Page string }
		got := evaluate[tz](t, ctx, `({Value: document.getElementById("tz").value, Note: document.getElementById("tz-note").textContent, Page: location.search})`)
		if got.Value != "America/New_York" || !strings.HasPrefix(got.Note, "Days are counted in America/New_York.") || !strings.Contains(got.Page, "tz=America%2FNew_York") {
			t.Errorf("zone picker %+v", got)
		}
	})

	mu.Lock()
	defer mu.Unlock()
	if len(elsewhere) > 0 {
		t.Errorf("requests left the service: %v", elsewhere)
	}
	if len(blocked) > 0 {
		t.Errorf("blocked by the Content-Security-Policy or failed: %q", blocked)
	}
	if pagePolicy != web.ContentSecurityPolicy(cdn) {
		t.Errorf("the page was served with the policy %q", pagePolicy)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func evaluate[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// The page and its files are GET/HEAD only; anything else is the service's JSON error.
func TestRoutes(t *testing.T) {
	h := httpapi.New(nil, httpapi.Options{Now: time.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Dashboard: web.New(web.Options{CDN: "https://cdn.example"})})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	for _, tt := range []struct {
		method, path string
		header       [2]string
		status       int
		body, ctype  string
	}{
		{"GET", "/", [2]string{}, 200, "<title>Chat statistics</title>", "text/html"},
		{"HEAD", "/", [2]string{}, 200, "", "text/html"},
		{"GET", "/static/app.js", [2]string{}, 200, "api/chat-series", "text/javascript"},
		{"GET", "/static/vendor/uplot/uPlot.iife.min.js", [2]string{}, 200, "uPlot", "text/javascript"},
		{"GET", "/static/vendor/uplot/LICENSE", [2]string{}, 200, "MIT", "text/plain"},
		{"GET", "/static/nope.js", [2]string{}, 404, `{"error":"not_found"}`, "application/json"},
		{"GET", "/static/vendor/", [2]string{}, 404, `{"error":"not_found"}`, "application/json"},
		{"GET", "/static/", [2]string{}, 404, `{"error":"not_found"}`, "application/json"},
		{"GET", "/static/index.html", [2]string{}, 404, `{"error":"not_found"}`, "application/json"},
		{"POST", "/", [2]string{}, 405, `{"error":"method_not_allowed"}`, "application/json"},
		{"DELETE", "/static/app.js", [2]string{}, 405, `{"error":"method_not_allowed"}`, "application/json"},
		// The file server's refusals in the service's envelope, not net/http's plain text.
		{"GET", "/static/app.js", [2]string{"Range", "bytes=999999999-"}, 416, `{"error":"requested_range_not_satisfiable"}`, "application/json"},
		{"GET", "/", [2]string{"If-Match", `"x"`}, 412, `{"error":"precondition_failed"}`, "application/json"},
		{"GET", "/static/app.js", [2]string{"Range", "bytes=0-9"}, 206, "", "text/javascript"},
	} {
		req, _ := http.NewRequest(tt.method, srv.URL+tt.path, nil)
		if tt.header[0] != "" {
			req.Header.Set(tt.header[0], tt.header[1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tt.status || !strings.Contains(string(b), tt.body) || !strings.HasPrefix(res.Header.Get("Content-Type"), tt.ctype) {
			t.Errorf("%s %s: %d %q %.80s", tt.method, tt.path, res.StatusCode, res.Header.Get("Content-Type"), b)
		}
		// Every answer of the dashboard's routes, refusals included, carries the protective headers.
		for name, want := range map[string]string{
			"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https://cdn.example; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
			"Referrer-Policy":         "no-referrer",
			"X-Content-Type-Options":  "nosniff",
		} {
			if got := res.Header.Get(name); got != want {
				t.Errorf("%s %s: %s %q, want %q", tt.method, tt.path, name, got, want)
			}
		}
	}
}

// The policy names the CDN's origin only (scheme, host, port: a path in CDN_BASE_URL would
// narrow the policy to files under it, and links may leave it), never 'unsafe-inline', and
// forbids framing.
func TestContentSecurityPolicy(t *testing.T) {
	for _, tt := range []struct{ cdn, img string }{
		{"https://cdn.discordapp.com", "img-src 'self' https://cdn.discordapp.com;"},
		{"http://127.0.0.1:9000/cdn/", "img-src 'self' http://127.0.0.1:9000;"},
		{"", "img-src 'self';"},
	} {
		csp := web.ContentSecurityPolicy(tt.cdn)
		if !strings.Contains(csp, tt.img) || strings.Contains(csp, "unsafe") || !strings.Contains(csp, "frame-ancestors 'none'") ||
			!strings.HasPrefix(csp, "default-src 'none'; script-src 'self'; style-src 'self';") {
			t.Errorf("%q: %q", tt.cdn, csp)
		}
	}
}

// The page and its text files of 1 KiB or more go gzip-compressed to a client that accepts it,
// with Vary: Accept-Encoding and an ETag per coding (either revalidates); a Range, or a client
// without gzip, gets the identity bytes; HEAD gets GET's headers.
func TestStaticGzip(t *testing.T) {
	h := httpapi.New(nil, httpapi.Options{Now: time.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Dashboard: web.New(web.Options{})})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	// No transparent decoding: the test reads the bytes on the wire.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	get := func(method, path string, header ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res, b
	}
	for _, path := range []string{"/", "/static/app.js", "/static/app.css", "/static/vendor/uplot/uPlot.iife.min.js", "/static/vendor/uplot/uPlot.min.css"} {
		plain, body := get("GET", path)
		tag := plain.Header.Get("ETag")
		if plain.StatusCode != 200 || plain.Header.Get("Content-Encoding") != "" || plain.Header.Get("Content-Length") != strconv.Itoa(len(body)) ||
			len(tag) < 10 || tag[0] != '"' || plain.Header.Get("Vary") != "Accept-Encoding" {
			t.Fatalf("%s identity: %d Content-Encoding %q Content-Length %q for %d ETag %q Vary %q", path, plain.StatusCode,
				plain.Header.Get("Content-Encoding"), plain.Header.Get("Content-Length"), len(body), tag, plain.Header.Get("Vary"))
		}
		gzTag := strings.TrimSuffix(tag, `"`) + `-gzip"`
		z, zbody := get("GET", path, "Accept-Encoding", "gzip, br")
		if z.StatusCode != 200 || z.Header.Get("Content-Encoding") != "gzip" || z.Header.Get("ETag") != gzTag ||
			z.Header.Get("Content-Length") != strconv.Itoa(len(zbody)) || z.Header.Get("Content-Type") != plain.Header.Get("Content-Type") ||
			z.Header.Get("Vary") != "Accept-Encoding" || z.Header.Get("Content-Security-Policy") == "" || z.Header.Get("Cache-Control") != "public, max-age=60" {
			t.Fatalf("%s gzip: %d %v", path, z.StatusCode, z.Header)
		}
		zr, err := gzip.NewReader(bytes.NewReader(zbody))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if dec, err := io.ReadAll(zr); err != nil || !bytes.Equal(dec, body) || len(zbody) >= len(body) {
			t.Fatalf("%s: %d gzip bytes decode to %d bytes (%v), identity %d", path, len(zbody), len(dec), err, len(body))
		}
		if head, b := get("HEAD", path, "Accept-Encoding", "gzip"); len(b) != 0 || head.Header.Get("Content-Length") != z.Header.Get("Content-Length") ||
			head.Header.Get("ETag") != gzTag || head.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("%s HEAD gzip: %v", path, head.Header)
		}
		for _, tt := range []struct{ inm, ae, want string }{{tag, "gzip", gzTag}, {gzTag, "gzip", gzTag}, {gzTag, "", tag}, {tag, "", tag}} {
			r, b := get("GET", path, "If-None-Match", tt.inm, "Accept-Encoding", tt.ae)
			if r.StatusCode != 304 || len(b) != 0 || r.Header.Get("ETag") != tt.want {
				t.Fatalf("%s If-None-Match %s Accept-Encoding %q: %d ETag %q", path, tt.inm, tt.ae, r.StatusCode, r.Header.Get("ETag"))
			}
		}
		if r, b := get("GET", path, "If-None-Match", `"other"`, "Accept-Encoding", "gzip"); r.StatusCode != 200 || r.Header.Get("Content-Encoding") != "gzip" || !bytes.Equal(b, zbody) {
			t.Fatalf("%s: another tag answered %d", path, r.StatusCode)
		}
		// A range names offsets in the identity bytes: never compressed, validated by the identity tag.
		r, b := get("GET", path, "Range", "bytes=0-9", "Accept-Encoding", "gzip")
		if r.StatusCode != 206 || r.Header.Get("Content-Encoding") != "" || !bytes.Equal(b, body[:10]) || r.Header.Get("ETag") != tag {
			t.Fatalf("%s range: %d Content-Encoding %q %q", path, r.StatusCode, r.Header.Get("Content-Encoding"), b)
		}
		if r, b := get("GET", path, "Range", "bytes=0-9", "If-Range", tag, "Accept-Encoding", "gzip"); r.StatusCode != 206 || !bytes.Equal(b, body[:10]) {
			t.Fatalf("%s If-Range: %d", path, r.StatusCode)
		}
	}
	// A file under 1 KiB, or one that is not text, goes as it is, with its tag.
	for _, path := range []string{"/static/vendor/uplot/VERSION", "/static/vendor/uplot/LICENSE"} {
		r, _ := get("GET", path, "Accept-Encoding", "gzip")
		tag := r.Header.Get("ETag")
		if r.StatusCode != 200 || r.Header.Get("Content-Encoding") != "" || len(tag) < 10 {
			t.Fatalf("%s: %d Content-Encoding %q ETag %q", path, r.StatusCode, r.Header.Get("Content-Encoding"), tag)
		}
		if r, _ := get("GET", path, "If-None-Match", tag, "Accept-Encoding", "gzip"); r.StatusCode != 304 || r.Header.Get("ETag") != tag {
			t.Fatalf("%s revalidated: %d ETag %q", path, r.StatusCode, r.Header.Get("ETag"))
		}
	}
}
