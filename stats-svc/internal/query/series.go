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
	// Zone is the days' zone: Moscow's days are the daily reports', any other zone's are
	// composed from the hourly live counts.
	Zone Zone
}

// Days lists the series' days in order.
func (s Series) Days() []reports.Day {
	return Query{Mode: ModeRange, From: s.From, To: s.To}.Days()
}

// Key is the canonical cache key of the series.
func (s Series) Key() string {
	k := "series|" + s.From.String() + "|" + s.To.String() + "|" + s.Server
	if !s.Zone.Moscow() {
		k += "|" + s.Zone.Name() // Moscow (given or not) keeps the key it always had
	}
	return k
}

// ParseSeries validates a series request: a repeated parameter first, then the server, the
// zone's name, the range (both days required, real, in limits, ordered, at most MaxSeriesDays),
// then the zone's offsets over the range (whole hours). Unknown parameters are ignored, as
// elsewhere.
func ParseSeries(values url.Values) (Series, error) {
	var s Series
	var err error
	s.From, s.To, s.Server, s.Zone, err = parseZoned(values, MaxSeriesDays)
	if err != nil {
		return Series{}, err
	}
	return s, nil
}
