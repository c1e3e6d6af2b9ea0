package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"forumstats.local/shared/reports"
	"forumstats.local/tools/stack"
)

const (
	statsPath    = "/api/chat-statistics"
	seriesPath   = "/api/chat-series"
	activityPath = "/api/chat-activity"
	// activityRange is the days of a cold activity request (the longest the API serves).
	activityRange = 31
	// activityZone is the zone measured against Moscow's (a DST zone behind UTC).
	activityZone = "America/New_York"
)

// results are the measured figures.
type results struct {
	cold      []time.Duration // in request order
	coldBytes int             // size of a cold answer
	series    []time.Duration // cold all-servers 366-day series, in request order
	seriesLen int             // size of a series answer
	warm      []warmRun
	compared  []compared // the -compare builds
	// activity and activityTZ are cold all-servers 31-day activity requests, in Moscow and in
	// activityZone, window by window; activityLen the size of a Moscow answer.
	activity, activityTZ []time.Duration
	activityLen          int
	dashboard            []dashLoad // the dashboard's first loads
}

// compared is a -compare build's cold latencies, window by window as this build's.
type compared struct {
	name         string
	cold, series []time.Duration
}

// warmRun is one warm-cache throughput comparison.
type warmRun struct {
	label     string
	target    string
	bytes     int
	real      float64 // stats-svc, requests/s
	bare      float64 // the bare net/http ceiling, requests/s
	slices    int
	sliceTime time.Duration
}

func measure(ctx context.Context, e *benchEnv, o options) (results, error) {
	var r results
	for _, name := range o.compare {
		r.compared = append(r.compared, compared{name: name})
	}
	if o.dashboardOnly {
		return r, measureDashboard(ctx, e, &r)
	}
	client := newClient(o.concurrency)
	if err := measureActivity(ctx, client, e, o, &r); err != nil {
		return r, err
	}
	if o.activityOnly {
		return r, nil
	}
	if err := measureCold(ctx, client, e, o, &r); err != nil {
		return r, err
	}
	from, to := e.today.AddDays(-30), e.today
	// The warm client asks no content coding (DisableCompression), as it always has: both sides
	// send the identity bytes. The gzip run asks gzip explicitly and reads the compressed bytes
	// undecoded, and the bare handler sends those same bytes: what a browser's request costs,
	// stats-svc compressing each answer once and keeping it.
	gzipClient := &http.Client{Timeout: client.Timeout, Transport: acceptGzip{client.Transport}}
	for _, t := range []struct {
		label, target string
		client        *http.Client
		encoding      string
	}{
		{"all servers, 31-day range", statsPath + "?period=range&from=" + from.String() + "&to=" + to.String(), client, ""},
		{"one server, one day", statsPath + "?period=day&server=1", client, ""},
		{"all servers, 31-day range, gzip", statsPath + "?period=range&from=" + from.String() + "&to=" + to.String(), gzipClient, "gzip"},
	} {
		w, err := measureWarm(ctx, t.client, e.svc.URL, t.target, t.encoding, o)
		if err != nil {
			return r, err
		}
		w.label = t.label
		r.warm = append(r.warm, w)
	}
	// Last: its new generations would turn the other measurements' warm answers cold.
	return r, measureDashboard(ctx, e, &r)
}

// measureCold times all-servers 31-day ranges, then all-servers 366-day series, each ending a day
// earlier than the one before: a new key each, so that the in-process cache and Redis miss and the
// database answers.
func measureCold(ctx context.Context, client *http.Client, e *benchEnv, o options, r *results) error {
	for _, m := range []struct {
		target func(end reports.Day) string
		this   *[]time.Duration
		size   *int
		other  func(c *compared) *[]time.Duration
	}{
		{func(end reports.Day) string {
			return fmt.Sprintf("%s?period=range&from=%s&to=%s", statsPath, end.AddDays(-30), end)
		}, &r.cold, &r.coldBytes, func(c *compared) *[]time.Duration { return &c.cold }},
		{func(end reports.Day) string {
			return fmt.Sprintf("%s?from=%s&to=%s", seriesPath, end.AddDays(-(seriesDays - 1)), end)
		}, &r.series, &r.seriesLen, func(c *compared) *[]time.Duration { return &c.series }},
	} {
		lat, size, err := timeWindows(ctx, client, e, o, m.target)
		if err != nil {
			return err
		}
		*m.this, *m.size = lat[0], size
		for i := range r.compared {
			*m.other(&r.compared[i]) = lat[i+1]
		}
	}
	return nil
}

