package query

import (
	"net/url"
	"time"

	"forumstats.local/shared/reports"
)

// maxZoneLen bounds a zone name (the longest IANA name, America/Argentina/ComodRivadavia, is 32).
const maxZoneLen = 64

// Zone is the time zone a request's days and hours are in: an IANA name and its rules. The zero
// Zone is the reports' own calendar, Europe/Moscow, whether tz names it or not: one request,
// one cache key.
type Zone struct {
	name string
	loc  *time.Location
}

// Moscow reports whether z is the reports' calendar, whose days the daily reports are.
func (z Zone) Moscow() bool { return z.loc == nil }

// Name is the zone's IANA name.
func (z Zone) Name() string {
	if z.loc == nil {
		return reports.Timezone
	}
	return z.name
}

// Location is the zone's rules.
func (z Zone) Location() *time.Location {
	if z.loc == nil {
		return reports.Moscow
	}
	return z.loc
}

// ZoneNamed is the zone of a valid name (ParseZone's rules); ok false otherwise.
func ZoneNamed(name string) (Zone, bool) {
	return parseZone(url.Values{"tz": {name}})
}

// parseZone reads tz (absent: DefaultZone). A name is refused unless it is a plausible IANA
// name (ValidZoneName) that the zone database knows: the name reaches the zone loader, which
// reads files on a system with a zoneinfo directory, so nothing but letters, digits and
// "/_+-" in non-empty components gets there.
func parseZone(values url.Values) (Zone, bool) {
	vs, present := values["tz"]
	if !present {
		return Zone{}, true
	}
	name := vs[0]
	if name == reports.Timezone {
		return Zone{}, true
	}
	if !ValidZoneName(name) {
		return Zone{}, false
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return Zone{}, false
	}
	return Zone{name: name, loc: loc}, true
}

// ValidZoneName reports whether s has the shape of an IANA zone name: 1 to 64 characters of
// letters, digits, '_', '+', '-' in components separated by '/', each beginning with a letter
// (so no "..", no absolute path, no empty component), and not "Local" (the loader's name of the
// machine's zone, which would make the answer depend on the host).
func ValidZoneName(s string) bool {
	if len(s) == 0 || len(s) > maxZoneLen || s == "Local" {
		return false
	}
	start := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
		switch {
		case start && !letter:
			return false
		case c == '/':
			start = true
			continue
		case letter, c >= '0' && c <= '9', c == '_', c == '+', c == '-':
		default:
			return false
		}
		start = false
	}
	return !start
}

// DayStart is the first instant of day d in z. Where midnight does not exist (a clock change
// at 00:00), the day begins at its first existing hour.
func (z Zone) DayStart(d reports.Day) time.Time {
	t := time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, z.Location())
	for {
		y, m, dd := t.In(z.Location()).Date()
		if (reports.Day{Year: y, Month: m, Day: dd}).Before(d) {
			t = t.Add(time.Hour) // Go chose the instant before the skipped midnight
			continue
		}
		return t
	}
}

// Hours is the UTC hours [first, end) of the days from..to in z (live_counts hours).
func (z Zone) Hours(from, to reports.Day) (first, end int64) {
	return reports.LiveHour(z.DayStart(from)), reports.LiveHour(z.DayStart(to.AddDays(1)))
}

// WholeHours reports whether every offset z has over [start, end) is a whole number of hours,
// so that its days and hours are unions of the UTC hours live counts are kept in.
func (z Zone) WholeHours(start, end time.Time) bool {
	for t := start; t.Before(end); {
		_, off := t.In(z.Location()).Zone()
		if off%3600 != 0 {
			return false
		}
		_, next := t.In(z.Location()).ZoneBounds()
		if next.IsZero() || !next.After(t) {
			return true
		}
		t = next
	}
	return true
}

// Segment is a run of UTC hours [From, To) over which z keeps one offset, of Offset hours: the
// local day of hour h in it is (h + Offset) div 24 days after 1970-01-01.
type Segment struct {
	From, To int64
	Offset   int64
}

// Segments cuts the hours [first, end) where z's offset changes (at most twice a year); z must
// have whole-hour offsets there.
func (z Zone) Segments(first, end int64) []Segment {
	var out []Segment
	for h := first; h < end; {
		t := reports.LiveHourStart(h).In(z.Location())
		_, off := t.Zone()
		_, next := t.ZoneBounds()
		to := end
		if !next.IsZero() {
			// A bound inside an hour cannot happen with whole-hour offsets; round up to be safe.
			to = min(end, max(h+1, reports.LiveHour(next.Add(time.Hour-time.Nanosecond))))
		}
		out = append(out, Segment{From: h, To: to, Offset: int64(off / 3600)})
		h = to
	}
	return out
}

// UnixDay is the number of days from 1970-01-01 to d, the day number of Segment.
func UnixDay(d reports.Day) int64 {
	return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

// LocalDay is the day number (UnixDay) in z of UTC hour h, by floor division so that hours
// before 1970 would stay right.
func LocalDay(h, offset int64) int64 {
	x := h + offset
	if x < 0 {
		return (x - 23) / 24
	}
	return x / 24
}
