package answers

import (
	"testing"
	"time"

	"forumstats.local/shared/form"
	"forumstats.local/shared/reports"
	"forumstats.local/stats-svc/internal/answers/answerstest"
	"forumstats.local/stats-svc/internal/query"
)

func seriesQuery(t *testing.T, raw string) query.Series {
	t.Helper()
	q, err := query.ParseSeries(form.Parse(raw))
	if err != nil {
		t.Fatalf("parse %q: %v", raw, err)
	}
	return q
}

// now is 2026-11-20 13:00 Moscow: the 19th and 20th are refreshed days.
var seriesRows = []reports.Row{
	{GuildID: "100", Period: "2026-11-17", GeneratedAt: at("2026-11-17T21:30:00Z"), Status: reports.StatusOK, TotalMessages: 5},
	{GuildID: "100", Period: "2026-11-19", GeneratedAt: at("2026-11-20T09:55:00Z"), Status: reports.StatusOK, TotalMessages: 7},
	// Today, 40 min old at 10-minute refreshes: stale by age.
	{GuildID: "100", Period: "2026-11-20", GeneratedAt: at("2026-11-20T09:20:00Z"), Status: reports.StatusOK, TotalMessages: 1},
	{GuildID: "200", Period: "2026-11-18", GeneratedAt: at("2026-11-19T00:00:00Z"), Status: reports.StatusStale, TotalMessages: 3},
	{GuildID: "999", Period: "2026-11-18", GeneratedAt: at("2026-11-19T00:00:00Z"), Status: reports.StatusOK, TotalMessages: 9}, // left the catalog
}

func TestSeriesAllServers(t *testing.T) {
	a, err := Series(seriesQuery(t, "from=2026-11-17&to=2026-11-20"), now, SeriesData{
		RefreshMinutes: 10, Servers: []Server{alpha, beta}, Reports: seriesRows,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"from":"2026-11-17","to":"2026-11-20","timezone":"Europe/Moscow","refreshMinutes":10,` +
		`"days":["2026-11-17","2026-11-18","2026-11-19","2026-11-20"],"servers":[` +
		`{"number":1,"name":"Alpha","guildId":"100","totals":[5,null,7,1],"statuses":["ok","missing","ok","stale"]},` +
		`{"number":2,"name":"Beta","guildId":"200","totals":[null,3,null,null],"statuses":["missing","stale","missing","missing"]}]}`
	if string(a.Body) != want {
		t.Fatalf("body\n got %s\nwant %s", a.Body, want)
	}
	// The 19th's fresh report turns stale 30 min after 09:55.
	if want := at("2026-11-20T10:25:00Z").Add(time.Nanosecond); !a.ValidUntil.Equal(want) {
		t.Fatalf("valid until %v, want %v", a.ValidUntil, want)
	}
	// Once past that moment, the 19th reads stale.
	later, err := Series(seriesQuery(t, "from=2026-11-19&to=2026-11-19"), at("2026-11-20T10:26:00Z"), SeriesData{
		RefreshMinutes: 10, Servers: []Server{alpha}, Reports: seriesRows[1:2],
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := decodeSeries(t, later); d.Servers[0].Statuses[0] != "stale" {
		t.Fatalf("statuses %v", d.Servers[0].Statuses)
	}
}

func TestSeriesOneServerChannels(t *testing.T) {
	a, err := Series(seriesQuery(t, "from=2026-11-17&to=2026-11-19&server=1"), now, SeriesData{
		RefreshMinutes: 10, Servers: []Server{alpha}, Reports: seriesRows[:2],
		Channels: []reports.ChannelRow{
			{GuildID: "100", Period: "2026-11-17", ChannelID: "9", Name: "old", Messages: 2},
			{GuildID: "100", Period: "2026-11-19", ChannelID: "9", Name: "new", Messages: 2},
			{GuildID: "100", Period: "2026-11-17", ChannelID: "10", Name: "b", Messages: 3},
			{GuildID: "100", Period: "2026-11-19", ChannelID: "11", Name: "c", Messages: 4},
			{GuildID: "100", Period: "2026-11-19", ChannelID: "100", Name: "d", Messages: 1},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"from":"2026-11-17","to":"2026-11-19","timezone":"Europe/Moscow","refreshMinutes":10,` +
		`"days":["2026-11-17","2026-11-18","2026-11-19"],"servers":[` +
		`{"number":1,"name":"Alpha","guildId":"100","totals":[5,null,7],"statuses":["ok","missing","ok"],"channels":[` +
		`{"id":"9","name":"new","totals":[2,null,2]},{"id":"11","name":"c","totals":[0,null,4]},` +
		`{"id":"10","name":"b","totals":[3,null,0]},{"id":"100","name":"d","totals":[0,null,1]}]}]}`
	if string(a.Body) != want {
		t.Fatalf("body\n got %s\nwant %s", a.Body, want)
	}
	// No channel at all: an empty list, not null.
	a, err = Series(seriesQuery(t, "from=2026-11-18&to=2026-11-18&server=1"), now, SeriesData{Servers: []Server{alpha}})
	if err != nil {
		t.Fatal(err)
	}
	if d := decodeSeries(t, a); d.Servers[0].Channels == nil || len(*d.Servers[0].Channels) != 0 {
		t.Fatalf("channels %s", a.Body)
	}
	if _, err := Series(seriesQuery(t, "from=2026-11-18&to=2026-11-18&server=1"), now, SeriesData{}); err != ErrServerNotFound {
		t.Fatalf("no server: %v", err)
	}
}

func decodeSeries(t *testing.T, a Answer) answerstest.Series {
	t.Helper()
	return decodeBody[answerstest.Series](t, a)
}
