package answers

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"forumstats.local/shared/reports"
	"forumstats.local/stats-svc/internal/export"
	"forumstats.local/stats-svc/internal/query"
)

// LiveValidity is how long an answer composed from live counts is served from the cache: the
// collector adds to the counts every few seconds without announcing a new generation, so such an
// answer is at most this much behind.
const LiveValidity = time.Minute

// HourCount is a stored live count: a server's (or, summed, the servers') messages of one UTC
// hour, or of one of its channels.
type HourCount struct {
	GuildID   string
	Hour      int64
	ChannelID string // "" for the server's total
	Messages  int64
}

// ActivityData is everything an activity answer is composed from.
type ActivityData struct {
	// Servers are ordered by number; exactly one when the query names a server.
	Servers []Server
	// Coverage is each server's live coverage (by guild id; absent: never counted).
	Coverage map[string]reports.LiveCoverage
	// Counts are the hours' counts: the servers' totals (ChannelID "": summed over the servers
	// or one server's), and with a server its channels' counts.
	Counts []HourCount
	// Names are the channels' names, by id.
	Names map[string]string
	// FlushedAt is when live counts were last written (the newest checkpoint of the gateway's
	// shards); nil when never.
	FlushedAt *time.Time
}

type activityHour struct {
	Start    string         `json:"start"`
	Total    int64          `json:"total"`
	Status   string         `json:"status"`
	Channels *[]channelJSON `json:"channels,omitempty"`
}

type activityServer struct {
	Number  int    `json:"number"`
	Name    string `json:"name"`
	GuildID string `json:"guildId"`
}

type activityBody struct {
	From        string          `json:"from"`
	To          string          `json:"to"`
	TZ          string          `json:"tz"`
	Server      *activityServer `json:"server,omitempty"`
	GeneratedAt *string         `json:"generatedAt"`
	Hours       []activityHour  `json:"hours"`
}

// Activity composes the hourly activity answer of q at the moment now (which bounds its
// validity: LiveValidity): when the counts were last written, and for every hour of the days in
// q's zone, its start (with the zone's offset then), the messages counted and the
// status (the worst of the servers' under reports.HourStatus: a total is complete only when
// ok); with a server, the channels with messages in each hour, by count descending, then id.
func Activity(q query.Activity, now time.Time, d ActivityData) (Answer, error) {
	if q.Server != "" && len(d.Servers) != 1 {
		return Answer{}, ErrServerNotFound
	}
	first, end := q.Hours()
	loc := q.Zone.Location()
	// generatedAt is when the counts were last written, not the moment of composing: a body
	// that changed with the clock alone would change its ETag on every read.
	body := activityBody{From: q.From.String(), To: q.To.String(), TZ: q.Zone.Name(), Hours: make([]activityHour, end-first)}
	if d.FlushedAt != nil {
		at := d.FlushedAt.UTC().Format(time.RFC3339)
		body.GeneratedAt = &at
	}
	for i := range body.Hours {
		h := first + int64(i)
		status := reports.HourOK
		for _, s := range d.Servers {
			status = reports.WorseHour(status, reports.HourStatus(h, d.Coverage[s.GuildID]))
		}
		body.Hours[i] = activityHour{Start: reports.LiveHourStart(h).In(loc).Format(time.RFC3339), Status: status}
	}
	if q.Server != "" {
		s := d.Servers[0]
		body.Server = &activityServer{Number: s.Number, Name: s.Name, GuildID: s.GuildID}
		for i := range body.Hours {
			body.Hours[i].Channels = &[]channelJSON{}
		}
	}
	for _, c := range d.Counts {
		if c.Hour < first || c.Hour >= end {
			continue
		}
		h := &body.Hours[c.Hour-first]
		switch {
		case c.ChannelID == "":
			h.Total += c.Messages
		case h.Channels != nil && c.Messages > 0:
			*h.Channels = append(*h.Channels, channelJSON{ID: c.ChannelID, Name: d.Names[c.ChannelID], Messages: c.Messages})
		}
	}
	if q.Server != "" {
		for i := range body.Hours {
			slices.SortFunc(*body.Hours[i].Channels, func(a, b channelJSON) int { return channelOrder(a.Messages, a.ID, b.Messages, b.ID) })
		}
	}
	b, err := encode(body, 128+len(body.Hours)*72+len(d.Counts)*48)
	return Answer{Body: b, ValidUntil: now.Add(LiveValidity)}, err
}

// activityColumns: one row per hour; with a server, one more column per channel (its count that
// hour), headed "<name> (<id>)", channels by their sum over the period descending, then id.
var activityColumns = []string{"start", "messages", "status"}

// ActivityTable flattens an activity answer; name is
// chat-activity-<server number|all>-<from>-<to>.csv.
func ActivityTable(body []byte) (name string, t export.Table, err error) {
	var b activityBody
	if err := json.Unmarshal(body, &b); err != nil {
		return "", export.Table{}, fmt.Errorf("activity answer: %w", err)
	}
	who := "all"
	t.Header = activityColumns
	var chans []channelJSON // their sums
	if b.Server != nil {
		who = strconv.Itoa(b.Server.Number)
		at := map[string]int{}
		for _, h := range b.Hours {
			if h.Channels == nil {
				return "", export.Table{}, fmt.Errorf("activity answer: hour %s without channels", h.Start)
			}
			for _, c := range *h.Channels {
				i, ok := at[c.ID]
				if !ok {
					i = len(chans)
					at[c.ID] = i
					chans = append(chans, channelJSON{ID: c.ID, Name: c.Name})
				}
				chans[i].Messages += c.Messages
			}
		}
		slices.SortFunc(chans, func(a, b channelJSON) int { return channelOrder(a.Messages, a.ID, b.Messages, b.ID) })
		t.Header = make([]string, 0, len(activityColumns)+len(chans))
		t.Header = append(t.Header, activityColumns...)
		for _, c := range chans {
			t.Header = append(t.Header, c.Name+" ("+c.ID+")")
		}
	}
	for _, h := range b.Hours {
		row := make([]export.Cell, 0, len(t.Header))
		row = append(row, export.Text(h.Start), export.Int(h.Total), export.Text(h.Status))
		if len(chans) > 0 {
			counts := make(map[string]int64, len(*h.Channels))
			for _, c := range *h.Channels {
				counts[c.ID] = c.Messages
			}
			for _, c := range chans {
				row = append(row, export.Int(counts[c.ID]))
			}
		}
		t.Rows = append(t.Rows, row)
	}
	return export.Filename("chat-activity", who, b.From, b.To), t, nil
}
