package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// dashboardLoads is how many first loads of the dashboard are measured (median and max
// reported), each in a browser of its own.
const dashboardLoads = 5

// dashLoad is one first load of the dashboard.
type dashLoad struct {
	firstChart time.Duration // performance.getEntriesByName("first-chart")[0].startTime
	wire       int64         // encodedDataLength summed over the service's responses
	gzip       int64         // the same bodies gzip-compressed, headers left out
	responses  []wireResponse
}

// wireResponse is one response of a first load, as Chromium received it.
type wireResponse struct {
	path     string
	encoding string // Content-Encoding, "" when sent as is
	bytes    int64  // encodedDataLength: headers and body as they crossed the wire
	body     int    // the body's length as decoded
	gzip     int    // the body's length gzip-compressed (default level): what gzip would send
	id       network.RequestID
}

// chromium finds Debian's chromium (or CHROMIUM). Without it the dashboard cannot be measured,
// and the run fails saying what to install.
func chromium() (string, error) {
	for _, p := range []string{os.Getenv("CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path, nil
		}
	}
	return "", errors.New("chromium is not installed (apt-get install chromium, or set CHROMIUM): the dashboard's first load cannot be measured")
}

// measureDashboard loads the dashboard dashboardLoads times, each on a cold server cache (a new
// data generation, which every cache key carries, so that neither the in-process cache nor Redis
// answers) and in a fresh Chromium (a user data directory of its own: nothing cached in the
// browser either).
func measureDashboard(ctx context.Context, e *benchEnv, r *results) error {
	exe, err := chromium()
	if err != nil {
		return err
	}
	pool, err := sql.Open("pgx", e.dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	for range dashboardLoads {
		if _, err := pool.ExecContext(ctx, "UPDATE collector_state SET generation = generation + 1 WHERE id = 1"); err != nil {
			return fmt.Errorf("new generation: %w", err)
		}
		// The service reads the generation every second: past two reads, it serves the new one.
		time.Sleep(2500 * time.Millisecond)
		l, err := loadDashboard(ctx, exe, e.svc.URL)
		if err != nil {
			return err
		}
		r.dashboard = append(r.dashboard, l)
	}
	return nil
}

// loadDashboard opens the dashboard once in a new headless Chromium, with the flags of the
// dashboard's tests, and returns when the page has drawn its first chart with data and every
// request it made on the way has finished.
func loadDashboard(ctx context.Context, exe, base string) (dashLoad, error) {
	var l dashLoad
	dir, err := os.MkdirTemp("", "stats-bench-chromium-*")
	if err != nil {
		return l, err
	}
	defer os.RemoveAll(dir)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(dir), chromedp.WindowSize(1280, 900))
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()

	// Every response of the service's origin, by request: its path and encoding on arrival, its
	// size on the wire once finished; a failed request counts as finished.
	var mu sync.Mutex
	paths := map[network.RequestID]wireResponse{}
	pending := map[network.RequestID]bool{}
	var done []wireResponse
	if err := chromedp.Listen(bctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			if strings.HasPrefix(ev.Request.URL, base+"/") {
				pending[ev.RequestID] = true
				paths[ev.RequestID] = wireResponse{path: strings.TrimPrefix(ev.Request.URL, base), id: ev.RequestID}
			}
		case *network.EventResponseReceived:
			if w, ok := paths[ev.RequestID]; ok {
				w.encoding, _ = ev.Response.Headers["Content-Encoding"].(string)
				if w.encoding == "" {
					w.encoding, _ = ev.Response.Headers["content-encoding"].(string)
				}
				paths[ev.RequestID] = w
			}
		case *network.EventLoadingFinished:
			if w, ok := paths[ev.RequestID]; ok && pending[ev.RequestID] {
				w.bytes = int64(ev.EncodedDataLength)
				done = append(done, w)
				delete(pending, ev.RequestID)
			}
		case *network.EventLoadingFailed:
			delete(pending, ev.RequestID)
		}
	}); err != nil {
		return l, fmt.Errorf("chromium: %w", err)
	}
	tctx, cancelT := context.WithTimeout(bctx, 60*time.Second)
	defer cancelT()
	// The browser asks for gzip only, so that the weight is that of the budget's encoding
	// whatever else Chromium would accept.
	gzipOnly := chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Accept-Encoding": "gzip"}})
		return err
	})
	if err := chromedp.Do(tctx, gzipOnly, chromedp.Navigate(base+"/"),
		chromedp.Poll[chromedp.Void](`document.body.dataset.ready === "error" ||
			(document.body.dataset.ready === "true" && performance.getEntriesByName("first-chart").length > 0)`, chromedp.WithPollingInterval(10*time.Millisecond))); err != nil {
		return l, fmt.Errorf("chromium: the dashboard did not load: %w", err)
	}
	type state struct {
		Error      string
		FirstChart float64
		Marks      int
	}
	st, err := chromedp.Run(tctx, chromedp.Evaluate[state](`({Error: document.body.dataset.error || "",
		Marks: performance.getEntriesByName("first-chart").length,
		FirstChart: (performance.getEntriesByName("first-chart")[0] || {startTime: -1}).startTime})`))
	if err != nil {
		return l, fmt.Errorf("chromium: %w", err)
	}
	if st.Error != "" {
		return l, fmt.Errorf("the dashboard failed to load its data: %s", st.Error)
	}
	if st.Marks != 1 {
		return l, fmt.Errorf("the dashboard drew its data with %d first-chart marks, not one", st.Marks)
	}
	l.firstChart = time.Duration(st.FirstChart * float64(time.Millisecond))
	// The first load ends when every request it started has finished (the icons' CDN is another
	// origin and not counted).
	for {
		mu.Lock()
		n := len(pending)
		mu.Unlock()
		if n == 0 {
			break
		}
		if tctx.Err() != nil {
			return l, fmt.Errorf("the dashboard's first load: %d requests never finished", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	l.responses = slices.Clone(done)
	mu.Unlock()
	// The bodies as received, compressed here: what the load would weigh if the service sent gzip.
	if err := chromedp.Do(tctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for i := range l.responses {
			res, err := cdp.Call(ctx, t, network.GetResponseBody, network.GetResponseBodyParams{RequestID: l.responses[i].id})
			if err != nil {
				return fmt.Errorf("the body of %s: %w", l.responses[i].path, err)
			}
			l.responses[i].body = len(res.Body)
			l.responses[i].gzip = gzipLen(res.Body)
		}
		return nil
	})); err != nil {
		return l, fmt.Errorf("chromium: %w", err)
	}
	sort.Slice(l.responses, func(i, j int) bool { return l.responses[i].path < l.responses[j].path })
	for _, w := range l.responses {
		l.wire += w.bytes
		l.gzip += int64(w.gzip)
	}
	return l, nil
}

// gzipLen is the length of b gzip-compressed at the default level.
func gzipLen(b []byte) int {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b) // a bytes.Buffer does not fail
	_ = zw.Close()
	return buf.Len()
}
