package main

import (
	"slices"
	"testing"
	"time"
)

func TestLags(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	sec := func(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }
	times := []time.Time{at(0), at(100), at(100), at(900)}
	for _, tt := range []struct {
		name    string
		before  int64
		polls   []poll
		want    []time.Duration
		unseen  int
		wantErr bool
	}{
		{"each in the first answer that counts it", 10, []poll{{at(50), 10}, {at(200), 11}, {at(1000), 14}},
			[]time.Duration{sec(100), sec(200), sec(900), sec(900)}, 0, false},
		{"a total that falls back does not hide a message seen earlier", 0, []poll{{at(500), 3}, {at(600), 1}, {at(950), 4}},
			[]time.Duration{sec(50), sec(400), sec(400), sec(500)}, 0, false},
		{"the last never seen", 0, []poll{{at(1000), 3}}, []time.Duration{sec(900), sec(900), sec(1000)}, 1, false},
		{"none seen", 5, []poll{{at(1000), 5}}, nil, 4, false},
		{"counted before it was made", 0, []poll{{at(50), 2}}, nil, 0, true},
	} {
		got, unseen, err := lags(tt.before, times, tt.polls)
		if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) || unseen != tt.unseen {
			t.Errorf("%s: %v, %d unseen, %v; want %v, %d unseen, error %t", tt.name, got, unseen, err, tt.want, tt.unseen, tt.wantErr)
		}
	}
}

func TestQuantile(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	var hundred []time.Duration
	for i := 1; i <= 100; i++ {
		hundred = append(hundred, ms(i))
	}
	for _, tt := range []struct {
		name string
		f    freshness
		q    float64
		want time.Duration
		ok   bool
	}{
		{"p50 of 100", freshness{messages: 100, lags: hundred}, 0.50, ms(50), true},
		{"p99 of 100", freshness{messages: 100, lags: hundred}, 0.99, ms(99), true},
		{"p100 of 100", freshness{messages: 100, lags: hundred}, 1, ms(100), true},
		{"p99 with one unseen of 100", freshness{messages: 100, lags: hundred[:99], unseen: 1}, 0.99, ms(99), true},
		{"p99 with two unseen of 100", freshness{messages: 100, lags: hundred[:98], unseen: 2}, 0.99, 0, false},
		{"p50 of one", freshness{messages: 1, lags: hundred[:1]}, 0.5, ms(1), true},
		{"nothing", freshness{}, 0.5, 0, false},
	} {
		got, ok := tt.f.quantile(tt.q)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: %v %t, want %v %t", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 20000: "20,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func FuzzThousands(f *testing.F) {
	for _, n := range []int64{0, 7, 1000, -999999, 1 << 62} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		s := thousands(n)
		var back int64
		var digits int
		neg := false
		for i, r := range s {
			switch {
			case r == '-' && i == 0:
				neg = true
			case r == ',':
				if digits == 0 {
					t.Fatalf("thousands(%d) = %q: a comma first", n, s)
				}
			case r >= '0' && r <= '9':
				back = back*10 + int64(r-'0')
				digits++
			default:
				t.Fatalf("thousands(%d) = %q", n, s)
			}
		}
		if neg {
			back = -back
		}
		if back != n && n != -n { // the smallest int64 has no positive twin
			t.Fatalf("thousands(%d) = %q reads back as %d", n, s, back)
		}
	})
}
