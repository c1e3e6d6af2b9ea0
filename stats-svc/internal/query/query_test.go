package query

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"forumstats.local/shared/form"
	"forumstats.local/shared/reports"
)

var testNow = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC) // 13:00 in Moscow

func day(y int, m time.Month, d int) reports.Day { return reports.Day{Year: y, Month: m, Day: d} }
func month(y int, m time.Month) reports.Month    { return reports.Month{Year: y, Month: m} }

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		want Query
		err  error
	}{
		// Defaults.
		{"no parameters", "", Query{Mode: ModeMonth, Month: month(2026, 11)}, nil},
		{"month default", "period=month", Query{Mode: ModeMonth, Month: month(2026, 11)}, nil},
		{"day default", "period=day", Query{Mode: ModeDay, From: day(2026, 11, 20), To: day(2026, 11, 20)}, nil},
		{"week default", "period=week", Query{Mode: ModeWeek, From: day(2026, 11, 14), To: day(2026, 11, 20)}, nil},
		// Explicit values.
		{"month", "month=2015-01", Query{Mode: ModeMonth, Month: month(2015, 1)}, nil},
		{"month last", "period=month&month=2099-12&server=02", Query{Mode: ModeMonth, Month: month(2099, 12), Server: "02"}, nil},
		{"day", "period=day&date=2024-02-29", Query{Mode: ModeDay, From: day(2024, 2, 29), To: day(2024, 2, 29)}, nil},
		{"week over year end", "period=week&date=2026-01-03", Query{Mode: ModeWeek, From: day(2025, 12, 28), To: day(2026, 1, 3)}, nil},
		{"week over leap day", "period=week&date=2024-03-02", Query{Mode: ModeWeek, From: day(2024, 2, 25), To: day(2024, 3, 2)}, nil},
		{"range 1 day", "period=range&from=2026-11-01&to=2026-11-01", Query{Mode: ModeRange, From: day(2026, 11, 1), To: day(2026, 11, 1)}, nil},
		{"range 31 days", "period=range&from=2026-01-01&to=2026-01-31", Query{Mode: ModeRange, From: day(2026, 1, 1), To: day(2026, 1, 31)}, nil},
		{"range 31 days over leap Feb", "period=range&from=2024-02-01&to=2024-03-02", Query{Mode: ModeRange, From: day(2024, 2, 1), To: day(2024, 3, 2)}, nil},
		{"range 32 days", "period=range&from=2026-01-01&to=2026-02-01", Query{}, ErrInvalidRange},
		{"range 32 days over Feb", "period=range&from=2023-02-01&to=2023-03-04", Query{}, ErrInvalidRange},
		{"server guild id", "server=81384788765712384", Query{Mode: ModeMonth, Month: month(2026, 11), Server: "81384788765712384"}, nil},
		{"server 20 digits", "server=12345678901234567890", Query{Mode: ModeMonth, Month: month(2026, 11), Server: "12345678901234567890"}, nil},
		{"unknown parameters ignored", "foo=1&foo=2&Period=x", Query{Mode: ModeMonth, Month: month(2026, 11)}, nil},

		// 1. period.
		{"period empty", "period=", Query{}, ErrInvalidParameters},
		{"period bare", "period", Query{}, ErrInvalidParameters},
		{"period unknown", "period=year", Query{}, ErrInvalidParameters},
		{"period case", "period=Month", Query{}, ErrInvalidParameters},
		{"period bad beats server", "period=x&server=abc", Query{}, ErrInvalidParameters},
		// 2. repeats.
		{"period twice", "period=day&period=day", Query{}, ErrInvalidParameters},
		{"month twice", "month=2026-01&month=2026-01", Query{}, ErrInvalidParameters},
		{"date twice", "period=day&date=2026-01-01&date=2026-01-01", Query{}, ErrInvalidParameters},
		{"from twice", "period=range&from=2026-01-01&from=2026-01-01&to=2026-01-02", Query{}, ErrInvalidParameters},
		{"to twice", "period=range&from=2026-01-01&to=2026-01-02&to=2026-01-02", Query{}, ErrInvalidParameters},
		{"server twice", "server=1&server=1", Query{}, ErrInvalidParameters},
		{"server twice beats bad server", "server=x&server=", Query{}, ErrInvalidParameters},
		// 3. forbidden parameters, even empty.
		{"month mode date", "date=2026-01-01", Query{}, ErrInvalidParameters},
		{"month mode from empty", "period=month&from=", Query{}, ErrInvalidParameters},
		{"month mode to", "to=2026-01-01", Query{}, ErrInvalidParameters},
		{"day month", "period=day&month=2026-01", Query{}, ErrInvalidParameters},
		{"day from", "period=day&from=2026-01-01", Query{}, ErrInvalidParameters},
		{"week to", "period=week&to=2026-01-01", Query{}, ErrInvalidParameters},
		{"week month empty", "period=week&month", Query{}, ErrInvalidParameters},
		{"range month", "period=range&from=2026-01-01&to=2026-01-02&month=2026-01", Query{}, ErrInvalidParameters},
		{"range date", "period=range&from=2026-01-01&to=2026-01-02&date=2026-01-01", Query{}, ErrInvalidParameters},
		{"forbidden beats bad server", "period=day&month=2026-01&server=x", Query{}, ErrInvalidParameters},
		// 4. server.
		{"server empty", "server=", Query{}, ErrInvalidServer},
		{"server bare", "server", Query{}, ErrInvalidServer},
		{"server letters", "server=abc", Query{}, ErrInvalidServer},
		{"server sign", "server=+2", Query{}, ErrInvalidServer},
		{"server negative", "server=-2", Query{}, ErrInvalidServer},
		{"server space", "server=2%20", Query{}, ErrInvalidServer},
		{"server 21 digits", "server=123456789012345678901", Query{}, ErrInvalidServer},
		{"server beats bad month", "month=x&server=x", Query{}, ErrInvalidServer},
		{"server beats bad date", "period=day&date=x&server=x", Query{}, ErrInvalidServer},
		{"server beats bad range", "period=range&server=x", Query{}, ErrInvalidServer},
		// 5. month.
		{"month empty", "month=", Query{}, ErrInvalidParameters},
		{"month format", "month=2026-1", Query{}, ErrInvalidParameters},
		{"month 13", "month=2026-13", Query{}, ErrInvalidParameters},
		{"month before 2015", "month=2014-12", Query{}, ErrInvalidParameters},
		{"month after 2099", "month=2100-01", Query{}, ErrInvalidParameters},
		{"month a date", "month=2026-01-01", Query{}, ErrInvalidParameters},
		// 6. date.
		{"date empty", "period=day&date=", Query{}, ErrInvalidParameters},
		{"date format", "period=day&date=2026-1-1", Query{}, ErrInvalidParameters},
		{"date not a day", "period=week&date=2026-02-29", Query{}, ErrInvalidParameters},
		{"date before 2015", "period=day&date=2014-12-31", Query{}, ErrInvalidParameters},
		{"date after 2099", "period=week&date=2100-01-01", Query{}, ErrInvalidParameters},
		// 7. range rules.
		{"range no dates", "period=range", Query{}, ErrInvalidRange},
		{"range no to", "period=range&from=2026-01-01", Query{}, ErrInvalidRange},
		{"range no from", "period=range&to=2026-01-01", Query{}, ErrInvalidRange},
		{"range empty from", "period=range&from=&to=2026-01-01", Query{}, ErrInvalidRange},
		{"range bad format", "period=range&from=2026-01-1&to=2026-01-02", Query{}, ErrInvalidRange},
		{"range not a day", "period=range&from=2026-02-28&to=2026-02-29", Query{}, ErrInvalidRange},
		{"range reversed", "period=range&from=2026-01-02&to=2026-01-01", Query{}, ErrInvalidRange},
		{"range before 2015", "period=range&from=2014-12-31&to=2015-01-01", Query{}, ErrInvalidRange},
		{"range after 2099", "period=range&from=2099-12-31&to=2100-01-01", Query{}, ErrInvalidRange},
		{"range with server ok", "period=range&from=2026-01-01&to=2026-01-02&server=7", Query{Mode: ModeRange, From: day(2026, 1, 1), To: day(2026, 1, 2), Server: "7"}, nil},
		// Broken escapes stay visible to the checks instead of vanishing.
		{"period broken escape", "period=%zz", Query{}, ErrInvalidParameters},
		{"server broken escape", "server=%zz", Query{}, ErrInvalidServer},
		{"unknown broken escape", "x%zz=%zz&period=day&date=2026-01-05", Query{Mode: ModeDay, From: day(2026, 1, 5), To: day(2026, 1, 5)}, nil},
		{"semicolon is not a separator", "period=day;date=2026-01-01", Query{}, ErrInvalidParameters},
		{"escaped names decode", "%70eriod=day&date=2026-01-05", Query{Mode: ModeDay, From: day(2026, 1, 5), To: day(2026, 1, 5)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(form.Parse(tt.raw), testNow)
			if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
				t.Fatalf("Parse(%q) error = %v, want %v", tt.raw, err, tt.err)
			}
			if got != tt.want {
				t.Fatalf("Parse(%q) = %+v, want %+v", tt.raw, got, tt.want)
			}
		})
	}
}

