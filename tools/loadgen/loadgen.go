// Package loadgen drives HTTP targets at a fixed concurrency for a bounded time and measures
// throughput, latency percentiles and errors. It needs nothing but the standard library, so the
// figures of docs/reliability.md can be reproduced on any machine with Go.
package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Target is one request the generator sends, in turn with the others.
type Target struct {
	Method string
	URL    string
	Header http.Header
	Body   []byte
	// Expect lists the statuses that count as success; empty means any status below 500.
	Expect []int
}

// Config is one run.
type Config struct {
	Targets     []Target
	Concurrency int           // workers, each with one request in flight; default 64
	Duration    time.Duration // no request starts after it; default 10 s
	// Timeout bounds each request (in-flight requests at the end of Duration still get it, so
	// the run never cuts a request short); default 10 s.
	Timeout time.Duration
	// Header is added to every target's request.
	Header http.Header
	// Record keeps every request's Sample in Result.Samples (fault tests read the timeline).
	Record bool
	// Client overrides the keep-alive client built from Concurrency.
	Client *http.Client
}

// Sample is one request's outcome.
type Sample struct {
	Target  int
	Start   time.Time
	Latency time.Duration
	Status  int    // 0 on a transport error
	Err     string // transport error text
	Refused bool   // the connection was refused: the request never reached a server
	Body    string // the first bytes of the body of a failed request
}

// Failed reports whether the sample counts as an error for target t.
func (s Sample) Failed(t Target) bool {
	if s.Err != "" {
		return true
	}
	if len(t.Expect) > 0 {
		return !slices.Contains(t.Expect, s.Status)
	}
	return s.Status >= 500
}

// Result sums up a run.
type Result struct {
	Targets     int
	Concurrency int
	Elapsed     time.Duration // from the first start to the last answer
	Requests    int64
	Errors      int64 // Transport + Status5xx + Unexpected
	Transport   int64 // no HTTP answer (Refused included)
	Refused     int64
	Status5xx   int64
	Unexpected  int64 // an answer below 500 outside the target's Expect
	Statuses    map[int]int64
	P50, P90    time.Duration
	P99, Max    time.Duration
	// FirstErrors holds up to 20 failed samples, in the order they ended.
	FirstErrors []Sample
	Samples     []Sample // with Config.Record
}

// RPS is requests per second over the run.
func (r Result) RPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

const maxBodyKept = 512

// NewClient returns a keep-alive client that holds one idle connection per worker, so the run
// measures the service and not connection set-up.
func NewClient(concurrency int, timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        concurrency,
		MaxIdleConnsPerHost: concurrency,
		MaxConnsPerHost:     0,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

// Run drives cfg.Targets until cfg.Duration has passed or ctx is done, then waits for the
// requests in flight. It fails only for a bad configuration; request failures are in Result.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if len(cfg.Targets) == 0 {
		return Result{}, errors.New("no targets")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 64
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 10 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	for i, t := range cfg.Targets {
		if t.Method == "" {
			cfg.Targets[i].Method = http.MethodGet
		}
		if _, err := http.NewRequest(cfg.Targets[i].Method, t.URL, nil); err != nil {
			return Result{}, fmt.Errorf("target %d: %w", i, err)
		}
	}
	client := cfg.Client
	if client == nil {
		client = NewClient(cfg.Concurrency, cfg.Timeout)
		defer client.CloseIdleConnections()
	}

	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var (
		next    atomic.Uint64
		wg      sync.WaitGroup
		perWork = make([][]Sample, cfg.Concurrency)
	)
	start := time.Now()
	for w := range cfg.Concurrency {
		wg.Go(func() {
			var out []Sample
			for runCtx.Err() == nil {
				i := int(next.Add(1)-1) % len(cfg.Targets)
				out = append(out, do(client, cfg.Timeout, cfg.Header, i, cfg.Targets[i]))
			}
			perWork[w] = out
		})
	}
	wg.Wait()
	end := time.Now()

	var all []Sample
	for _, s := range perWork {
		all = append(all, s...)
	}
	res := summarize(cfg.Targets, all)
	res.Concurrency = cfg.Concurrency
	res.Elapsed = end.Sub(start)
	if cfg.Record {
		sort.Slice(all, func(a, b int) bool { return all[a].Start.Before(all[b].Start) })
		res.Samples = all
	}
	return res, nil
}

