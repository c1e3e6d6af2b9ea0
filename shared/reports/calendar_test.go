package reports

import (
	"testing"
	"time"
)

func TestParseDay(t *testing.T) {
	valid := map[string]Day{
		"2026-11-20": {2026, 11, 20},
		"2024-02-29": {2024, 2, 29}, // leap year
		"2000-02-29": {2000, 2, 29}, // divisible by 400
		"2026-04-30": {2026, 4, 30},
		"2026-12-31": {2026, 12, 31},
	}
	for in, want := range valid {
		got, ok := ParseDay(in)
		if !ok || got != want {
			t.Errorf("ParseDay(%q) = %v, %v; want %v, true", in, got, ok, want)
		}
		if got.String() != in {
			t.Errorf("ParseDay(%q).String() = %q", in, got.String())
		}
	}
	for _, in := range []string{
		"2023-02-29",
		"2100-02-29", // divisible by 100, not 400
		"2026-04-31", "2026-13-01", "2026-00-10", "2026-01-00",
		"2026-1-01", "2026-01-1", "2026/01/01", "+026-01-01", "2026-01-01 ", "2026-01-0x",
		"２026-01-01", // full-width digit
		"",
	} {
		if got, ok := ParseDay(in); ok || got != (Day{}) {
			t.Errorf("ParseDay(%q) = %v, %v; want a refusal", in, got, ok)
		}
	}
}

func TestParseMonth(t *testing.T) {
	for in, want := range map[string]Month{"2026-11": {2026, 11}, "2015-01": {2015, 1}} {
		if got, ok := ParseMonth(in); !ok || got != want {
			t.Errorf("ParseMonth(%q) = %v, %v; want %v, true", in, got, ok, want)
		}
	}
	for _, in := range []string{"2026-13", "2026-00", "2026-1", "2026-011", "202611", ""} {
		if got, ok := ParseMonth(in); ok || got != (Month{}) {
			t.Errorf("ParseMonth(%q) = %v, %v; want a refusal", in, got, ok)
		}
	}
}

func TestMonthBounds(t *testing.T) {
	tests := []struct {
		m           Month
		last        int
		start, end  string
		prev, next_ Month
	}{
		{Month{2026, 1}, 31, "2025-12-31T21:00:00Z", "2026-01-31T21:00:00Z", Month{2025, 12}, Month{2026, 2}},
		{Month{2024, 2}, 29, "2024-01-31T21:00:00Z", "2024-02-29T21:00:00Z", Month{2024, 1}, Month{2024, 3}},
		{Month{2023, 2}, 28, "2023-01-31T21:00:00Z", "2023-02-28T21:00:00Z", Month{2023, 1}, Month{2023, 3}},
		{Month{2026, 4}, 30, "2026-03-31T21:00:00Z", "2026-04-30T21:00:00Z", Month{2026, 3}, Month{2026, 5}},
		{Month{2026, 12}, 31, "2026-11-30T21:00:00Z", "2026-12-31T21:00:00Z", Month{2026, 11}, Month{2027, 1}},
		{Month{2015, 1}, 31, "2014-12-31T21:00:00Z", "2015-01-31T21:00:00Z", Month{2014, 12}, Month{2015, 2}},
	}
	for _, tt := range tests {
		if got := tt.m.Last().Day; got != tt.last {
			t.Errorf("%v last day = %d, want %d", tt.m, got, tt.last)
		}
		if got := tt.m.Start().Format(time.RFC3339); got != tt.start {
			t.Errorf("%v start = %s, want %s", tt.m, got, tt.start)
		}
		if got := tt.m.End().Format(time.RFC3339); got != tt.end {
			t.Errorf("%v end = %s, want %s", tt.m, got, tt.end)
		}
		if got := tt.m.AddMonths(-1); got != tt.prev {
			t.Errorf("%v prev = %v, want %v", tt.m, got, tt.prev)
		}
		if got := tt.m.AddMonths(1); got != tt.next_ {
			t.Errorf("%v next = %v, want %v", tt.m, got, tt.next_)
		}
	}
}

