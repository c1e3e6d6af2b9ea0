package query

import (
	"net/url"

	"forumstats.local/shared/reports"
)

// MaxActivityDays is the longest hourly activity request, both ends counted.
const MaxActivityDays = 31

// Activity is a validated hourly-activity request: the hours of the days From..To in Zone.
type Activity struct {
	From, To reports.Day
	// Server is the raw, well-formed server parameter; "" means all servers.
	Server string
	Zone   Zone
}

// Hours is the request's UTC hours [first, end).
func (a Activity) Hours() (first, end int64) { return a.Zone.Hours(a.From, a.To) }

// Key is the canonical cache key; the zone is part of it (its name: the answer names it).
func (a Activity) Key() string {
	return "activity|" + a.From.String() + "|" + a.To.String() + "|" + a.Server + "|" + a.Zone.Name()
}

// ParseActivity validates an activity request: a repeated parameter, the server, the zone's
// name, the range (both days required, real, in limits, ordered, at most MaxActivityDays), then
// the zone's offsets over the range (whole hours).
func ParseActivity(values url.Values) (Activity, error) {
	var a Activity
	var err error
	a.From, a.To, a.Server, a.Zone, err = parseZoned(values, MaxActivityDays)
	return a, err
}

// parseZoned is the checks the zoned operations share, in their order.
func parseZoned(values url.Values, maxDays int) (from, to reports.Day, server string, z Zone, err error) {
	for _, name := range []string{"from", "to", "server", "tz"} {
		if len(values[name]) > 1 {
			return from, to, "", Zone{}, ErrInvalidParameters
		}
	}
	if vs, present := values["server"]; present {
		if !ValidServer(vs[0]) {
			return from, to, "", Zone{}, ErrInvalidServer
		}
		server = vs[0]
	}
	var ok bool
	if z, ok = parseZone(values); !ok {
		return from, to, "", Zone{}, ErrInvalidParameters
	}
	if from, to, ok = dayRange(values, maxDays); !ok {
		return from, to, "", Zone{}, ErrInvalidRange
	}
	// Counts are kept per UTC hour: a zone half an hour (or 45 minutes) off cannot be composed.
	if !z.WholeHours(z.DayStart(from), z.DayStart(to.AddDays(1))) {
		return from, to, "", Zone{}, ErrInvalidParameters
	}
	return from, to, server, z, nil
}
