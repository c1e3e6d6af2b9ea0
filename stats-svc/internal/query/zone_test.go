package query_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"forumstats.local/shared/reports"
	"forumstats.local/stats-svc/internal/query"
)

func TestValidZoneName(t *testing.T) {
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"Europe/Moscow", true}, {"America/Argentina/Buenos_Aires", true}, {"Etc/GMT+5", true},
		{"America/Port-au-Prince", true}, {"UTC", true}, {"EST5EDT", true},
		{"", false}, {"Local", false}, {"../etc/passwd", false}, {"/etc/passwd", false},
		{"Europe/../Moscow", false}, {"Europe//Moscow", false}, {"Europe/", false}, {"Europe/Mos cow", false},
		{"Europe\\Moscow", false}, {"Europe/Moscow\x00", false}, {"1Europe", false}, {"Europe/.hidden", false},
		{strings.Repeat("A", 64), true}, {strings.Repeat("A", 65), false}, {"Europe/Москва", false},
	} {
		if got := query.ValidZoneName(c.name); got != c.ok {
			t.Errorf("ValidZoneName(%q) = %v, want %v", c.name, got, c.ok)
		}
	}
}

func day(s string) reports.Day {
	d, ok := reports.ParseDay(s)
	if !ok {
		panic(s)
	}
	return d
}

func TestParseActivity(t *testing.T) {
	for _, c := range []struct {
		query  string
		err    error
		zone   string
		server string
	}{
		{"from=2026-11-01&to=2026-11-30", nil, "Europe/Moscow", ""},
		{"from=2026-11-01&to=2026-12-01", nil, "Europe/Moscow", ""},
		{"from=2026-11-01&to=2026-12-02", query.ErrInvalidRange, "", ""},
		{"from=2026-11-02&to=2026-11-01", query.ErrInvalidRange, "", ""},
		{"from=2026-11-01", query.ErrInvalidRange, "", ""},
		{"from=2026-02-30&to=2026-03-01", query.ErrInvalidRange, "", ""},
		{"from=2014-12-31&to=2015-01-01", query.ErrInvalidRange, "", ""},
		{"from=2026-11-01&to=2026-11-01&tz=Europe/Moscow", nil, "Europe/Moscow", ""},
		{"from=2026-11-01&to=2026-11-01&tz=America/New_York&server=007", nil, "America/New_York", "007"},
		{"from=2026-11-01&to=2026-11-01&tz=UTC", nil, "UTC", ""},
		{"from=2026-11-01&to=2026-11-01&tz=Europe/Moscow&tz=UTC", query.ErrInvalidParameters, "", ""},
		{"from=2026-11-01&to=2026-11-01&from=2026-11-01", query.ErrInvalidParameters, "", ""},
		{"from=2026-11-01&to=2026-11-01&tz=", query.ErrInvalidParameters, "", ""},
		{"from=2026-11-01&to=2026-11-01&tz=Mars/Olympus_Mons", query.ErrInvalidParameters, "", ""},
		{"from=2026-11-01&to=2026-11-01&tz=../../etc/passwd", query.ErrInvalidParameters, "", ""},
		{"from=2026-11-01&to=2026-11-01&tz=Local", query.ErrInvalidParameters, "", ""},
		{"from=2026-11-01&to=2026-11-01&tz=europe/moscow", query.ErrInvalidParameters, "", ""},
		// Zones off by a fraction of an hour over the range are refused.
		{"from=2026-11-01&to=2026-11-01&tz=Asia/Kolkata", query.ErrInvalidParameters, "", ""},
		{"from=2026-11-01&to=2026-11-01&tz=Australia/Adelaide", query.ErrInvalidParameters, "", ""},
		{"from=2026-11-01&to=2026-11-01&tz=Asia/Kathmandu", query.ErrInvalidParameters, "", ""},
		// Lord Howe is UTC+10:30, and UTC+11 in its summer.
		{"from=2026-06-01&to=2026-06-01&tz=Australia/Lord_Howe", query.ErrInvalidParameters, "", ""},
		{"from=2026-12-01&to=2026-12-31&tz=Australia/Lord_Howe", nil, "Australia/Lord_Howe", ""},
		// Pyongyang was UTC+8:30 from 2015-08-15 to 2018-05-04: the period decides.
		{"from=2016-01-01&to=2016-01-01&tz=Asia/Pyongyang", query.ErrInvalidParameters, "", ""},
		{"from=2018-05-01&to=2018-05-10&tz=Asia/Pyongyang", query.ErrInvalidParameters, "", ""},
		{"from=2019-01-01&to=2019-01-31&tz=Asia/Pyongyang", nil, "Asia/Pyongyang", ""},
		{"from=2015-08-01&to=2015-08-13&tz=Asia/Pyongyang", nil, "Asia/Pyongyang", ""},
		// The offsets are those of the range: a bad range answers first.
		{"from=x&to=2026-11-01&tz=Asia/Kolkata", query.ErrInvalidRange, "", ""},
		{"server=x&from=2026-11-01&to=2026-11-01&tz=Asia/Kolkata", query.ErrInvalidServer, "", ""},
		{"server=1&server=2&from=2026-11-01&to=2026-11-01", query.ErrInvalidParameters, "", ""},
	} {
		t.Run(c.query, func(t *testing.T) {
			v, _ := url.ParseQuery(c.query)
			a, err := query.ParseActivity(v)
			if err != c.err {
				t.Fatalf("error %v, want %v", err, c.err)
			}
			if err == nil && (a.Zone.Name() != c.zone || a.Server != c.server) {
				t.Errorf("zone %q server %q, want %q %q", a.Zone.Name(), a.Server, c.zone, c.server)
			}
		})
	}
}

