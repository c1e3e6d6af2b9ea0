package answers

import (
	"fmt"
	"strings"
	"testing"

	"forumstats.local/shared/form"
	"forumstats.local/shared/reports"
	"forumstats.local/stats-svc/internal/export"
	"forumstats.local/stats-svc/internal/query"
)

// The flattening of statistics answers: a month is its first and last day, a missing server one
// row of empty counts, a stale one its error code, and every text guarded against formulas.
func TestStatisticsTable(t *testing.T) {
	for _, tc := range []struct {
		name, body, file string
		want             string
	}{
		{
			name: "month, one server, a formula in a channel name",
			body: `{"month":"2026-02","timezone":"Europe/Moscow","refreshMinutes":10,"server":{"number":7,"name":"=Evil","guildId":"42","iconUrl":null,"bannerUrl":null,` +
				`"totalMessages":-0,"channels":[{"id":"1","name":"@here","messages":0}],"generatedAt":"2026-03-01T00:00:00Z","status":"stale","error":{"code":"rate_limited","message":"x"}}}`,
			file: "chat-statistics-7-2026-02.csv",
			want: "month,2026-02-01,2026-02-28,7,'=Evil,42,stale,rate_limited,0,2026-03-01T00:00:00Z,1,'@here,0\r\n",
		},
		{
			name: "range, all servers, one missing",
			body: `{"period":"range","from":"2026-11-01","to":"2026-11-03","start":"x","endExclusive":"y","timezone":"Europe/Moscow","refreshMinutes":10,"servers":[` +
				`{"number":1,"name":"A, B","guildId":"5","iconUrl":null,"bannerUrl":null,"totalMessages":null,"channels":[],"generatedAt":null,"status":"missing","error":null}],` +
				`"totalServers":1,"readyServers":0,"totalMessages":0,"complete":false}`,
			file: "chat-statistics-all-2026-11-01-2026-11-03.csv",
			want: "range,2026-11-01,2026-11-03,1,\"A, B\",5,missing,,,,,,\r\n",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, table, err := StatisticsTable([]byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			got := string(export.CSV(table))
			head, rows, _ := strings.Cut(got, "\r\n")
			if name != tc.file || head != strings.Join(statisticsColumns, ",") || rows != tc.want {
				t.Fatalf("%s\n%q\nwant %s\n%q", name, rows, tc.file, tc.want)
			}
		})
	}
	if _, _, err := StatisticsTable([]byte(`{"month":"2026-13"}`)); err == nil {
		t.Fatal("a month that is none was flattened")
	}
	if _, _, err := SeriesTable([]byte(`{"days":["2026-11-01"],"servers":[{"number":1,"totals":[],"statuses":[]}]}`)); err == nil {
		t.Fatal("a series whose totals do not match its days was flattened")
	}
}

// BenchmarkSeriesCSV flattens and writes the largest series: 100 servers over 366 days.
func BenchmarkSeriesCSV(b *testing.B) {
	q, err := query.ParseSeries(form.Parse("from=2025-11-20&to=2026-11-20"))
	if err != nil {
		b.Fatal(err)
	}
	var d SeriesData
	d.RefreshMinutes = 10
	for g := 1; g <= 100; g++ {
		id := fmt.Sprint(100000000000000000 + g)
		d.Servers = append(d.Servers, Server{Number: g, Name: fmt.Sprint("Server ", g), GuildID: id})
		for _, day := range q.Days() {
			d.Reports = append(d.Reports, reports.Row{GuildID: id, Period: day.String(), GeneratedAt: day.AddDays(1).Start(), Status: reports.StatusOK, TotalMessages: int64(g * day.Day)})
		}
	}
	a, err := Series(q, now, d)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_, t, err := SeriesTable(a.Body)
		if err != nil {
			b.Fatal(err)
		}
		if len(export.CSV(t)) == 0 {
			b.Fatal("empty")
		}
	}
}