func TestMoscowMidnight(t *testing.T) {
	// Moscow is UTC+3 all year since 2014: midnight is 21:00Z of the day before.
	tests := []struct {
		d    Day
		want string
	}{
		{Day{2026, 1, 1}, "2025-12-31T21:00:00Z"},
		{Day{2024, 3, 1}, "2024-02-29T21:00:00Z"},
		{Day{2026, 7, 15}, "2026-07-14T21:00:00Z"}, // summer: no DST
		{Day{2099, 12, 31}, "2099-12-30T21:00:00Z"},
	}
	for _, tt := range tests {
		if got := tt.d.Start().Format(time.RFC3339); got != tt.want {
			t.Errorf("%v start = %s, want %s", tt.d, got, tt.want)
		}
	}
}

func TestDayOf(t *testing.T) {
	tests := []struct {
		at   string
		want Day
	}{
		{"2026-11-19T20:59:59Z", Day{2026, 11, 19}},
		{"2026-11-19T21:00:00Z", Day{2026, 11, 20}}, // Moscow midnight
		{"2026-12-31T21:00:00Z", Day{2027, 1, 1}},
		{"2024-02-28T21:30:00Z", Day{2024, 2, 29}},
	}
	for _, tt := range tests {
		at, _ := time.Parse(time.RFC3339, tt.at)
		if got := DayOf(at); got != tt.want {
			t.Errorf("DayOf(%s) = %v, want %v", tt.at, got, tt.want)
		}
	}
	at, _ := time.Parse(time.RFC3339, "2026-11-30T21:00:00Z")
	if got := MonthOf(at); got != (Month{2026, 12}) {
		t.Errorf("MonthOf(%v) = %v", at, got)
	}
	if got := NextMidnight(at).Format(time.RFC3339); got != "2026-12-01T21:00:00Z" {
		t.Errorf("NextMidnight(%v) = %s", at, got)
	}
}

func TestDayArithmetic(t *testing.T) {
	tests := []struct {
		d    Day
		n    int
		want Day
	}{
		{Day{2024, 2, 28}, 1, Day{2024, 2, 29}},
		{Day{2024, 2, 29}, 1, Day{2024, 3, 1}},
		{Day{2023, 2, 28}, 1, Day{2023, 3, 1}},
		{Day{2026, 12, 31}, 1, Day{2027, 1, 1}},
		{Day{2026, 1, 3}, -6, Day{2025, 12, 28}},
		{Day{2026, 3, 1}, -1, Day{2026, 2, 28}},
		{Day{2026, 1, 1}, 30, Day{2026, 1, 31}},
		{Day{2026, 1, 1}, 31, Day{2026, 2, 1}},
	}
	for _, tt := range tests {
		got := tt.d.AddDays(tt.n)
		if got != tt.want {
			t.Errorf("%v + %d = %v, want %v", tt.d, tt.n, got, tt.want)
		}
		if back := tt.d.DaysUntil(got); back != tt.n {
			t.Errorf("%v.DaysUntil(%v) = %d, want %d", tt.d, got, back, tt.n)
		}
	}
}

func TestLimits(t *testing.T) {
	for _, tt := range []struct {
		d  Day
		ok bool
	}{
		{Day{2014, 12, 31}, false}, {Day{2015, 1, 1}, true}, {Day{2099, 12, 31}, true}, {Day{2100, 1, 1}, false},
	} {
		if tt.d.InLimits() != tt.ok {
			t.Errorf("%v.InLimits() = %v", tt.d, !tt.ok)
		}
	}
	for _, tt := range []struct {
		m  Month
		ok bool
	}{
		{Month{2014, 12}, false}, {Month{2015, 1}, true}, {Month{2099, 12}, true}, {Month{2100, 1}, false},
	} {
		if tt.m.InLimits() != tt.ok {
			t.Errorf("%v.InLimits() = %v", tt.m, !tt.ok)
		}
	}
}

