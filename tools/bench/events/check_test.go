package main

import (
	"bufio"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCheckArrivals(t *testing.T) {
	t0 := time.Unix(1000, 0)
	// Conversation 1 holds users 1 and 2; one stream a user: stream 0 is user 1's, stream 1 user 2's.
	sent := []sentReply{
		{conv: 1, author: 1, id: 11, start: t0, answer: t0.Add(10 * time.Millisecond)},
		{conv: 1, author: 2, id: 12, start: t0.Add(time.Second), answer: t0.Add(time.Second + 10*time.Millisecond)},
		{conv: 2, author: 3, id: 21, start: t0, answer: t0.Add(time.Millisecond)},
	}
	user := func(i int) int64 { return int64(i) + 1 }
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tests := []struct {
		name     string
		arrivals [][]arrival
		want     check
		ok       bool
	}{
		{"all once", [][]arrival{{{11, at(5)}, {12, at(1020)}}, {{11, at(6)}, {12, at(1030)}}}, check{Expected: 4, Unique: 4}, true},
		{"one lost", [][]arrival{{{11, at(5)}, {12, at(1020)}}, {{11, at(6)}}}, check{Expected: 4, Unique: 3, Lost: 1}, false},
		{"one twice", [][]arrival{{{11, at(5)}, {11, at(7)}, {12, at(1020)}}, {{11, at(6)}, {12, at(1030)}}}, check{Expected: 4, Unique: 4, Duplicates: 1}, false},
		{"another conversation's", [][]arrival{{{11, at(5)}, {12, at(1020)}, {21, at(3)}}, {{11, at(6)}, {12, at(1030)}}}, check{Expected: 4, Unique: 4, Unexpected: 1}, false},
		{"unknown message", [][]arrival{{{11, at(5)}, {12, at(1020)}, {99, at(3)}}, {{11, at(6)}, {12, at(1030)}}}, check{Expected: 4, Unique: 4, Unexpected: 1}, false},
		{"nothing", [][]arrival{nil, nil}, check{Expected: 4, Lost: 4}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, upper, lower := checkArrivals(sent, tt.arrivals, user)
			if c.Expected != tt.want.Expected || c.Unique != tt.want.Unique || c.Lost != tt.want.Lost ||
				c.Duplicates != tt.want.Duplicates || c.Unexpected != tt.want.Unexpected {
				t.Errorf("check = %+v, want %+v", c, tt.want)
			}
			if c.OK() != tt.ok {
				t.Errorf("OK() = %v, want %v", c.OK(), tt.ok)
			}
			if len(upper) != c.Unique || len(lower) != c.Unique {
				t.Fatalf("%d upper and %d lower latencies for %d arrivals", len(upper), len(lower), c.Unique)
			}
			if tt.name == "all once" {
				// 5, 6, 20, 30 ms after the request start; −5, −4, 10, 20 ms after the answer.
				if upper[0] != 5*time.Millisecond || upper[3] != 30*time.Millisecond {
					t.Errorf("upper = %v", upper)
				}
				if lower[0] != -5*time.Millisecond || lower[3] != 20*time.Millisecond {
					t.Errorf("lower = %v", lower)
				}
			}
		})
	}
}

func TestSSEReader(t *testing.T) {
	in := "retry: 3000\n\n: ping\n\nid: 1\nevent: unread_count\ndata: {\"me\":{}}\n\n" +
		"id: 2\r\nevent: message_created\r\ndata: {\"message\":{\"message_id\":42,\"message\":\"" + strings.Repeat("x", 5000) + "\"}}\r\n\r\n" +
		"data: plain\n\n" + "event: message_created\ndata: {\"message\":{}}\n\n" + "event: cut"
	r := &sseReader{r: bufio.NewReaderSize(strings.NewReader(in), 16)}
	typ, _, err := r.next()
	if err != nil || typ != "unread_count" {
		t.Fatalf("first = %q, %v", typ, err)
	}
	typ, ev, err := r.next()
	if err != nil || typ != "message_created" || ev.at.IsZero() {
		t.Fatalf("second = %q, %v", typ, err)
	}
	if id, err := messageID(ev.data); err != nil || id != 42 {
		t.Fatalf("message id = %d, %v", id, err)
	}
	if typ, ev, err := r.next(); err != nil || typ != "message" || string(ev.data) != "plain" {
		t.Fatalf("third = %q %q, %v", typ, ev.data, err)
	}
	typ, ev, err = r.next()
	if err != nil || typ != "message_created" {
		t.Fatalf("fourth = %q, %v", typ, err)
	}
	if _, err := messageID(ev.data); err == nil {
		t.Error("a message_created without an id was read as one")
	}
	if _, _, err := r.next(); err == nil {
		t.Error("a stream cut inside an event ended cleanly")
	}
}

