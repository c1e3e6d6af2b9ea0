package answers

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"forumstats.local/shared/form"
	"forumstats.local/shared/reports"
	"forumstats.local/stats-svc/internal/query"
)

func activityQuery(t *testing.T, raw string) query.Activity {
	t.Helper()
	q, err := query.ParseActivity(form.Parse(raw))
	if err != nil {
		t.Fatalf("parse %q: %v", raw, err)
	}
	return q
}

func idOf(s string) uint64 { return uint64(at(s).UnixMilli()-reports.DiscordEpoch) << 22 }

func hourOf(s string) int64 { return reports.LiveHour(at(s)) }

// alpha counts since October with an unfilled gap in the 10:00 UTC hour of 2026-11-01; beta
// began counting at 06:30 UTC that day.
var activityCoverage = map[string]reports.LiveCoverage{
	"100": {Counting: true, SinceID: idOf("2026-10-01T00:00:00Z"), Gaps: []reports.LiveGap{
		{MinID: idOf("2026-11-01T10:10:00Z") - 1, MaxID: idOf("2026-11-01T10:20:00Z")},
		{MinID: idOf("2026-11-01T12:10:00Z") - 1, MaxID: idOf("2026-11-01T12:20:00Z"), Filled: true},
	}},
	"200": {Counting: true, SinceID: idOf("2026-11-01T06:30:00Z")},
}