// measureActivity times all-servers 31-day activity requests, each window ending a day earlier
// than the one before (a new key each), asked in Moscow and in activityZone alternately (the
// first of the pair alternating too), so that the machine's drift hits both alike.
func measureActivity(ctx context.Context, client *http.Client, e *benchEnv, o options, r *results) error {
	for i := range o.cold {
		end := e.today.AddDays(-i)
		base := fmt.Sprintf("%s%s?from=%s&to=%s", e.svc.URL, activityPath, end.AddDays(-(activityRange - 1)), end)
		targets := []struct {
			url string
			lat *[]time.Duration
		}{{base, &r.activity}, {base + "&tz=" + activityZone, &r.activityTZ}}
		if i%2 == 1 {
			targets[0], targets[1] = targets[1], targets[0]
		}
		for _, t := range targets {
			t0 := time.Now()
			n, err := get(ctx, client, t.url)
			if err != nil {
				return err
			}
			*t.lat = append(*t.lat, time.Since(t0))
			if t.lat == &r.activity {
				r.activityLen = n
			}
		}
	}
	return nil
}

// timeWindows times o.cold requests, one after the other, of the targets of windows ending
// today, yesterday, and so on, each asked of this build and of every -compare build, in rotating
// order; it returns each build's latencies in window order and the size of this build's answer.
func timeWindows(ctx context.Context, client *http.Client, e *benchEnv, o options, target func(end reports.Day) string) ([][]time.Duration, int, error) {
	svcs := append([]*stack.Service{e.svc}, e.others...)
	lat := make([][]time.Duration, len(svcs))
	var size int
	for i := range o.cold {
		for k := range svcs {
			s := (i + k) % len(svcs)
			t0 := time.Now()
			n, err := get(ctx, client, svcs[s].URL+target(e.today.AddDays(-i)))
			if err != nil {
				return nil, 0, err
			}
			lat[s] = append(lat[s], time.Since(t0))
			if s == 0 {
				size = n
			}
		}
	}
	return lat, size, nil
}

// seriesDays is the longest series the API serves.
const seriesDays = 366

// measureWarm compares stats-svc with a bare net/http process writing the same bytes: both warmed,
// then alternate slices of a second each for o.duration, so that a burst of load from elsewhere on
// the machine hits both alike.
// encoding is the Content-Encoding of the bytes the client reads undecoded ("": identity), which
// the bare handler announces with them.
func measureWarm(ctx context.Context, client *http.Client, svcURL, target, encoding string, o options) (warmRun, error) {
	w := warmRun{target: target, slices: max(1, int(o.duration/time.Second))}
	w.sliceTime = o.duration / time.Duration(w.slices)
	body, err := fetch(ctx, client, svcURL+target)
	if err != nil {
		return w, err
	}
	w.bytes = len(body)
	if encoding == "gzip" && !bytes.HasPrefix(body, []byte{0x1f, 0x8b}) {
		return w, fmt.Errorf("GET %s asking gzip: stats-svc sent %d bytes that are not gzip", target, len(body))
	}
	bare, err := startBare(target, body, encoding)
	if err != nil {
		return w, err
	}
	defer bare.Stop(5 * time.Second)
	bareURL, realURL := bare.URL+target, svcURL+target
	for _, u := range []string{bareURL, realURL} {
		if _, err := throughput(ctx, client, u, o.concurrency, 300*time.Millisecond); err != nil {
			return w, err
		}
	}
	for range w.slices {
		n, err := throughput(ctx, client, bareURL, o.concurrency, w.sliceTime)
		if err != nil {
			return w, err
		}
		w.bare += n / float64(w.slices)
		if n, err = throughput(ctx, client, realURL, o.concurrency, w.sliceTime); err != nil {
			return w, err
		}
		w.real += n / float64(w.slices)
	}
	return w, nil
}