func TestParseDefaultsFollowMoscow(t *testing.T) {
	// 20:59:59Z is still the 30th in Moscow, 21:00Z is already the 1st.
	before := time.Date(2026, 11, 30, 20, 59, 59, 0, time.UTC)
	after := before.Add(time.Second)
	q, _ := Parse(url.Values{}, before)
	if q.Month != (month(2026, 11)) {
		t.Errorf("month before midnight = %v", q.Month)
	}
	q, _ = Parse(url.Values{}, after)
	if q.Month != (month(2026, 12)) {
		t.Errorf("month after midnight = %v", q.Month)
	}
	q, _ = Parse(url.Values{"period": {"day"}}, after)
	if q.From != (day(2026, 12, 1)) {
		t.Errorf("day after midnight = %v", q.From)
	}
}

func TestQueryBounds(t *testing.T) {
	tests := []struct {
		raw        string
		start, end string
		days       int
	}{
		{"month=2024-02", "2024-01-31T21:00:00Z", "2024-02-29T21:00:00Z", 0},
		{"period=day&date=2026-11-20", "2026-11-19T21:00:00Z", "2026-11-20T21:00:00Z", 1},
		{"period=week&date=2026-03-01", "2026-02-22T21:00:00Z", "2026-03-01T21:00:00Z", 7},
		{"period=range&from=2026-01-01&to=2026-01-31", "2025-12-31T21:00:00Z", "2026-01-31T21:00:00Z", 31},
	}
	for _, tt := range tests {
		q, err := Parse(form.Parse(tt.raw), testNow)
		if err != nil {
			t.Fatalf("%s: %v", tt.raw, err)
		}
		if s := q.Start().Format(time.RFC3339); s != tt.start {
			t.Errorf("%s start = %s, want %s", tt.raw, s, tt.start)
		}
		if e := q.End().Format(time.RFC3339); e != tt.end {
			t.Errorf("%s end = %s, want %s", tt.raw, e, tt.end)
		}
		if q.Composite() && len(q.Days()) != tt.days {
			t.Errorf("%s days = %d, want %d", tt.raw, len(q.Days()), tt.days)
		}
	}
}

