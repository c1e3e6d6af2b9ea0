package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"forumstats.local/tools/stack"
)

// histogram is a Prometheus histogram's buckets: upper bounds (seconds, ascending, the last
// +Inf) and the cumulative count of each.
type histogram struct {
	le     []float64
	counts []float64
}

// count is the number of observations.
func (h histogram) count() float64 {
	if len(h.counts) == 0 {
		return 0
	}
	return h.counts[len(h.counts)-1]
}

// minus is h without the observations of before (the same metric, read earlier).
func (h histogram) minus(before histogram) (histogram, error) {
	if len(before.le) == 0 {
		return h, nil
	}
	if !slices.Equal(h.le, before.le) {
		return histogram{}, fmt.Errorf("the buckets changed between two reads")
	}
	out := histogram{le: h.le, counts: make([]float64, len(h.counts))}
	for i := range h.counts {
		out.counts[i] = h.counts[i] - before.counts[i]
	}
	return out, nil
}

// quantile is the q-quantile (0..1) as Prometheus's histogram_quantile computes it: linear within
// the bucket that holds the rank, from the bucket below's bound (0 for the first); the bound below
// +Inf when the rank falls in +Inf. 0 without observations.
func (h histogram) quantile(q float64) time.Duration {
	n := h.count()
	if n == 0 {
		return 0
	}
	rank := q * n
	i, _ := slices.BinarySearchFunc(h.counts, rank, func(c, r float64) int {
		if c < r {
			return -1
		}
		return 1
	})
	i = min(i, len(h.counts)-1)
	if math.IsInf(h.le[i], 1) {
		return seconds(h.le[max(0, i-1)])
	}
	lower, below := 0.0, 0.0
	if i > 0 {
		lower, below = h.le[i-1], h.counts[i-1]
	}
	in := h.counts[i] - below
	if in <= 0 {
		return seconds(h.le[i])
	}
	return seconds(lower + (h.le[i]-lower)*(rank-below)/in)
}

// bucket puts exact durations into a histogram with the upper bounds le (ascending, the last +Inf).
func bucket(le []float64, ds []time.Duration) histogram {
	h := histogram{le: le, counts: make([]float64, len(le))}
	for _, d := range ds {
		s := d.Seconds()
		i, _ := slices.BinarySearch(le, s) // the first bound ≥ s
		for j := i; j < len(le); j++ {
			h.counts[j]++
		}
	}
	return h
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// readHistogram reads the histogram name from the Prometheus text exposition at url.
func readHistogram(ctx context.Context, url, name string) (h histogram, err error) {
	err = stack.Get(ctx, url, func(body io.Reader) (err error) {
		h, err = parseHistogram(body, name)
		return err
	})
	return h, err
}

// parseHistogram reads the buckets of the unlabelled histogram name (lines name_bucket{le="X"} N);
// none read is an empty histogram (nothing observed yet: the metric appears with its first
// observation).
func parseHistogram(r io.Reader, name string) (histogram, error) {
	var h histogram
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	prefix := name + `_bucket{le="`
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), prefix)
		if !ok {
			continue
		}
		le, value, ok := strings.Cut(rest, `"} `)
		if !ok {
			return histogram{}, fmt.Errorf("%s: %q", name, sc.Text())
		}
		bound, err := strconv.ParseFloat(le, 64)
		if err != nil {
			return histogram{}, fmt.Errorf("%s: le %q: %w", name, le, err)
		}
		fields := strings.Fields(value)
		if len(fields) == 0 {
			return histogram{}, fmt.Errorf("%s: %q: no value", name, sc.Text())
		}
		n, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return histogram{}, fmt.Errorf("%s: %q: %w", name, sc.Text(), err)
		}
		if math.IsNaN(bound) || math.IsNaN(n) || n < 0 {
			return histogram{}, fmt.Errorf("%s: %q", name, sc.Text())
		}
		if len(h.le) > 0 && (bound <= h.le[len(h.le)-1] || n < h.counts[len(h.counts)-1]) {
			return histogram{}, fmt.Errorf("%s: buckets out of order at le %q", name, le)
		}
		h.le, h.counts = append(h.le, bound), append(h.counts, n)
	}
	if err := sc.Err(); err != nil {
		return histogram{}, err
	}
	if len(h.le) > 0 && (!math.IsInf(h.le[len(h.le)-1], 1) || len(h.le) < 2 || h.le[0] < 0) {
		return histogram{}, fmt.Errorf("%s: the buckets are not a finite bound or more, then +Inf", name)
	}
	return h, nil
}