// acceptGzip asks every request for gzip; over a transport that does not decode
// (DisableCompression), the client reads the compressed bytes as sent.
type acceptGzip struct{ next http.RoundTripper }

func (a acceptGzip) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Accept-Encoding", "gzip")
	return a.next.RoundTrip(r)
}

// bareCommand is the argument that makes this program the ceiling: `stats bare ADDR PATH FILE
// [ENCODING]`.
const bareCommand = "bare"

// startBare runs this program again as the ceiling, serving body at target's path, announced as
// encoding ("": identity).
func startBare(target string, body []byte, encoding string) (*stack.Service, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	file, err := stack.WriteTemp("", "stats-bench-body-*.json", body)
	if err != nil {
		return nil, err
	}
	defer os.Remove(file) // read at start, before the server answers
	addr, err := stack.FreeAddr()
	if err != nil {
		return nil, err
	}
	path, _, _ := strings.Cut(target, "?")
	args := []string{bareCommand, addr, path, file}
	if encoding != "" {
		args = append(args, encoding)
	}
	p, err := stack.StartProc("bare-http", self, nil, args...)
	if err != nil {
		return nil, err
	}
	s := &stack.Service{Proc: p, Addr: addr, URL: "http://" + addr}
	if err := stack.WaitHTTP(s.URL+target, http.StatusOK, 30*time.Second, p); err != nil {
		p.Kill()
		return nil, err
	}
	return s, nil
}

// serveBare is the ceiling: a bare net/http handler writing FILE's bytes at PATH on ADDR (with
// Content-Encoding ENCODING when given), until terminated.
func serveBare(args []string) error {
	if len(args) != 3 && len(args) != 4 {
		return fmt.Errorf("usage: %s ADDR PATH FILE [ENCODING]", bareCommand)
	}
	addr, path, file := args[0], args[1], args[2]
	encoding := ""
	if len(args) == 4 {
		encoding = args[3]
	}
	body, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+path, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if encoding != "" {
			w.Header().Set("Content-Encoding", encoding)
		}
		_, _ = w.Write(body)
	})
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return srv.ListenAndServe()
}

func newClient(conns int) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: conns * 2, MaxIdleConnsPerHost: conns * 2, IdleConnTimeout: time.Minute, DisableCompression: true,
	}}
}

// get requests target and reads the body away; it returns the body's size.
func get(ctx context.Context, c *http.Client, target string) (int, error) {
	n, err := do(ctx, c, target, io.Discard)
	return int(n), err
}

// fetch requests target and returns the body.
func fetch(ctx context.Context, c *http.Client, target string) ([]byte, error) {
	var b bytes.Buffer
	_, err := do(ctx, c, target, &b)
	return b.Bytes(), err
}

// do requests target and copies the body to w; an answer other than 200 is an error.
func do(ctx context.Context, c *http.Client, target string, w io.Writer) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return 0, err
	}
	res, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	n, err := io.Copy(w, res.Body)
	if err == nil && res.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: status %d", target, res.StatusCode)
	}
	return n, err
}

// throughput runs conns keep-alive clients in a loop for d; requests/s.
func throughput(ctx context.Context, c *http.Client, target string, conns int, d time.Duration) (float64, error) {
	var n atomic.Int64
	var firstErr error
	var once sync.Once
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	start := time.Now()
	for range conns {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if _, err := get(ctx, c, target); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	if n.Load() == 0 {
		return 0, errors.New("no request completed")
	}
	return float64(n.Load()) / time.Since(start).Seconds(), nil
}