func TestQueryKey(t *testing.T) {
	day, _ := Parse(form.Parse("period=day&date=2026-01-05"), testNow)
	rng, _ := Parse(form.Parse("period=range&from=2026-01-05&to=2026-01-05"), testNow)
	month, _ := Parse(form.Parse("month=2026-01&server=1"), testNow)
	month2, _ := Parse(form.Parse("month=2026-01&server=01"), testNow)
	keys := map[string]bool{day.Key(): true, rng.Key(): true, month.Key(): true, month2.Key(): true}
	if len(keys) != 4 {
		t.Fatalf("keys collide: %v", keys)
	}
	again, _ := Parse(form.Parse("date=2026-01-05&period=day&unknown=1"), testNow)
	if again.Key() != day.Key() {
		t.Fatalf("same query, different keys: %q %q", again.Key(), day.Key())
	}
}

func TestParseIconsServer(t *testing.T) {
	tests := []struct {
		raw  string
		want string
		err  error
	}{
		{"", "", nil},
		{"period=day&date=x", "", nil},
		{"server=02", "02", nil},
		{"server=81384788765712384", "81384788765712384", nil},
		{"server=", "", ErrInvalidServer},
		{"server", "", ErrInvalidServer},
		{"server=x1", "", ErrInvalidServer},
		{"server=123456789012345678901", "", ErrInvalidServer},
		{"server=1&server=2", "", ErrInvalidServer},
	}
	for _, tt := range tests {
		got, err := ParseIconsServer(form.Parse(tt.raw))
		if got != tt.want || !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
			t.Errorf("ParseIconsServer(%q) = %q, %v; want %q, %v", tt.raw, got, err, tt.want, tt.err)
		}
	}
}

