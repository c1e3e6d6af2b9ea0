package answers

import (
	"encoding/json"
	"fmt"
	"strconv"

	"forumstats.local/shared/reports"
	"forumstats.local/stats-svc/internal/export"
)

// An exporter turns an encoded answer into a table for a spreadsheet, and names its file. It
// reads the JSON body, the one form every answer is cached in, so that a CSV is built from the
// very answer a JSON request gets.
//
// The columns are stable per operation (documented in stats-svc/README.md, CSV exports); only
// the one-server series adds a column per channel.

// statisticsColumns: one row per server and channel with the period's totals; a server without
// channels (missing, or no message) has one row with the channel cells empty.
var statisticsColumns = []string{"period", "from", "to", "server_number", "server_name", "guild_id", "status",
	"error_code", "server_messages", "generated_at", "channel_id", "channel_name", "channel_messages"}

// StatisticsTable flattens a statistics answer; name is
// chat-statistics-<server number|all>-<month, or from-to>.csv.
func StatisticsTable(body []byte) (name string, t export.Table, err error) {
	var b statisticsBody
	if err := json.Unmarshal(body, &b); err != nil {
		return "", export.Table{}, fmt.Errorf("statistics answer: %w", err)
	}
	period, from, to := b.Period, b.From, b.To
	if b.Month != "" {
		m, ok := reports.ParseMonth(b.Month)
		if !ok {
			return "", export.Table{}, fmt.Errorf("statistics answer: month %q", b.Month)
		}
		period, from, to = "month", m.First().String(), m.Last().String()
	}
	var servers []serverReport
	who := "all"
	switch {
	case b.Server != nil:
		servers = []serverReport{*b.Server}
		who = strconv.Itoa(b.Server.Number)
	case b.Servers != nil:
		servers = *b.Servers
	}
	t.Header = statisticsColumns
	for _, s := range servers {
		errorCode := ""
		if s.Error != nil {
			errorCode = s.Error.Code
		}
		generated := ""
		if s.GeneratedAt != nil {
			generated = *s.GeneratedAt
		}
		head := []export.Cell{export.Text(period), export.Text(from), export.Text(to), export.Int(int64(s.Number)),
			export.Text(s.Name), export.Text(s.GuildID), export.Text(s.Status), export.Text(errorCode),
			export.IntOrEmpty(s.TotalMessages), export.Text(generated)}
		if len(s.Channels) == 0 {
			t.Rows = append(t.Rows, append(head, export.Text(""), export.Text(""), export.IntOrEmpty(nil)))
			continue
		}
		for _, ch := range s.Channels {
			row := make([]export.Cell, 0, len(statisticsColumns))
			row = append(append(row, head...), export.Text(ch.ID), export.Text(ch.Name), export.Int(ch.Messages))
			t.Rows = append(t.Rows, row)
		}
	}
	if b.Month != "" {
		return export.Filename("chat-statistics", who, b.Month), t, nil
	}
	return export.Filename("chat-statistics", who, from, to), t, nil
}

// seriesColumns: one row per day and server; the one-server series adds a column per channel
// (its day's count), headed "<name> (<id>)", in the answer's channel order.
var seriesColumns = []string{"date", "server_number", "server_name", "guild_id", "messages", "status"}

// SeriesTable flattens a series answer; name is chat-series-<server number|all>-<from>-<to>.csv.
// A day without a report has empty counts (not 0) and the status missing.
func SeriesTable(body []byte) (name string, t export.Table, err error) {
	var b seriesBody
	if err := json.Unmarshal(body, &b); err != nil {
		return "", export.Table{}, fmt.Errorf("series answer: %w", err)
	}
	who := "all"
	var chans []seriesChannel
	t.Header = seriesColumns
	if len(b.Servers) == 1 && b.Servers[0].Channels != nil {
		who = strconv.Itoa(b.Servers[0].Number)
		chans = *b.Servers[0].Channels
		t.Header = make([]string, 0, len(seriesColumns)+len(chans))
		t.Header = append(t.Header, seriesColumns...)
		for _, ch := range chans {
			t.Header = append(t.Header, ch.Name+" ("+ch.ID+")")
		}
	}
	for i, day := range b.Days {
		for _, s := range b.Servers {
			if len(s.Totals) != len(b.Days) || len(s.Statuses) != len(b.Days) {
				return "", export.Table{}, fmt.Errorf("series answer: server %d has %d totals for %d days", s.Number, len(s.Totals), len(b.Days))
			}
			row := make([]export.Cell, 0, len(t.Header))
			row = append(row, export.Text(day), export.Int(int64(s.Number)), export.Text(s.Name), export.Text(s.GuildID),
				export.IntOrEmpty(s.Totals[i]), export.Text(s.Statuses[i]))
			for _, ch := range chans {
				if len(ch.Totals) != len(b.Days) {
					return "", export.Table{}, fmt.Errorf("series answer: channel %s has %d totals for %d days", ch.ID, len(ch.Totals), len(b.Days))
				}
				row = append(row, export.IntOrEmpty(ch.Totals[i]))
			}
			t.Rows = append(t.Rows, row)
		}
	}
	return export.Filename("chat-series", who, b.From, b.To), t, nil
}