func TestPct(t *testing.T) {
	d := []time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tt := range []struct {
		p    int
		want time.Duration
	}{{50, 5}, {99, 10}, {100, 10}, {1, 1}, {0, 1}} {
		if got := pct(d, tt.p); got != tt.want {
			t.Errorf("pct(%d) = %d, want %d", tt.p, got, tt.want)
		}
	}
	if pct(nil, 99) != 0 {
		t.Error("pct of nothing is not 0")
	}
}

func TestSeedPairs(t *testing.T) {
	for u := int64(1); u <= 10; u++ {
		p := participants(convOf(u))
		if p[0] != u && p[1] != u {
			t.Errorf("user %d is not a participant of its conversation %d (%v)", u, convOf(u), p)
		}
	}
}

func TestSoftLimit(t *testing.T) {
	limits := "Limit                     Soft Limit           Hard Limit           Units     \n" +
		"Max cpu time              unlimited            unlimited            seconds   \n" +
		"Max open files            20000                20000                files     \n" +
		"Max locked memory         unlimited            unlimited            bytes     \n"
	for _, tt := range []struct {
		name string
		want int64
		err  bool
	}{{"Max open files", 20000, false}, {"Max locked memory", -1, false}, {"Max processes", 0, true}} {
		got, err := softLimit(limits, tt.name)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("softLimit(%q) = %d, %v; want %d, error %v", tt.name, got, err, tt.want, tt.err)
		}
	}
}

func TestHistogramQuantile(t *testing.T) {
	inf := math.Inf(1)
	le := []float64{.001, .002, .004, inf}
	tests := []struct {
		name   string
		counts []float64
		q      float64
		want   time.Duration
	}{
		{"empty", []float64{0, 0, 0, 0}, .99, 0},
		{"all in the first bucket", []float64{100, 100, 100, 100}, .5, 500 * time.Microsecond},
		{"in the second bucket", []float64{50, 100, 100, 100}, .75, 1500 * time.Microsecond},
		{"p99 in the third", []float64{90, 98, 100, 100}, .99, 3 * time.Millisecond},
		{"beyond the last bound", []float64{0, 0, 0, 10}, .99, 4 * time.Millisecond},
		{"rank on a bound", []float64{50, 100, 100, 100}, .5, time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := histogram{le: le, counts: tt.counts}.quantile(tt.q)
			if d := got - tt.want; d > time.Microsecond || d < -time.Microsecond {
				t.Errorf("quantile(%v) = %s, want %s", tt.q, got, tt.want)
			}
		})
	}
}

func TestBucketAndParse(t *testing.T) {
	text := `# HELP event_stream_delivery_seconds x
# TYPE event_stream_delivery_seconds histogram
event_stream_delivery_seconds_bucket{le="0.001"} 2
event_stream_delivery_seconds_bucket{le="0.002"} 3
event_stream_delivery_seconds_bucket{le="+Inf"} 4
event_stream_delivery_seconds_sum 0.01
event_stream_delivery_seconds_count 4
other_bucket{le="1"} 9
`
	h, err := parseHistogram(strings.NewReader(text), deliveryMetric)
	if err != nil {
		t.Fatal(err)
	}
	want := bucket(h.le, []time.Duration{500 * time.Microsecond, time.Millisecond, 1500 * time.Microsecond, time.Second})
	if !slices.Equal(h.le, []float64{.001, .002, math.Inf(1)}) || !slices.Equal(h.counts, want.counts) {
		t.Errorf("parsed %+v, bucketed %+v", h, want)
	}
	d, err := h.minus(histogram{le: h.le, counts: []float64{1, 1, 1}})
	if err != nil || !slices.Equal(d.counts, []float64{1, 2, 3}) {
		t.Errorf("minus = %+v, %v", d, err)
	}
	if _, err := h.minus(histogram{le: []float64{1, math.Inf(1)}, counts: []float64{0, 0}}); err == nil {
		t.Error("minus of other buckets: no error")
	}
	for _, bad := range []string{
		"event_stream_delivery_seconds_bucket{le=\"0.002\"} 3\nevent_stream_delivery_seconds_bucket{le=\"0.001\"} 2\n",
		"event_stream_delivery_seconds_bucket{le=\"0.001\"} 2\n",
		"event_stream_delivery_seconds_bucket{le=\"x\"} 2\n",
		"event_stream_delivery_seconds_bucket{le=\"0.001\"} \n",
	} {
		if _, err := parseHistogram(strings.NewReader(bad), deliveryMetric); err == nil {
			t.Errorf("parseHistogram(%q): no error", bad)
		}
	}
}

func FuzzParseHistogram(f *testing.F) {
	f.Add("event_stream_delivery_seconds_bucket{le=\"0.001\"} 2\nevent_stream_delivery_seconds_bucket{le=\"+Inf\"} 4\n")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := parseHistogram(strings.NewReader(s), deliveryMetric)
		if err != nil {
			return
		}
		if q := h.quantile(.99); q < 0 && h.count() >= 0 {
			t.Errorf("negative quantile %s of %+v", q, h)
		}
	})
}