// FuzzDayArithmetic checks the calendar against time.Time for any day and
// any shift: moving there and back is exact, and a Moscow day is 24 hours
// starting at 21:00Z of the day before.
func FuzzDayArithmetic(f *testing.F) {
	f.Add(2024, 2, 29, 1)
	f.Add(2026, 12, 31, 31)
	f.Add(2015, 1, 1, -1)
	f.Add(2099, 12, 31, -365)
	f.Fuzz(func(t *testing.T, y, m, d, n int) {
		y = 2015 + calendarAbs(y)%85
		m = 1 + calendarAbs(m)%12
		d = 1 + calendarAbs(d)%daysIn(y, time.Month(m))
		n %= 3000
		day := Day{y, time.Month(m), d}
		if got, ok := ParseDay(day.String()); !ok || got != day {
			t.Fatalf("round trip %v: %v %v", day, got, ok)
		}
		moved := day.AddDays(n)
		if moved.DaysUntil(day) != -n || moved.AddDays(-n) != day {
			t.Fatalf("%v + %d = %v does not go back", day, n, moved)
		}
		start := day.Start()
		if start.Hour() != 21 || start.Minute() != 0 || DayOf(start) != day || DayOf(start.Add(-time.Nanosecond)) != day.AddDays(-1) {
			t.Fatalf("%v starts at %v", day, start)
		}
		if got := day.AddDays(1).Start().Sub(start); got != 24*time.Hour {
			t.Fatalf("%v lasts %v", day, got)
		}
		month := Month{y, time.Month(m)}
		if month.Last().AddDays(1) != month.AddMonths(1).First() || month.End() != month.AddMonths(1).Start() {
			t.Fatalf("month %v bounds", month)
		}
	})
}

// FuzzParseDay holds ParseDay to time.Parse of the same layout, which also checks that the day
// exists: both accept the same strings (time.Parse also takes a signed year, which ParseDay
// refuses), and an accepted day prints back as its input.
func FuzzParseDay(f *testing.F) {
	for _, s := range []string{"2026-11-20", "2024-02-29", "2023-02-29", "2100-02-29", "+026-01-01", "2026-1-01", "0000-01-01", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := ParseDay(s)
		ref, err := time.Parse(time.DateOnly, s)
		if want := err == nil && unsignedYear(s); ok != want {
			t.Fatalf("ParseDay(%q) ok = %v, time.Parse: %v", s, ok, err)
		}
		if !ok {
			return
		}
		if d != (Day{ref.Year(), ref.Month(), ref.Day()}) || d.String() != s {
			t.Fatalf("ParseDay(%q) = %v, time.Parse %v", s, d, ref)
		}
	})
}

// FuzzParseMonth is FuzzParseDay for months.
func FuzzParseMonth(f *testing.F) {
	for _, s := range []string{"2026-11", "2015-01", "2026-13", "2026-00", "2026-1", "-026-01", "202611", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, ok := ParseMonth(s)
		ref, err := time.Parse("2006-01", s)
		if want := err == nil && unsignedYear(s); ok != want {
			t.Fatalf("ParseMonth(%q) ok = %v, time.Parse: %v", s, ok, err)
		}
		if !ok {
			return
		}
		if m != (Month{ref.Year(), ref.Month()}) || m.String() != s || m.First().MonthOf() != m {
			t.Fatalf("ParseMonth(%q) = %v, time.Parse %v", s, m, ref)
		}
	})
}

// unsignedYear reports whether s starts with four ASCII digits.
func unsignedYear(s string) bool {
	if len(s) < 4 {
		return false
	}
	for i := range 4 {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func calendarAbs(n int) int {
	if n < 0 {
		if n == -n { // math.MinInt
			return 0
		}
		return -n
	}
	return n
}
