package main

import (
	"testing"
	"time"
)

func TestPct(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      int
		want   time.Duration
	}{
		{"empty", nil, 99, 0},
		{"one", ms(7), 50, 7 * time.Millisecond},
		{"one, max", ms(7), 100, 7 * time.Millisecond},
		{"median of 4 (nearest rank)", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p99 of 100", ms(hundred...), 99, 99 * time.Millisecond},
		{"p99 of 1000 is the 990th", ms(make1000()...), 99, 990 * time.Millisecond},
		{"max of 100", ms(hundred...), 100, 100 * time.Millisecond},
		{"p1 of 100", ms(hundred...), 1, time.Millisecond},
	} {
		if got := pct(tc.sorted, tc.p); got != tc.want {
			t.Errorf("%s: pct(%d) = %v, want %v", tc.name, tc.p, got, tc.want)
		}
	}
}

func make1000() []int {
	out := make([]int, 1000)
	for i := range out {
		out[i] = i + 1
	}
	return out
}
