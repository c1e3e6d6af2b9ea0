package reports

import (
	"fmt"
	"time"

	// The Moscow calendar must work in a scratch container with no zoneinfo files, so the one
	// package that defines the zone carries the zone database itself.
	_ "time/tzdata"
)

// Timezone is the calendar every report period and every request period is in
// (Europe/Moscow, UTC+3 all year: a Moscow day runs from 21:00 UTC to 21:00 UTC).
const Timezone = "Europe/Moscow"

// Moscow is the location of Timezone: the one definition of the zone in the workspace.
var Moscow = mustLoad(Timezone)

func mustLoad(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(fmt.Sprintf("load time zone %s: %v", name, err))
	}
	return loc
}

// Day is a day of the Moscow calendar.
type Day struct {
	Year  int
	Month time.Month
	Day   int
}

// Month is a month of the Moscow calendar.
type Month struct {
	Year  int
	Month time.Month
}

// Inclusive limits of every day and month a report or a request may name.
var (
	MinDay   = Day{2015, time.January, 1}
	MaxDay   = Day{2099, time.December, 31}
	MinMonth = Month{2015, time.January}
	MaxMonth = Month{2099, time.December}
)

// DayOf returns the Moscow day that holds t: "today" for a clock reading t.
func DayOf(t time.Time) Day {
	y, m, d := t.In(Moscow).Date()
	return Day{y, m, d}
}

// MonthOf returns the Moscow month that holds t: "this month" for a clock reading t.
func MonthOf(t time.Time) Month {
	y, m, _ := t.In(Moscow).Date()
	return Month{y, m}
}

// NextMidnight is the next 00:00 Moscow strictly after t: the moment "today", "this month" and
// every period that defaults to them change.
func NextMidnight(t time.Time) time.Time { return DayOf(t).AddDays(1).Start() }

// ParseDay reads exactly YYYY-MM-DD and accepts only days that exist. It does not check the
// limits (InLimits does).
func ParseDay(s string) (Day, bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return Day{}, false
	}
	y, ok1 := digits(s[0:4])
	m, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > daysIn(y, time.Month(m)) {
		return Day{}, false
	}
	return Day{y, time.Month(m), d}, true
}

// ParseMonth reads exactly YYYY-MM. It does not check the limits (InLimits does).
func ParseMonth(s string) (Month, bool) {
	if len(s) != 7 || s[4] != '-' {
		return Month{}, false
	}
	y, ok1 := digits(s[0:4])
	m, ok2 := digits(s[5:7])
	if !ok1 || !ok2 || m < 1 || m > 12 {
		return Month{}, false
	}
	return Month{y, time.Month(m)}, true
}

// digits parses a fixed-width run of ASCII digits (no sign, no spaces).
func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, len(s) > 0
}

func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// String is the day as reports store it and requests name it: YYYY-MM-DD.
func (d Day) String() string {
	return fmt.Sprintf("%04d-%02d-%02d", d.Year, int(d.Month), d.Day)
}

// AddDays moves by n calendar days (negative allowed).
func (d Day) AddDays(n int) Day {
	y, m, dd := time.Date(d.Year, d.Month, d.Day+n, 0, 0, 0, 0, time.UTC).Date()
	return Day{y, m, dd}
}

// utc is the day as a UTC midnight, for day arithmetic only (UTC has no DST, so differences are
// exact multiples of 24 h).
func (d Day) utc() time.Time { return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC) }

// DaysUntil counts days from d to e (e - d); negative when e is earlier.
func (d Day) DaysUntil(e Day) int {
	return int(e.utc().Sub(d.utc()) / (24 * time.Hour))
}

// Before reports whether d is earlier than e.
func (d Day) Before(e Day) bool { return d.utc().Before(e.utc()) }

// Start is the first instant of the day, 00:00 Moscow, in UTC.
func (d Day) Start() time.Time {
	return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, Moscow).UTC()
}

// End is the Start of the next day: the day is [Start, End).
func (d Day) End() time.Time { return d.AddDays(1).Start() }

// InLimits reports whether d lies in MinDay..MaxDay.
func (d Day) InLimits() bool { return !d.Before(MinDay) && !MaxDay.Before(d) }

// MonthOf is the month that holds d.
func (d Day) MonthOf() Month { return Month{d.Year, d.Month} }

// String is the month as reports store it and requests name it: YYYY-MM.
func (m Month) String() string { return fmt.Sprintf("%04d-%02d", m.Year, int(m.Month)) }

// AddMonths moves by n months (negative allowed).
func (m Month) AddMonths(n int) Month {
	y, mm, _ := time.Date(m.Year, m.Month+time.Month(n), 1, 0, 0, 0, 0, time.UTC).Date()
	return Month{y, mm}
}

// First and Last are the first and last days of the month.
func (m Month) First() Day { return Day{m.Year, m.Month, 1} }
func (m Month) Last() Day  { return Day{m.Year, m.Month, daysIn(m.Year, m.Month)} }

// Start is 00:00 Moscow on the 1st; End is the Start of the next month: the month is [Start, End).
func (m Month) Start() time.Time { return m.First().Start() }
func (m Month) End() time.Time   { return m.AddMonths(1).Start() }

// InLimits reports whether m lies in MinMonth..MaxMonth.
func (m Month) InLimits() bool {
	k := m.Year*12 + int(m.Month)
	return k >= MinMonth.Year*12+int(MinMonth.Month) && k <= MaxMonth.Year*12+int(MaxMonth.Month)
}