func decodeActivity(t *testing.T, a Answer) activityBody {
	t.Helper()
	var b activityBody
	if err := json.Unmarshal(a.Body, &b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestActivityDSTAllServers(t *testing.T) {
	// New York turns its clocks back on 2026-11-01: a day of 25 hours, 01:00 twice.
	q := activityQuery(t, "from=2026-11-01&to=2026-11-01&tz=America/New_York")
	a, err := Activity(q, now, ActivityData{Servers: []Server{alpha, beta}, Coverage: activityCoverage, Counts: []HourCount{
		{Hour: hourOf("2026-11-01T04:00:00Z"), Messages: 3},
		{Hour: hourOf("2026-11-01T05:00:00Z"), Messages: 4},
		{Hour: hourOf("2026-11-01T06:00:00Z"), Messages: 5},
		{Hour: hourOf("2026-11-02T04:00:00Z"), Messages: 6},
		{Hour: hourOf("2026-11-02T05:00:00Z"), Messages: 99}, // the next day: ignored
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !a.ValidUntil.Equal(now.Add(LiveValidity)) {
		t.Errorf("valid until %v", a.ValidUntil)
	}
	b := decodeActivity(t, a)
	if b.TZ != "America/New_York" || b.From != "2026-11-01" || b.Server != nil || len(b.Hours) != 25 {
		t.Fatalf("head %+v, %d hours", b, len(b.Hours))
	}
	for i, c := range []struct {
		start  string
		total  int64
		status string
	}{
		{"2026-11-01T00:00:00-04:00", 3, "missing"},
		{"2026-11-01T01:00:00-04:00", 4, "missing"},
		{"2026-11-01T01:00:00-05:00", 5, "missing"}, // beta began counting at 06:30 UTC
		{"2026-11-01T02:00:00-05:00", 0, "ok"},
	} {
		if h := b.Hours[i]; h.Start != c.start || h.Total != c.total || h.Status != c.status || h.Channels != nil {
			t.Errorf("hour %d: %+v, want %+v", i, h, c)
		}
	}
	if h := b.Hours[6]; h.Start != "2026-11-01T05:00:00-05:00" || h.Status != "gap" {
		t.Errorf("the gap's hour: %+v", h)
	}
	if h := b.Hours[8]; h.Status != "ok" {
		t.Errorf("a filled gap's hour: %+v", h)
	}
	if h := b.Hours[24]; h.Start != "2026-11-01T23:00:00-05:00" || h.Total != 6 || h.Status != "ok" {
		t.Errorf("the last hour: %+v", h)
	}
}

func TestActivityOneServer(t *testing.T) {
	q := activityQuery(t, "from=2026-11-01&to=2026-11-01&server=2&tz=UTC")
	h7 := hourOf("2026-11-01T07:00:00Z")
	a, err := Activity(q, now, ActivityData{Servers: []Server{beta}, Coverage: activityCoverage, Counts: []HourCount{
		{GuildID: "200", Hour: h7, Messages: 9},
		{GuildID: "200", Hour: h7, ChannelID: "20", Messages: 2},
		{GuildID: "200", Hour: h7, ChannelID: "30", Messages: 2},
		{GuildID: "200", Hour: h7, ChannelID: "10", Messages: 5},
		{GuildID: "200", Hour: h7, ChannelID: "40", Messages: 0},
	}, Names: map[string]string{"10": "general", "20": "=cmd", "30": "off-topic"}, FlushedAt: &now})
	if err != nil {
		t.Fatal(err)
	}
	body := string(a.Body)
	for _, want := range []string{
		`"tz":"UTC","server":{"number":2,"name":"Beta","guildId":"200"},"generatedAt":"2026-11-20T10:00:00Z","hours":[`,
		`{"start":"2026-11-01T00:00:00Z","total":0,"status":"missing","channels":[]}`,
		`{"start":"2026-11-01T07:00:00Z","total":9,"status":"ok","channels":[{"id":"10","name":"general","messages":5},` +
			`{"id":"20","name":"=cmd","messages":2},{"id":"30","name":"off-topic","messages":2}]}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %s:\n%s", want, body)
		}
	}
	name, table, err := ActivityTable(a.Body)
	if err != nil {
		t.Fatal(err)
	}
	if name != "chat-activity-2-2026-11-01-2026-11-01.csv" {
		t.Errorf("file name %q", name)
	}
	if want := []string{"start", "messages", "status", "general (10)", "=cmd (20)", "off-topic (30)"}; !slices.Equal(table.Header, want) {
		t.Errorf("header %v, want %v", table.Header, want)
	}
	if len(table.Rows) != 24 || len(table.Rows[7]) != 6 {
		t.Fatalf("%d rows", len(table.Rows))
	}
	if _, err := Activity(q, now, ActivityData{}); err != ErrServerNotFound {
		t.Errorf("no server: %v", err)
	}
}

func TestActivityTableAllServers(t *testing.T) {
	q := activityQuery(t, "from=2026-11-01&to=2026-11-02")
	a, err := Activity(q, now, ActivityData{Servers: []Server{alpha}, Coverage: activityCoverage})
	if err != nil {
		t.Fatal(err)
	}
	name, table, err := ActivityTable(a.Body)
	if err != nil || name != "chat-activity-all-2026-11-01-2026-11-02.csv" || len(table.Rows) != 48 || !slices.Equal(table.Header, activityColumns) {
		t.Fatalf("%q %v %d rows, %v", name, table.Header, len(table.Rows), err)
	}
	if _, _, err := ActivityTable([]byte(`{"hours":[{"start":"x","total":1,"status":"ok"}],"server":{"number":1}}`)); err == nil {
		t.Error("a server's hour without channels flattened")
	}
}

func TestSeriesInZone(t *testing.T) {
	// New York's 2026-03-08 has 23 hours; its counts come in two parts around the change.
	q := seriesQuery(t, "from=2026-03-07&to=2026-03-09&server=1&tz=America/New_York")
	cov := map[string]reports.LiveCoverage{"100": {Counting: true, SinceID: idOf("2026-03-07T05:00:00Z"), Gaps: []reports.LiveGap{
		{MinID: idOf("2026-03-10T03:10:00Z") - 1, MaxID: idOf("2026-03-10T03:20:00Z")}, // the 9th's last hour but one
	}}}
	d8 := query.UnixDay(reports.Day{Year: 2026, Month: 3, Day: 8})
	a, err := Series(q, now, SeriesData{RefreshMinutes: 10, Servers: []Server{alpha}, Coverage: cov, DayCounts: []DayCount{
		{GuildID: "100", Day: d8 - 1, Messages: 1},
		{GuildID: "100", Day: d8, Messages: 2},
		{GuildID: "100", Day: d8, Messages: 3},
		{GuildID: "100", Day: d8, ChannelID: "7", Messages: 2},
		{GuildID: "100", Day: d8, ChannelID: "7", Messages: 1},
		{GuildID: "100", Day: d8 + 1, Messages: 8},
		{GuildID: "100", Day: d8 + 1, ChannelID: "7", Messages: 8},
	}, Names: map[string]string{"7": "general"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"from":"2026-03-07","to":"2026-03-09","timezone":"America/New_York","refreshMinutes":10,` +
		`"days":["2026-03-07","2026-03-08","2026-03-09"],"servers":[{"number":1,"name":"Alpha","guildId":"100",` +
		`"totals":[1,5,null],"statuses":["ok","ok","missing"],"channels":[{"id":"7","name":"general","totals":[0,3,null]}]}]}`
	if string(a.Body) != want {
		t.Errorf("body\n%s\nwant\n%s", a.Body, want)
	}
	if !a.ValidUntil.Equal(now.Add(LiveValidity)) {
		t.Errorf("valid until %v", a.ValidUntil)
	}
	// Counting that begins an hour into the day leaves the day missing.
	cov["100"] = reports.LiveCoverage{Counting: true, SinceID: idOf("2026-03-07T06:00:00Z")}
	a, _ = Series(q, now, SeriesData{Servers: []Server{alpha}, Coverage: cov})
	if !strings.Contains(string(a.Body), `"totals":[null,0,0],"statuses":["missing","ok","ok"]`) {
		t.Errorf("body %s", a.Body)
	}
}