func TestServerNumber(t *testing.T) {
	for _, tt := range []struct {
		in string
		n  int
		ok bool
	}{
		{"2", 2, true}, {"02", 2, true}, {"0000000000000000007", 7, true}, {"0", 0, false},
		{"81384788765712384", 0, false}, {"2147483647", 2147483647, true},
	} {
		n, ok := ServerNumber(tt.in)
		if n != tt.n || ok != tt.ok {
			t.Errorf("ServerNumber(%q) = %d, %v", tt.in, n, ok)
		}
	}
}

// FuzzParse feeds arbitrary query strings and clocks: Parse never panics,
// fails only with its sentinels, and every accepted query is a well-formed
// period inside the limits.
func FuzzParse(f *testing.F) {
	seeds := []string{
		"", "period=day", "period=week&date=2024-02-29", "period=range&from=2026-01-01&to=2026-01-31",
		"period=range&from=2026-01-01&to=2026-02-01", "month=2015-01&server=0002", "server=&period=x",
		"period=range&from=2099-12-31&to=2099-12-31", "date=%zz", "period=day;date=2026-01-01", "a=1&&b",
	}
	for _, s := range seeds {
		f.Add(s, int64(1763632800))
	}
	f.Fuzz(func(t *testing.T, raw string, unix int64) {
		now := time.Unix(1420070400+abs64(unix)%(85*365*86400), 0) // 2015..2099
		q, err := Parse(form.Parse(raw), now)
		if err != nil {
			if !errors.Is(err, ErrInvalidParameters) && !errors.Is(err, ErrInvalidRange) && !errors.Is(err, ErrInvalidServer) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if q.Server != "" && !ValidServer(q.Server) {
			t.Fatalf("accepted server %q", q.Server)
		}
		if !q.Start().Before(q.End()) {
			t.Fatalf("empty period %+v", q)
		}
		// The clock lies in the limits, so even a default period does.
		switch q.Mode {
		case ModeMonth:
			if !q.Month.InLimits() {
				t.Fatalf("month out of limits: %v", q.Month)
			}
		case ModeDay, ModeWeek, ModeRange:
			n := q.From.DaysUntil(q.To) + 1
			if n < 1 || n > MaxRangeDays || (q.Mode == ModeDay && n != 1) || (q.Mode == ModeWeek && n != 7) {
				t.Fatalf("%s covers %d days", q.Mode, n)
			}
			if q.End().Sub(q.Start()) != time.Duration(n)*24*time.Hour {
				t.Fatalf("%s bounds %v..%v", q.Mode, q.Start(), q.End())
			}
			if !q.To.InLimits() || (q.Mode == ModeRange && !q.From.InLimits()) {
				t.Fatalf("dates out of limits: %+v", q)
			}
		default:
			t.Fatalf("mode %q", q.Mode)
		}
		if strings.Count(q.Key(), "|") < 2 {
			t.Fatalf("key %q", q.Key())
		}
	})
}

func abs64(n int64) int64 {
	if n < 0 {
		n = -n
	}
	if n < 0 {
		return 0
	}
	return n
}
