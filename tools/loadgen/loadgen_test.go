package loadgen

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRunCountsStatusesAndErrors(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		switch r.URL.Path {
		case "/ok":
			w.WriteHeader(http.StatusOK)
		case "/missing":
			w.WriteHeader(http.StatusNotFound)
		case "/boom":
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"internal_error"}`))
		}
	}))
	defer srv.Close()

	res, err := Run(context.Background(), Config{
		Targets: []Target{
			{URL: srv.URL + "/ok"},
			{URL: srv.URL + "/missing"},                     // 404 is fine without Expect
			{URL: srv.URL + "/missing", Expect: []int{200}}, // but not with it
			{URL: srv.URL + "/boom"},
		},
		Concurrency: 4,
		Duration:    200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Requests != n.Load() {
		t.Fatalf("requests %d, server saw %d", res.Requests, n.Load())
	}
	if res.Statuses[200] == 0 || res.Statuses[404] == 0 || res.Statuses[503] == 0 {
		t.Fatalf("statuses %v", res.Statuses)
	}
	if res.Status5xx != res.Statuses[503] {
		t.Errorf("5xx %d, want %d", res.Status5xx, res.Statuses[503])
	}
	if res.Unexpected == 0 || res.Unexpected >= res.Statuses[404] {
		t.Errorf("unexpected %d of %d 404s: only the target expecting 200 counts", res.Unexpected, res.Statuses[404])
	}
	if res.Errors != res.Status5xx+res.Unexpected+res.Transport {
		t.Errorf("errors %d do not add up: %+v", res.Errors, res)
	}
	kept := false
	for _, s := range res.FirstErrors {
		kept = kept || (s.Status == 503 && s.Body == `{"error":"internal_error"}`)
	}
	if !kept {
		t.Errorf("first errors lack the 503 body: %+v", res.FirstErrors)
	}
	if res.P50 <= 0 || res.P50 > res.P99 || res.P99 > res.Max {
		t.Errorf("percentiles out of order: %v %v %v", res.P50, res.P99, res.Max)
	}
	var out strings.Builder
	res.Format(&out)
	for _, want := range []string{"req/s", "p50", "p99", "errors:", "503="} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRunIsBoundedAndLetsInFlightFinish(t *testing.T) {
	const duration = 500 * time.Millisecond
	start := time.Now()
	// Every answer waits until the run's end has passed: a worker's first request is then still
	// in flight at the end, whatever the scheduler's delays (a fixed sleep per request let a
	// worker that started late on a loaded machine miss the window).
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Until(start.Add(duration + 100*time.Millisecond)))
	}))
	defer srv.Close()
	res, err := Run(context.Background(), Config{
		Targets:     []Target{{URL: srv.URL}},
		Concurrency: 8,
		Duration:    duration,
		Record:      true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("run took %v", el)
	}
	// Each worker started one request before the end and must see it answered, not cancelled.
	if res.Errors != 0 || res.Requests != 8 || len(res.Samples) != 8 {
		t.Fatalf("errors %d requests %d samples %d: %+v", res.Errors, res.Requests, len(res.Samples), res.FirstErrors)
	}
}

func TestRunCountsRefusedConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	res, err := Run(context.Background(), Config{
		Targets:     []Target{{URL: "http://" + addr + "/"}},
		Concurrency: 2,
		Duration:    50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests == 0 || res.Refused != res.Requests || res.Transport != res.Requests || res.Errors != res.Requests {
		t.Fatalf("want every request refused: %+v", res)
	}
}

func TestRunSendsHeadersAndBody(t *testing.T) {
	var bad atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 16)
		n, _ := r.Body.Read(buf)
		if r.Method != http.MethodPost || r.Header.Get("Forum-Api-Key") != "k" || r.Header.Get("X-T") != "1" || string(buf[:n]) != "date=5" {
			bad.Add(1)
		}
	}))
	defer srv.Close()
	res, err := Run(context.Background(), Config{
		Targets:     []Target{{Method: "POST", URL: srv.URL, Header: http.Header{"X-T": {"1"}}, Body: []byte("date=5")}},
		Header:      http.Header{"Forum-Api-Key": {"k"}},
		Concurrency: 2,
		Duration:    50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if bad.Load() != 0 || res.Requests == 0 {
		t.Fatalf("%d of %d requests arrived wrong", bad.Load(), res.Requests)
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	if _, err := Run(context.Background(), Config{}); err == nil {
		t.Error("no targets accepted")
	}
	if _, err := Run(context.Background(), Config{Targets: []Target{{URL: "http://a b"}}}); err == nil {
		t.Error("bad URL accepted")
	}
}

func TestPercentile(t *testing.T) {
	d := func(ms ...int) []time.Duration {
		out := make([]time.Duration, len(ms))
		for i, m := range ms {
			out[i] = time.Duration(m) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	tests := []struct {
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{nil, 50, 0},
		{d(7), 50, 7 * time.Millisecond},
		{d(7), 99, 7 * time.Millisecond},
		{d(1, 2), 50, 1 * time.Millisecond},
		{d(1, 2), 51, 2 * time.Millisecond},
		{d(hundred...), 50, 50 * time.Millisecond},
		{d(hundred...), 90, 90 * time.Millisecond},
		{d(hundred...), 99, 99 * time.Millisecond},
		{d(hundred...), 100, 100 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := Percentile(tt.in, tt.p); got != tt.want {
			t.Errorf("Percentile(%v, %v) = %v, want %v", tt.in, tt.p, got, tt.want)
		}
	}
}
