package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"gorm.io/gorm"

	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/reports"
	"forumstats.local/stats-svc/internal/answers"
	"forumstats.local/stats-svc/internal/httpapi"
	"forumstats.local/stats-svc/internal/store"
	"forumstats.local/stats-svc/internal/web"
)

// chromium finds Debian's chromium. In CI (CI=true) its absence fails the test: .ci/run installs it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (apt-get install chromium; .ci/run does): the dashboard test cannot run")
	}
	t.Skip("chromium is not installed; set CHROMIUM or apt-get install chromium")
	return ""
}

// seed writes known data relative to today (Moscow): Alpha has a monthly report and daily
// reports for the last 30 days but one (a gap), one of them stale; Beta has nothing (missing).
func seed(t *testing.T, gdb *gorm.DB, now time.Time) (missing, stale reports.Day) {
	t.Helper()
	today, month := reports.DayOf(now), reports.MonthOf(now)
	missing, stale = today.AddDays(-10), today.AddDays(-20)
	err := gdb.Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&[]reports.CatalogServer{{Number: 1, Name: "Alpha", GuildID: "111"}, {Number: 2, Name: "Beta", GuildID: "222"}}).Error; err != nil {
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
		for i := 0; i < 30; i++ {
			d := today.AddDays(-i)
			if d == missing {
				continue
			}
			status := "ok"
			if d == stale {
				status = "stale"
			}
			total := int64(100 + i)
			if err := tx.Create(&reports.DailyReport{GuildID: "111", Day: d.String(), GeneratedAt: now, Status: status, TotalMessages: total}).Error; err != nil {
				return err
			}
			if err := tx.Create(&reports.DailyChannelCount{GuildID: "111", Day: d.String(), ChannelID: "10", Name: "general", Messages: total}).Error; err != nil {
				return err
			}
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

func TestDashboardInChromium(t *testing.T) {
	exe := chromium(t)
	gdb, err := db.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "stats.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(gdb) })
	if _, err := migrate.Up(context.Background(), gdb, reports.Migrations); err != nil {
		t.Fatal(err)
	}
	missing, stale := seed(t, gdb, time.Now())

	h := httpapi.New(store.New(gdb, answers.Links{CDN: "http://127.0.0.1:1"}), httpapi.Options{Now: time.Now,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Dashboard: web.New(web.Options{CDN: "http://127.0.0.1:1"})})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	opts := append([]chromedp.ExecAllocatorOption{},
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(390, 844))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()

	// Every request the page makes must go to the service: none leaves for the internet. The
	// page runs under its Content-Security-Policy: anything the policy blocks (the page's own
	// script or styles included) and any script error is a failure.
	var mu sync.Mutex
	var elsewhere, blocked []string
	pagePolicy := ""
	listenErr := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			if !strings.HasPrefix(ev.Request.URL, srv.URL+"/") && !strings.HasPrefix(ev.Request.URL, "data:") {
				elsewhere = append(elsewhere, ev.Request.URL)
			}
		case *network.EventResponseReceived:
			if ev.Response.URL == srv.URL+"/" {
				pagePolicy, _ = ev.Response.Headers["Content-Security-Policy"].(string)
			}
		case *cdplog.EventEntryAdded:
			if ev.Entry.Source == cdplog.EntrySourceSecurity || strings.Contains(ev.Entry.Text, "Content Security Policy") {
				blocked = append(blocked, ev.Entry.Text)
			}
		case *runtime.EventExceptionThrown:
			blocked = append(blocked, "exception: "+ev.ExceptionDetails.Text)
		}
	})

	if listenErr != nil {
		t.Fatalf("chromium: %v", listenErr)
	}
	type row struct{ Number, Name, Total, Status string }
	waitCtx, cancelWait := context.WithTimeout(ctx, 30*time.Second)
	defer cancelWait()
	if err := chromedp.Do(waitCtx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(srv.URL+"/"), chromedp.WaitReady(`body[data-ready]`)); err != nil {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("chromium: %v (blocked or failed: %q)", err, blocked)
	}
	readyState := evaluate[string](t, ctx, `document.body.dataset.ready`)
	readyErr := evaluate[string](t, ctx, `document.body.dataset.error || ""`)
	rows := evaluate[[]row](t, ctx, `[...document.querySelectorAll("#servers tbody tr")].map(tr => ({Number: tr.dataset.number, Name: tr.querySelector(".name").textContent, Total: tr.querySelector(".total").textContent, Status: tr.querySelector(".status").textContent}))`)
	alpha := evaluate[[]*float64](t, ctx, `dashboard.chart.data[1]`)
	alphaStale := evaluate[[]*float64](t, ctx, `dashboard.chart.data[2]`)
	channels := evaluate[[]row](t, ctx, `[...document.querySelectorAll("#channels tbody tr")].map(tr => ({Number: tr.dataset.id, Name: tr.cells[0].textContent, Total: tr.cells[1].textContent}))`)
	summaryTotal := evaluate[string](t, ctx, `document.getElementById("channels-summary").dataset.total`)
	scrollWidth := evaluate[int](t, ctx, `document.documentElement.scrollWidth`)
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if readyState != "true" {
		t.Fatalf("the page did not load its data: %s %s", readyState, readyErr)
	}
	png := filepath.Join(t.TempDir(), "dashboard.png")
	if err := os.WriteFile(png, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("DASHBOARD_SCREENSHOT_DIR"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, "dashboard.png"), shot, 0o644)
	}
	t.Logf("screenshot: %s (%d bytes)", png, len(shot))

	// The servers table shows what the API answers.
	var month struct {
		Servers []struct {
			Number        int
			Name          string
			TotalMessages *int64 `json:"totalMessages"`
			Status        string
		}
	}
	getJSON(t, srv.URL+"/api/chat-statistics", &month)
	if len(rows) != len(month.Servers) || len(rows) != 2 {
		t.Fatalf("rows %+v, API %+v", rows, month.Servers)
	}
	for i, s := range month.Servers {
		want := "—"
		if s.TotalMessages != nil {
			want = strings.ReplaceAll(fmt.Sprintf("%d", *s.TotalMessages), "", "")
			if *s.TotalMessages >= 1000 {
				want = strconv.FormatInt(*s.TotalMessages/1000, 10) + "," + fmt.Sprintf("%03d", *s.TotalMessages%1000)
			}
		}
		if rows[i].Number != strconv.Itoa(s.Number) || rows[i].Name != s.Name || rows[i].Total != want || rows[i].Status != s.Status {
			t.Errorf("row %d: %+v, API %+v (want total %q)", i, rows[i], s, want)
		}
	}
	if rows[0].Total != "1,234" || rows[1].Status != "missing" {
		t.Fatalf("rows %+v", rows)
	}

	// The chart: the API's series, the missing day a gap (null, never 0), the stale day marked.
	var series struct {
		Days    []string
		Servers []struct{ Totals []*int64 }
	}
	today := reports.DayOf(time.Now())
	getJSON(t, srv.URL+"/api/chat-series?from="+today.AddDays(-29).String()+"&to="+today.String(), &series)
	if len(alpha) != 30 || len(series.Days) != 30 {
		t.Fatalf("chart has %d points, series %d days", len(alpha), len(series.Days))
	}
	for i, d := range series.Days {
		api := series.Servers[0].Totals[i]
		got := alpha[i]
		if (api == nil) != (got == nil) || (api != nil && float64(*api) != *got) {
			t.Errorf("%s: chart %v, API %v", d, got, api)
		}
		switch d {
		case missing.String():
			if got != nil {
				t.Errorf("missing day %s drawn as %v, want a gap", d, *got)
			}
		case stale.String():
			if alphaStale[i] == nil {
				t.Errorf("stale day %s not marked", d)
			}
		default:
			if alphaStale[i] != nil {
				t.Errorf("day %s marked stale", d)
			}
		}
	}

	// The channels of server 1 for this month, as the API gives them.
	if len(channels) != 2 || channels[0].Name != "#general" || channels[0].Total != "1,000" || channels[1].Total != "234" || summaryTotal != "1234" {
		t.Fatalf("channels %+v, summary %q", channels, summaryTotal)
	}
	// Phone width: nothing wider than the 390-pixel screen.
	if scrollWidth > 390 {
		t.Errorf("page is %d px wide on a 390 px screen", scrollWidth)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(elsewhere) > 0 {
		t.Errorf("requests left the service: %v", elsewhere)
	}
	if len(blocked) > 0 {
		t.Errorf("blocked by the Content-Security-Policy or failed: %q", blocked)
	}
	if pagePolicy != web.ContentSecurityPolicy("http://127.0.0.1:1") {
		t.Errorf("the page was served with the policy %q", pagePolicy)
	}
}

func evaluate[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
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
