package query

import (
	"fmt"
	"time"
	// The Moscow calendar must work in a scratch container with no zoneinfo
	// files, so the package that needs the zone carries the database itself.
	_ "time/tzdata"
)

// Timezone is the calendar every period boundary is computed in.
const Timezone = "Europe/Moscow"

var moscow = mustLoad(Timezone)

func mustLoad(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(fmt.Sprintf("load time zone %s: %v", name, err))
	}
	return loc
}

// Moscow returns the Europe/Moscow location.
func Moscow() *time.Location { return moscow }

// Inclusive limits of every date a request may name.
var (
	MinDate = Date{2015, time.January, 1}
	MaxDate = Date{2099, time.December, 31}
)

// Date is a day of the Moscow calendar.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// DateOf returns the Moscow calendar day that contains t.
func DateOf(t time.Time) Date {
	y, m, d := t.In(moscow).Date()
	return Date{y, m, d}
}

// ParseDate reads exactly YYYY-MM-DD and accepts only days that exist.
func ParseDate(s string) (Date, bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return Date{}, false
	}
	y, ok1 := digits(s[0:4])
	m, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > daysIn(y, time.Month(m)) {
		return Date{}, false
	}
	return Date{y, time.Month(m), d}, true
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

func (d Date) String() string {
	return fmt.Sprintf("%04d-%02d-%02d", d.Year, int(d.Month), d.Day)
}

// AddDays moves by n calendar days (negative allowed).
func (d Date) AddDays(n int) Date {
	y, m, dd := time.Date(d.Year, d.Month, d.Day+n, 0, 0, 0, 0, time.UTC).Date()
	return Date{y, m, dd}
}

// utc is the date as a UTC midnight, used only for day arithmetic (UTC has
// no DST, so differences are exact multiples of 24 h).
func (d Date) utc() time.Time { return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC) }

// DaysUntil counts days from d to e (e - d); negative when e is earlier.
func (d Date) DaysUntil(e Date) int {
	return int(e.utc().Sub(d.utc()) / (24 * time.Hour))
}

// Before reports whether d is earlier than e.
func (d Date) Before(e Date) bool { return d.utc().Before(e.utc()) }

// Start is the first instant of the day: 00:00 Moscow, in UTC.
func (d Date) Start() time.Time {
	return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, moscow).UTC()
}

// InLimits reports whether d lies in MinDate..MaxDate.
func (d Date) InLimits() bool { return !d.Before(MinDate) && !MaxDate.Before(d) }

// Month is a month of the Moscow calendar.
type Month struct {
	Year  int
	Month time.Month
}

// Inclusive limits of the month parameter.
var (
	MinMonth = Month{2015, time.January}
	MaxMonth = Month{2099, time.December}
)

// MonthOf returns the Moscow calendar month that contains t.
func MonthOf(t time.Time) Month {
	d := DateOf(t)
	return Month{d.Year, d.Month}
}

// ParseMonth reads exactly YYYY-MM.
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

func (m Month) String() string { return fmt.Sprintf("%04d-%02d", m.Year, int(m.Month)) }

// AddMonths moves by n months (negative allowed).
func (m Month) AddMonths(n int) Month {
	y, mm, _ := time.Date(m.Year, m.Month+time.Month(n), 1, 0, 0, 0, 0, time.UTC).Date()
	return Month{y, mm}
}

// First and Last are the first and last days of the month.
func (m Month) First() Date { return Date{m.Year, m.Month, 1} }
func (m Month) Last() Date  { return Date{m.Year, m.Month, daysIn(m.Year, m.Month)} }

// Start is 00:00 Moscow on the 1st; End is the Start of the next month.
func (m Month) Start() time.Time { return m.First().Start() }
func (m Month) End() time.Time   { return m.AddMonths(1).Start() }

// InLimits reports whether m lies in MinMonth..MaxMonth.
func (m Month) InLimits() bool {
	k := m.Year*12 + int(m.Month)
	return k >= MinMonth.Year*12+int(MinMonth.Month) && k <= MaxMonth.Year*12+int(MaxMonth.Month)
}

// NextMidnight is the next 00:00 Moscow strictly after t: the moment "today"
// and every default changes.
func NextMidnight(t time.Time) time.Time { return DateOf(t).AddDays(1).Start() }