func TestActivityKey(t *testing.T) {
	key := func(q string) string {
		v, _ := url.ParseQuery(q)
		a, err := query.ParseActivity(v)
		if err != nil {
			t.Fatal(err)
		}
		return a.Key()
	}
	if a, b := key("from=2026-11-01&to=2026-11-02"), key("to=2026-11-02&tz=Europe/Moscow&from=2026-11-01"); a != b {
		t.Errorf("Moscow given or not: %q != %q", a, b)
	}
	if a, b := key("from=2026-11-01&to=2026-11-02"), key("from=2026-11-01&to=2026-11-02&tz=UTC"); a == b {
		t.Errorf("the zone is not in the key: %q", a)
	}
	s1, _ := query.ParseSeries(url.Values{"from": {"2026-11-01"}, "to": {"2026-11-02"}})
	s2, _ := query.ParseSeries(url.Values{"from": {"2026-11-01"}, "to": {"2026-11-02"}, "tz": {"Europe/Moscow"}})
	s3, _ := query.ParseSeries(url.Values{"from": {"2026-11-01"}, "to": {"2026-11-02"}, "tz": {"UTC"}})
	if s1.Key() != "series|2026-11-01|2026-11-02|" || s2.Key() != s1.Key() || s3.Key() == s1.Key() {
		t.Errorf("series keys %q %q %q", s1.Key(), s2.Key(), s3.Key())
	}
}

func TestZoneDays(t *testing.T) {
	ny, _ := query.ZoneNamed("America/New_York")
	santiago, _ := query.ZoneNamed("America/Santiago")
	utc, _ := query.ZoneNamed("UTC")
	for _, c := range []struct {
		zone  query.Zone
		day   string
		start string // RFC 3339, UTC
		hours int64
	}{
		{query.Zone{}, "2026-11-20", "2026-11-19T21:00:00Z", 24},
		{utc, "2026-11-20", "2026-11-20T00:00:00Z", 24},
		{ny, "2026-03-07", "2026-03-07T05:00:00Z", 24},
		{ny, "2026-03-08", "2026-03-08T05:00:00Z", 23}, // clocks go forward at 02:00
		{ny, "2026-03-09", "2026-03-09T04:00:00Z", 24},
		{ny, "2026-11-01", "2026-11-01T04:00:00Z", 25}, // and back at 02:00
		{ny, "2026-11-02", "2026-11-02T05:00:00Z", 24},
		// Chile moves its clocks forward at midnight: the day begins at 01:00.
		{santiago, "2026-09-06", "2026-09-06T04:00:00Z", 23},
	} {
		t.Run(c.zone.Name()+" "+c.day, func(t *testing.T) {
			d := day(c.day)
			first, end := c.zone.Hours(d, d)
			if got := reports.LiveHourStart(first).Format(time.RFC3339); got != c.start {
				t.Errorf("starts %s, want %s", got, c.start)
			}
			if end-first != c.hours {
				t.Errorf("%d hours, want %d", end-first, c.hours)
			}
			// Every hour of the day is in it by the segments' rule, and none of its neighbours.
			for _, s := range c.zone.Segments(first-2, end+2) {
				for h := s.From; h < s.To; h++ {
					in := query.LocalDay(h, s.Offset) == query.UnixDay(d)
					if in != (h >= first && h < end) {
						t.Errorf("hour %s: in the day %v", reports.LiveHourStart(h), in)
					}
				}
			}
		})
	}
}

