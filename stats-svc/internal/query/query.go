// Package query turns the query string of the statistics and icons
// operations into a resolved request, in a fixed order of checks (the first
// failure answers; stats-svc/README.md, Order of checks). Its periods are days and months of the Moscow calendar
// (shared/reports).
package query

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
	"time"

	"forumstats.local/shared/reports"
)

// Validation failures; the HTTP layer maps each to its status and code.
var (
	ErrInvalidParameters = errors.New("invalid parameters")
	ErrInvalidRange      = errors.New("invalid range")
	ErrInvalidServer     = errors.New("invalid server")
)

// Mode is the period mode of a statistics request.
type Mode string

const (
	ModeMonth Mode = "month"
	ModeDay   Mode = "day"
	ModeWeek  Mode = "week"
	ModeRange Mode = "range"
)

// MaxRangeDays is the longest custom range, both ends counted.
const MaxRangeDays = 31

// maxServerLen bounds the server parameter (a snowflake has at most 20 digits).
const maxServerLen = 20

// Query is a validated statistics request with every default resolved.
type Query struct {
	Mode Mode
	// Month is set in month mode only.
	Month reports.Month
	// From and To are the first and last included days (day, week, range).
	From, To reports.Day
	// Server is the raw, well-formed server parameter; "" means all servers.
	Server string
}

// Composite reports whether the period is assembled from daily reports.
func (q Query) Composite() bool { return q.Mode != ModeMonth }

// Kind is the kind of the stored reports the period is composed from.
func (q Query) Kind() reports.Kind {
	if q.Composite() {
		return reports.KindDay
	}
	return reports.KindMonth
}

// Days lists the days of a composite period in order.
func (q Query) Days() []reports.Day {
	n := q.From.DaysUntil(q.To) + 1
	days := make([]reports.Day, 0, n)
	for i := 0; i < n; i++ {
		days = append(days, q.From.AddDays(i))
	}
	return days
}

// Start and End bound the period: Start included, End excluded, in UTC.
func (q Query) Start() time.Time {
	if q.Mode == ModeMonth {
		return q.Month.Start()
	}
	return q.From.Start()
}

func (q Query) End() time.Time {
	if q.Mode == ModeMonth {
		return q.Month.End()
	}
	return q.To.End()
}

// Key is a canonical cache key: two queries with equal keys get equal answers
// from equal data at the same moment.
func (q Query) Key() string {
	var b strings.Builder
	b.Grow(48)
	b.WriteString(string(q.Mode))
	b.WriteByte('|')
	if q.Mode == ModeMonth {
		b.WriteString(q.Month.String())
	} else {
		b.WriteString(q.From.String())
		b.WriteByte('|')
		b.WriteString(q.To.String())
	}
	b.WriteByte('|')
	b.WriteString(q.Server)
	return b.String()
}

var modeForbids = map[Mode][]string{
	ModeMonth: {"date", "from", "to"},
	ModeDay:   {"month", "from", "to"},
	ModeWeek:  {"month", "from", "to"},
	ModeRange: {"month", "date"},
}

var singleParams = []string{"period", "month", "date", "from", "to", "server"}

// Parse validates a statistics request against the clock now. The checks
// run in this order and the first failure answers:
// period, repeats, forbidden parameters, server, month, date, range rules.
func Parse(values url.Values, now time.Time) (Query, error) {
	q := Query{Mode: ModeMonth}
	if vs, ok := values["period"]; ok {
		for _, v := range vs {
			if _, known := modeForbids[Mode(v)]; !known {
				return Query{}, ErrInvalidParameters
			}
		}
		q.Mode = Mode(vs[0])
	}
	for _, name := range singleParams {
		if len(values[name]) > 1 {
			return Query{}, ErrInvalidParameters
		}
	}
	for _, name := range modeForbids[q.Mode] {
		if _, present := values[name]; present {
			return Query{}, ErrInvalidParameters
		}
	}
	if vs, present := values["server"]; present {
		if !ValidServer(vs[0]) {
			return Query{}, ErrInvalidServer
		}
		q.Server = vs[0]
	}

	switch q.Mode {
	case ModeMonth:
		vs, present := values["month"]
		if !present {
			q.Month = reports.MonthOf(now)
			return q, nil
		}
		m, ok := reports.ParseMonth(vs[0])
		if !ok || !m.InLimits() {
			return Query{}, ErrInvalidParameters
		}
		q.Month = m
	case ModeDay, ModeWeek:
		d := reports.DayOf(now)
		if vs, present := values["date"]; present {
			var ok bool
			if d, ok = reports.ParseDay(vs[0]); !ok || !d.InLimits() {
				return Query{}, ErrInvalidParameters
			}
		}
		q.From, q.To = d, d
		if q.Mode == ModeWeek {
			q.From = d.AddDays(-6)
		}
	case ModeRange:
		var ok bool
		if q.From, q.To, ok = dayRange(values, MaxRangeDays); !ok {
			return Query{}, ErrInvalidRange
		}
	}
	return q, nil
}

// dayRange reads from and to: both present, real days in limits, from ≤ to, at most maxDays
// both ends counted.
func dayRange(values url.Values, maxDays int) (from, to reports.Day, ok bool) {
	from, ok1 := rangeDate(values, "from")
	to, ok2 := rangeDate(values, "to")
	return from, to, ok1 && ok2 && !to.Before(from) && from.DaysUntil(to)+1 <= maxDays
}

func rangeDate(values url.Values, name string) (reports.Day, bool) {
	vs, present := values[name]
	if !present {
		return reports.Day{}, false
	}
	d, ok := reports.ParseDay(vs[0])
	return d, ok && d.InLimits()
}

// ValidServer reports whether s is a well-formed server parameter:
// 1 to 20 ASCII digits.
func ValidServer(s string) bool {
	if len(s) == 0 || len(s) > maxServerLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ParseIconsServer reads the only parameter of the icons operation; "" means
// all servers. A repeated server is as ambiguous as a malformed one.
func ParseIconsServer(values url.Values) (string, error) {
	vs, present := values["server"]
	if !present {
		return "", nil
	}
	if len(vs) != 1 || !ValidServer(vs[0]) {
		return "", ErrInvalidServer
	}
	return vs[0], nil
}

// ServerNumber reads a well-formed server parameter as a catalog number
// (leading zeros allowed); ok is false when it cannot be one.
func ServerNumber(s string) (int, bool) {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n <= 0 {
		return 0, false
	}
	return int(n), true
}
