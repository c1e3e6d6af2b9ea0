package query

import (
	"errors"
	"testing"

	"forumstats.local/shared/form"
)

func TestParseSeries(t *testing.T) {
	tests := []struct {
		raw  string
		want Series
		err  error
	}{
		{raw: "from=2026-10-24&to=2026-11-22", want: Series{From: day(2026, 10, 24), To: day(2026, 11, 22)}},
		{raw: "from=2026-11-22&to=2026-11-22&server=007", want: Series{From: day(2026, 11, 22), To: day(2026, 11, 22), Server: "007"}},
		{raw: "from=2024-01-01&to=2024-12-31", want: Series{From: day(2024, 1, 1), To: day(2024, 12, 31)}}, // 366 days
		{raw: "from=2015-01-01&to=2015-01-01&x=1&x=2", want: Series{From: day(2015, 1, 1), To: day(2015, 1, 1)}},
		{raw: "from=2099-12-31&to=2099-12-31", want: Series{From: day(2099, 12, 31), To: day(2099, 12, 31)}},
		{raw: "from=2025-01-01&to=2026-01-02", err: ErrInvalidRange}, // 367 days
		{raw: "from=2026-11-02&to=2026-11-01", err: ErrInvalidRange},
		{raw: "from=2026-11-01", err: ErrInvalidRange},
		{raw: "to=2026-11-01", err: ErrInvalidRange},
		{raw: "", err: ErrInvalidRange},
		{raw: "from=&to=2026-11-01", err: ErrInvalidRange},
		{raw: "from=2026-02-29&to=2026-03-01", err: ErrInvalidRange},
		{raw: "from=2014-12-31&to=2015-01-01", err: ErrInvalidRange},
		{raw: "from=2099-12-31&to=2100-01-01", err: ErrInvalidRange},
		{raw: "from=2026-11-1&to=2026-11-02", err: ErrInvalidRange},
		{raw: "from=2026-11-01&from=2026-11-01&to=2026-11-02", err: ErrInvalidParameters},
		{raw: "from=2026-11-01&to=2026-11-02&to=2026-11-02", err: ErrInvalidParameters},
		{raw: "server=1&server=1&from=2026-11-01&to=2026-11-02", err: ErrInvalidParameters},
		{raw: "server=x&from=bad", err: ErrInvalidServer},
		{raw: "server=&from=2026-11-01&to=2026-11-02", err: ErrInvalidServer},
		{raw: "server=123456789012345678901&from=2026-11-01&to=2026-11-02", err: ErrInvalidServer},
		{raw: "from=2026-11-01&from=x&server=x", err: ErrInvalidParameters}, // repeats first
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := ParseSeries(form.Parse(tt.raw))
			if !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestSeriesDaysAndKey(t *testing.T) {
	s := Series{From: day(2024, 2, 28), To: day(2024, 3, 1), Server: "2"}
	days := s.Days()
	if len(days) != 3 || days[1] != day(2024, 2, 29) || days[2] != day(2024, 3, 1) {
		t.Fatalf("days %v", days)
	}
	if s.Key() != "series|2024-02-28|2024-03-01|2" {
		t.Fatalf("key %q", s.Key())
	}
	other := s
	other.Server = ""
	if other.Key() == s.Key() {
		t.Fatal("keys of different servers are equal")
	}
}

func FuzzParseSeries(f *testing.F) {
	for _, s := range []string{"", "from=2026-01-01&to=2026-12-31", "from=2024-01-01&to=2024-12-31&server=1", "from=%zz&to=1", "server=&from=&to="} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		s, err := ParseSeries(form.Parse(raw))
		if err != nil {
			if !errors.Is(err, ErrInvalidParameters) && !errors.Is(err, ErrInvalidRange) && !errors.Is(err, ErrInvalidServer) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		n := len(s.Days())
		if n < 1 || n > MaxSeriesDays || n != s.From.DaysUntil(s.To)+1 {
			t.Fatalf("%+v covers %d days", s, n)
		}
		if !s.From.InLimits() || !s.To.InLimits() || (s.Server != "" && !ValidServer(s.Server)) {
			t.Fatalf("accepted %+v", s)
		}
	})
}