func TestSegments(t *testing.T) {
	ny, _ := query.ZoneNamed("America/New_York")
	first, end := ny.Hours(day("2026-03-01"), day("2026-11-30"))
	segs := ny.Segments(first, end)
	if len(segs) != 3 || segs[0].From != first || segs[2].To != end || segs[0].Offset != -5 || segs[1].Offset != -4 || segs[2].Offset != -5 {
		t.Fatalf("segments %+v", segs)
	}
	for i := 1; i < len(segs); i++ {
		if segs[i].From != segs[i-1].To {
			t.Errorf("segments %+v are not contiguous", segs)
		}
	}
	if got := reports.LiveHourStart(segs[1].From).Format(time.RFC3339); got != "2026-03-08T07:00:00Z" {
		t.Errorf("summer time begins %s", got)
	}
	if segs := (query.Zone{}).Segments(first, end); len(segs) != 1 || segs[0].Offset != 3 {
		t.Errorf("Moscow segments %+v", segs)
	}
}

func FuzzParseActivity(f *testing.F) {
	for _, s := range []string{"from=2026-11-01&to=2026-11-30&tz=America/New_York", "from=2026-11-01&to=2026-11-01&tz=Asia/Kolkata",
		"tz=../../../etc/passwd&from=2026-01-01&to=2026-01-01", "from=2026-03-08&to=2026-03-08&tz=EST5EDT&server=1", "tz=%00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		a, err := query.ParseActivity(v)
		if err != nil {
			return
		}
		if !query.ValidZoneName(a.Zone.Name()) || a.To.Before(a.From) || a.From.DaysUntil(a.To) >= query.MaxActivityDays {
			t.Fatalf("accepted %q: %+v", raw, a)
		}
		first, end := a.Hours()
		if n := end - first; n < int64(a.From.DaysUntil(a.To)+1)*23 || n > int64(a.From.DaysUntil(a.To)+1)*25 {
			t.Fatalf("%q: %d hours", raw, n)
		}
		if !a.Zone.WholeHours(reports.LiveHourStart(first), reports.LiveHourStart(end)) {
			t.Fatalf("%q: accepted a zone off by a fraction of an hour", raw)
		}
	})
}

// fuzzZones are zones of every kind: fixed, daylight saving north and south, a change at
// midnight, and whole-hour offsets far from UTC.
var fuzzZones = []string{"Europe/Moscow", "UTC", "America/New_York", "Australia/Sydney", "America/Santiago",
	"Pacific/Kiritimati", "Pacific/Pago_Pago", "Europe/London", "America/Havana", "Asia/Tokyo"}

// The days of a zone tile its hours: consecutive days share their bound, each has 23 to 25
// hours, and the segments' day numbers give every hour to exactly its day.
func FuzzZoneHours(f *testing.F) {
	f.Add(uint8(2), uint16(4083)) // New York, 2026-03-08
	f.Add(uint8(4), uint16(4264)) // Santiago, 2026-09-06
	f.Fuzz(func(t *testing.T, zi uint8, offset uint16) {
		z, ok := query.ZoneNamed(fuzzZones[int(zi)%len(fuzzZones)])
		if !ok {
			t.Fatal("a listed zone is unknown")
		}
		d := reports.MinDay.AddDays(int(offset) % (reports.MinDay.DaysUntil(reports.MaxDay) - 1))
		first, mid := z.Hours(d, d)
		_, end := z.Hours(d.AddDays(1), d.AddDays(1))
		if n := mid - first; n < 23 || n > 25 {
			t.Fatalf("%s %s: %d hours", z.Name(), d, n)
		}
		if m, _ := z.Hours(d.AddDays(1), d.AddDays(1)); m != mid {
			t.Fatalf("%s %s: the next day begins at %d, not %d", z.Name(), d, m, mid)
		}
		for _, s := range z.Segments(first, end) {
			for h := s.From; h < s.To; h++ {
				want := query.UnixDay(d)
				if h >= mid {
					want++
				}
				if got := query.LocalDay(h, s.Offset); got != want {
					t.Fatalf("%s: hour %s is in day %d, want %d", z.Name(), reports.LiveHourStart(h), got, want)
				}
			}
		}
	})
}
