package testutil

import (
	"testing"
	"time"
)

func TestBusiest(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms ...int) []time.Time {
		out := make([]time.Time, len(ms))
		for i, m := range ms {
			out[i] = t0.Add(time.Duration(m) * time.Millisecond)
		}
		return out
	}
	for _, tt := range []struct {
		name  string
		times []time.Time
		want  int
	}{
		{"none", nil, 0},
		{"one", at(0), 1},
		{"a window is half-open: 1 s apart are in two", at(0, 1000), 1},
		{"just inside", at(0, 999), 2},
		{"the busiest span is not the first", at(0, 1500, 1600, 1700, 2400, 2600), 4},
		{"equal times all count", at(5, 5, 5), 3},
	} {
		if got := Busiest(tt.times, time.Second); got != tt.want {
			t.Errorf("%s: Busiest = %d, want %d", tt.name, got, tt.want)
		}
	}
}