// do sends one request. Its context is not the run's: a request started before the end of the
// run is allowed to finish, so the end of a run never shows up as errors.
func do(client *http.Client, timeout time.Duration, extra http.Header, idx int, t Target) Sample {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var body io.Reader
	if t.Body != nil {
		body = bytes.NewReader(t.Body)
	}
	req, _ := http.NewRequestWithContext(ctx, t.Method, t.URL, body)
	for k, vs := range extra {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	for k, vs := range t.Header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if host := req.Header.Get("Host"); host != "" {
		req.Host = host
	}
	s := Sample{Target: idx, Start: time.Now()}
	resp, err := client.Do(req)
	if err != nil {
		s.Latency = time.Since(s.Start)
		s.Err = err.Error()
		s.Refused = errors.Is(err, syscall.ECONNREFUSED)
		return s
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	s.Latency = time.Since(s.Start)
	s.Status = resp.StatusCode
	if err != nil {
		s.Err = "reading body: " + err.Error()
	}
	if s.Failed(t) {
		s.Body = string(b[:min(len(b), maxBodyKept)])
	}
	return s
}

func summarize(targets []Target, all []Sample) Result {
	res := Result{Targets: len(targets), Statuses: map[int]int64{}}
	lat := make([]time.Duration, 0, len(all))
	var failed []Sample
	for _, s := range all {
		res.Requests++
		if s.Status != 0 {
			res.Statuses[s.Status]++
			lat = append(lat, s.Latency)
		}
		if !s.Failed(targets[s.Target]) {
			continue
		}
		res.Errors++
		switch {
		case s.Err != "":
			res.Transport++
			if s.Refused {
				res.Refused++
			}
		case s.Status >= 500:
			res.Status5xx++
		default:
			res.Unexpected++
		}
		failed = append(failed, s)
	}
	slices.SortFunc(failed, func(a, b Sample) int { return a.Start.Add(a.Latency).Compare(b.Start.Add(b.Latency)) })
	res.FirstErrors = failed[:min(len(failed), 20)]
	slices.Sort(lat)
	res.P50, res.P90, res.P99 = Percentile(lat, 50), Percentile(lat, 90), Percentile(lat, 99)
	if len(lat) > 0 {
		res.Max = lat[len(lat)-1]
	}
	return res
}

// Percentile returns the p-th percentile (nearest rank) of sorted durations, 0 for none.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(float64(len(sorted))*p/100+0.999999999) - 1
	return sorted[max(0, min(rank, len(sorted)-1))]
}

// Format writes the human-readable summary.
func (r Result) Format(w io.Writer) {
	fmt.Fprintf(w, "targets: %d  concurrency: %d  elapsed: %.1fs\n", r.Targets, r.Concurrency, r.Elapsed.Seconds())
	fmt.Fprintf(w, "requests: %d  rate: %.1f req/s\n", r.Requests, r.RPS())
	fmt.Fprintf(w, "latency: p50 %s  p90 %s  p99 %s  max %s\n", ms(r.P50), ms(r.P90), ms(r.P99), ms(r.Max))
	codes := make([]int, 0, len(r.Statuses))
	for c := range r.Statuses {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	parts := make([]string, 0, len(codes))
	for _, c := range codes {
		parts = append(parts, strconv.Itoa(c)+"="+strconv.FormatInt(r.Statuses[c], 10))
	}
	fmt.Fprintf(w, "statuses: %s\n", strings.Join(parts, " "))
	fmt.Fprintf(w, "errors: %d (transport %d [refused %d], 5xx %d, unexpected status %d)\n",
		r.Errors, r.Transport, r.Refused, r.Status5xx, r.Unexpected)
	for _, s := range r.FirstErrors {
		what := s.Err
		if what == "" {
			what = fmt.Sprintf("status %d %s", s.Status, strings.TrimSpace(s.Body))
		}
		fmt.Fprintf(w, "  error: target %d at %s: %s\n", s.Target, s.Start.Format("15:04:05.000"), what)
	}
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64) + "ms"
}
