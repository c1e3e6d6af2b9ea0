package query

import (
	"net/url"

	"forumstats.local/shared/reports"
)

// MaxSeriesDays is the longest daily series, both ends counted.
const MaxSeriesDays = 366

// Series is a validated daily-series request.
type Series struct {
	From, To reports.Day
	// Server is the raw, well-formed server parameter; "" means all servers.
	Server string
}

// Days lists the series' days in order.
func (s Series) Days() []reports.Day {
	return Query{Mode: ModeRange, From: s.From, To: s.To}.Days()
}

// Key is the canonical cache key of the series.
func (s Series) Key() string {
	return "series|" + s.From.String() + "|" + s.To.String() + "|" + s.Server
}

// ParseSeries validates a series request: a repeated parameter first, then
// the server, then the range (both days required, real, in limits, ordered,
// at most MaxSeriesDays). Unknown parameters are ignored, as elsewhere.
func ParseSeries(values url.Values) (Series, error) {
	for _, name := range []string{"from", "to", "server"} {
		if len(values[name]) > 1 {
			return Series{}, ErrInvalidParameters
		}
	}
	var s Series
	if vs, present := values["server"]; present {
		if !ValidServer(vs[0]) {
			return Series{}, ErrInvalidServer
		}
		s.Server = vs[0]
	}
	var ok bool
	if s.From, s.To, ok = dayRange(values, MaxSeriesDays); !ok {
		return Series{}, ErrInvalidRange
	}
	return s, nil
}
