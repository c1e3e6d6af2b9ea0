package answers

import (
	"slices"
	"time"

	"forumstats.local/shared/reports"
	"forumstats.local/stats-svc/internal/query"
)

// SeriesData is everything a series answer is composed from.
type SeriesData struct {
	RefreshMinutes int
	// Servers are ordered by number; exactly one when the query names a server.
	Servers []Server
	// Reports are the daily reports of the series' days of those servers.
	Reports []reports.Row
	// Channels are the daily channel counts of the days (one server only).
	Channels []reports.ChannelRow

	// In a zone other than Moscow's, the days are composed from the live counts instead:
	// Coverage is each server's live coverage (by guild id; absent: never counted), DayCounts
	// the counts summed per day of the zone, Names the channels' names by id.
	Coverage  map[string]reports.LiveCoverage
	DayCounts []DayCount
	Names     map[string]string
}

// DayCount is a server's (ChannelID "") or one of its channels' messages of one day of a zone,
// the day numbered as query.UnixDay; a day may come in parts (its hours before and after a
// change of offset), which add up.
type DayCount struct {
	GuildID   string
	Day       int64
	ChannelID string
	Messages  int64
}

type seriesChannel struct {
	ID     string   `json:"id"`
	Name   string   `json:"name"`
	Totals []*int64 `json:"totals"`
	sum    int64
	newest string // the day Name is from
}

type seriesServer struct {
	Number   int              `json:"number"`
	Name     string           `json:"name"`
	GuildID  string           `json:"guildId"`
	Totals   []*int64         `json:"totals"`
	Statuses []string         `json:"statuses"`
	Channels *[]seriesChannel `json:"channels,omitempty"`
}

type seriesBody struct {
	From           string         `json:"from"`
	To             string         `json:"to"`
	Timezone       string         `json:"timezone"`
	RefreshMinutes int            `json:"refreshMinutes"`
	Days           []string       `json:"days"`
	Servers        []seriesServer `json:"servers"`
}

// Series composes the daily-series answer of q at the moment now: per server
// and day the stored total and status (stale by the same rules as the
// statistics answer), or null and missing without a report; with a server,
// its channels' daily counts too.
func Series(q query.Series, now time.Time, d SeriesData) (Answer, error) {
	if q.Server != "" && len(d.Servers) != 1 {
		return Answer{}, ErrServerNotFound
	}
	if !q.Zone.Moscow() {
		return seriesInZone(q, now, d)
	}
	days := q.Days()
	index := make(map[string]int, len(days))
	body := seriesBody{From: q.From.String(), To: q.To.String(), Timezone: reports.Timezone, RefreshMinutes: d.RefreshMinutes,
		Days: make([]string, len(days)), Servers: make([]seriesServer, len(d.Servers))}
	for i, day := range days {
		body.Days[i] = day.String()
		index[body.Days[i]] = i
	}
	// As for statistics: which days are refreshed changes at Moscow midnight.
	validUntil := reports.NextMidnight(now)
	refreshed := reports.RefreshedAt(now)
	at := make(map[string]int, len(d.Servers))
	// One backing array for every server's totals: 36,600 cells for a full
	// all-servers year, allocated once.
	cells := make([]int64, len(days)*len(d.Servers))
	for i, s := range d.Servers {
		at[s.GuildID] = i
		out := seriesServer{Number: s.Number, Name: s.Name, GuildID: s.GuildID,
			Totals: make([]*int64, len(days)), Statuses: make([]string, len(days))}
		for j := range out.Statuses {
			out.Statuses[j] = reports.StatusMissing
		}
		body.Servers[i] = out
	}
	for k := range d.Reports {
		r := &d.Reports[k]
		i, ok1 := at[r.GuildID]
		j, ok2 := index[r.Period]
		if !ok1 || !ok2 {
			continue // a server that left the catalog, or a day outside the series
		}
		cell := &cells[i*len(days)+j]
		*cell = r.TotalMessages
		s := &body.Servers[i]
		s.Totals[j] = cell
		s.Statuses[j] = reports.StatusOK
		if staleRow(r, reports.KindDay, refreshed, now, d.RefreshMinutes, &validUntil) {
			s.Statuses[j] = reports.StatusStale
		}
	}
	if q.Server != "" {
		chans := seriesChannels(d.Channels, d.Servers[0].GuildID, index, body.Servers[0].Totals)
		body.Servers[0].Channels = &chans
	}
	b, err := encode(body, 64+14*len(days)+len(d.Servers)*(128+12*len(days))+len(d.Channels)*8)
	return Answer{Body: b, ValidUntil: validUntil}, err
}

// seriesChannels lays out the channels of one server: a day without a count
// is 0 when the day's report exists (present[i] != nil) and null when not;
// the name is the newest day's; ordered by sum descending, then id.
func seriesChannels(rows []reports.ChannelRow, guild string, index map[string]int, present []*int64) []seriesChannel {
	zero := int64(0)
	byID := map[string]int{}
	var out []seriesChannel
	for _, r := range rows {
		j, ok := index[r.Period]
		if !ok || r.GuildID != guild || present[j] == nil {
			continue
		}
		i, seen := byID[r.ChannelID]
		if !seen {
			i = len(out)
			byID[r.ChannelID] = i
			totals := make([]*int64, len(present))
			for k, p := range present {
				if p != nil {
					totals[k] = &zero
				}
			}
			out = append(out, seriesChannel{ID: r.ChannelID, Totals: totals})
		}
		c := &out[i]
		n := r.Messages
		c.Totals[j] = &n
		c.sum += n
		if r.Period >= c.newest {
			c.Name, c.newest = r.Name, r.Period
		}
	}
	slices.SortFunc(out, func(a, b seriesChannel) int { return channelOrder(a.sum, a.ID, b.sum, b.ID) })
	if out == nil {
		out = []seriesChannel{}
	}
	return out
}

// seriesInZone composes the series of a zone other than Moscow's from the live counts: a day is
// ok when every one of its hours is (reports.HourStatus), with the sum of its hours, and missing
// (null) otherwise; the channels as for the reports, a known day without a count being 0.
func seriesInZone(q query.Series, now time.Time, d SeriesData) (Answer, error) {
	days := q.Days()
	body := seriesBody{From: q.From.String(), To: q.To.String(), Timezone: q.Zone.Name(), RefreshMinutes: d.RefreshMinutes,
		Days: make([]string, len(days)), Servers: make([]seriesServer, len(d.Servers))}
	index := make(map[string]int, len(days))
	byNumber := make(map[int64]int, len(days))
	bounds := make([]int64, len(days)+1) // day i is the hours bounds[i]..bounds[i+1]
	for i, day := range days {
		body.Days[i] = day.String()
		index[body.Days[i]] = i
		byNumber[query.UnixDay(day)] = i
		bounds[i], _ = q.Zone.Hours(day, day)
	}
	_, bounds[len(days)] = q.Zone.Hours(q.To, q.To)
	cells := make([]int64, len(days)*len(d.Servers))
	at := make(map[string]int, len(d.Servers))
	for i, s := range d.Servers {
		at[s.GuildID] = i
		out := seriesServer{Number: s.Number, Name: s.Name, GuildID: s.GuildID,
			Totals: make([]*int64, len(days)), Statuses: make([]string, len(days))}
		cov := d.Coverage[s.GuildID]
		for j := range days {
			out.Statuses[j] = reports.StatusOK
			for h := bounds[j]; h < bounds[j+1]; h++ {
				if reports.HourStatus(h, cov) != reports.HourOK {
					out.Statuses[j] = reports.StatusMissing
					break
				}
			}
			if out.Statuses[j] == reports.StatusOK {
				out.Totals[j] = &cells[i*len(days)+j]
			}
		}
		body.Servers[i] = out
	}
	var chans []reports.ChannelRow
	for _, c := range d.DayCounts {
		i, ok1 := at[c.GuildID]
		j, ok2 := byNumber[c.Day]
		if !ok1 || !ok2 || body.Servers[i].Totals[j] == nil {
			continue
		}
		if c.ChannelID == "" {
			*body.Servers[i].Totals[j] += c.Messages
			continue
		}
		chans = append(chans, reports.ChannelRow{GuildID: c.GuildID, Period: body.Days[j], ChannelID: c.ChannelID,
			Name: d.Names[c.ChannelID], Messages: c.Messages})
	}
	if q.Server != "" {
		list := seriesChannels(sumParts(chans), d.Servers[0].GuildID, index, body.Servers[0].Totals)
		body.Servers[0].Channels = &list
	}
	b, err := encode(body, 64+14*len(days)+len(d.Servers)*(128+12*len(days))+len(chans)*8)
	return Answer{Body: b, ValidUntil: now.Add(LiveValidity)}, err
}

// sumParts adds up the rows of one channel and day (the parts of a day across a change of
// offset), keeping the first row's place.
func sumParts(rows []reports.ChannelRow) []reports.ChannelRow {
	type key struct{ guild, day, id string }
	at := make(map[key]int, len(rows))
	out := rows[:0:0]
	for _, r := range rows {
		k := key{r.GuildID, r.Period, r.ChannelID}
		if i, ok := at[k]; ok {
			out[i].Messages += r.Messages
			continue
		}
		at[k] = len(out)
		out = append(out, r)
	}
	return out
}
