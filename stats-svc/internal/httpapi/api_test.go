package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"forumstats.local/shared/db"
	"forumstats.local/stats-svc/internal/answers/answerstest"
)

const (
	statsPath  = "/api/chat-statistics"
	iconsPath  = "/api/chat-icons"
	seriesPath = "/api/chat-series"
)

// Every row of the order of checks (stats-svc/README.md), in that order, for GET and HEAD.
func TestErrorRows(t *testing.T) {
	s := newStack(t, pgDB(t), stackOptions{redis: newRedis(t, "")})
	tests := []struct {
		name   string
		method string
		target string
		status int
		code   string
	}{
		{"period unknown", "GET", statsPath + "?period=year", 400, "invalid_parameters"},
		{"period empty", "GET", statsPath + "?period=", 400, "invalid_parameters"},
		{"period empty beats bad server", "GET", statsPath + "?period=&server=x", 400, "invalid_parameters"},
		{"period repeated", "GET", statsPath + "?period=day&period=day", 400, "invalid_parameters"},
		{"server repeated", "GET", statsPath + "?server=1&server=1", 400, "invalid_parameters"},
		{"month repeated", "GET", statsPath + "?month=2026-11&month=2026-11", 400, "invalid_parameters"},
		{"forbidden date in month mode", "GET", statsPath + "?date=2026-11-01", 400, "invalid_parameters"},
		{"forbidden empty from", "GET", statsPath + "?period=day&from=", 400, "invalid_parameters"},
		{"forbidden month in range", "GET", statsPath + "?period=range&from=2026-11-01&to=2026-11-02&month=2026-11", 400, "invalid_parameters"},
		{"forbidden beats bad server", "GET", statsPath + "?period=week&to=x&server=x", 400, "invalid_parameters"},
		{"server empty", "GET", statsPath + "?server=", 400, "invalid_server"},
		{"server letters", "GET", statsPath + "?server=abc", 400, "invalid_server"},
		{"server 21 digits", "GET", statsPath + "?server=123456789012345678901", 400, "invalid_server"},
		{"server beats bad month", "GET", statsPath + "?month=bad&server=bad", 400, "invalid_server"},
		{"server beats bad range", "GET", statsPath + "?period=range&server=-1", 400, "invalid_server"},
		{"month malformed", "GET", statsPath + "?month=2026-1", 400, "invalid_parameters"},
		{"month before 2015", "GET", statsPath + "?month=2014-12", 400, "invalid_parameters"},
		{"month after 2099", "GET", statsPath + "?month=2100-01", 400, "invalid_parameters"},
		{"date malformed", "GET", statsPath + "?period=day&date=20261101", 400, "invalid_parameters"},
		{"date not a day", "GET", statsPath + "?period=week&date=2026-02-29", 400, "invalid_parameters"},
		{"date before 2015", "GET", statsPath + "?period=day&date=2014-12-31", 400, "invalid_parameters"},
		{"range without dates", "GET", statsPath + "?period=range", 400, "invalid_range"},
		{"range without to", "GET", statsPath + "?period=range&from=2026-11-01", 400, "invalid_range"},
		{"range malformed", "GET", statsPath + "?period=range&from=2026-11-1&to=2026-11-02", 400, "invalid_range"},
		{"range not a day", "GET", statsPath + "?period=range&from=2026-02-27&to=2026-02-30", 400, "invalid_range"},
		{"range reversed", "GET", statsPath + "?period=range&from=2026-11-02&to=2026-11-01", 400, "invalid_range"},
		{"range 32 days", "GET", statsPath + "?period=range&from=2026-10-01&to=2026-11-01", 400, "invalid_range"},
		{"range outside 2015..2099", "GET", statsPath + "?period=range&from=2014-12-31&to=2015-01-01", 400, "invalid_range"},
		{"server not in catalog", "GET", statsPath + "?server=4", 404, "server_not_found"},
		{"guild not in catalog", "GET", statsPath + "?period=day&server=99999999999999999", 404, "server_not_found"},
		{"server zero", "GET", statsPath + "/?server=0", 404, "server_not_found"},
		{"icons server empty", "GET", iconsPath + "?server=", 400, "invalid_server"},
		{"icons server malformed", "GET", iconsPath + "/?server=1a", 400, "invalid_server"},
		{"icons server repeated", "GET", iconsPath + "?server=1&server=2", 400, "invalid_server"},
		{"icons server not in catalog", "GET", iconsPath + "?server=00004", 404, "server_not_found"},
		{"series without dates", "GET", seriesPath, 400, "invalid_range"},
		{"series without to", "GET", seriesPath + "/?from=2026-11-01", 400, "invalid_range"},
		{"series reversed", "GET", seriesPath + "?from=2026-11-02&to=2026-11-01", 400, "invalid_range"},
		{"series 367 days", "GET", seriesPath + "?from=2025-11-01&to=2026-11-02", 400, "invalid_range"},
		{"series not a day", "GET", seriesPath + "?from=2026-02-29&to=2026-03-02", 400, "invalid_range"},
		{"series before 2015", "GET", seriesPath + "?from=2014-12-31&to=2015-01-02", 400, "invalid_range"},
		{"series from repeated", "GET", seriesPath + "?from=2026-11-01&from=2026-11-01&to=2026-11-02", 400, "invalid_parameters"},
		{"series server repeated", "GET", seriesPath + "?from=2026-11-01&to=2026-11-02&server=1&server=1", 400, "invalid_parameters"},
		{"series server malformed", "GET", seriesPath + "?from=2026-11-01&to=2026-11-02&server=x", 400, "invalid_server"},
		{"series server beats bad range", "GET", seriesPath + "?server=x", 400, "invalid_server"},
		{"series server not in catalog", "GET", seriesPath + "?from=2026-11-01&to=2026-11-02&server=4", 404, "server_not_found"},
		{"series POST", "POST", seriesPath + "?from=x", 405, "method_not_allowed"},
		{"series OPTIONS with slash", "OPTIONS", seriesPath + "/", 405, "method_not_allowed"},
		{"unknown route", "GET", "/api/chat-stats", 404, "not_found"},
		{"unknown route under api", "GET", statsPath + "/x", 404, "not_found"},
		{"POST", "POST", statsPath, 405, "method_not_allowed"},
		{"PUT with slash", "PUT", statsPath + "/", 405, "method_not_allowed"},
		{"DELETE", "DELETE", iconsPath, 405, "method_not_allowed"},
		{"PATCH", "PATCH", iconsPath + "/", 405, "method_not_allowed"},
		{"OPTIONS statistics", "OPTIONS", statsPath, 405, "method_not_allowed"},
		{"OPTIONS icons", "OPTIONS", iconsPath + "?server=1", 405, "method_not_allowed"},
		{"custom method", "FOO", statsPath, 405, "method_not_allowed"},
		{"wrong method beats bad query", "POST", statsPath + "?period=x", 405, "method_not_allowed"},
		// A parameter with a broken escape fails its own check; it is not dropped into a default
		// (the query goes through shared/form, not Echo's QueryParams).
		{"period broken escape", "GET", statsPath + "?period=%zz", 400, "invalid_parameters"},
		{"icons server broken escape", "GET", iconsPath + "?server=%zz", 400, "invalid_server"},
		{"series server broken escape", "GET", seriesPath + "?from=2026-11-01&to=2026-11-02&server=%", 400, "invalid_server"},
	}
	for _, tt := range tests {
		for _, method := range []string{tt.method, "HEAD"} {
			if method == "HEAD" && tt.method != "GET" {
				continue
			}
			t.Run(tt.name+"/"+method, func(t *testing.T) {
				r := do(t, method, s.url+tt.target)
				if r.status != tt.status {
					t.Fatalf("status %d, want %d (body %s)", r.status, tt.status, r.body)
				}
				want := `{"error":"` + tt.code + `"}`
				if method == "HEAD" {
					if r.body != "" {
						t.Fatalf("HEAD body %q", r.body)
					}
				} else if r.body != want {
					t.Fatalf("body %s, want %s", r.body, want)
				}
				if got := r.header.Get("Content-Length"); got != strconv.Itoa(len(want)) {
					t.Fatalf("Content-Length %q, want %d", got, len(want))
				}
				if got := r.header.Get("Access-Control-Allow-Origin"); got != "*" {
					t.Fatalf("Access-Control-Allow-Origin %q", got)
				}
				if got := r.header.Get("Content-Type"); got != "application/json" {
					t.Fatalf("Content-Type %q", got)
				}
				if tt.status == 405 && r.header.Get("Allow") != "GET, HEAD" {
					t.Fatalf("Allow %q", r.header.Get("Allow"))
				}
			})
		}
	}
}

// A failing database answers 500 internal_error and leaks nothing.
func TestInternalError(t *testing.T) {
	// A database without the reports tables: every read fails.
	gdb, err := db.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "empty.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(gdb) })
	s := newStack(t, gdb, stackOptions{direct: true})
	for _, target := range []string{statsPath, statsPath + "?period=week", iconsPath + "?server=1"} {
		r := do(t, "GET", s.url+target)
		if r.status != 500 || r.body != `{"error":"internal_error"}` || r.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("%s: %d %s", target, r.status, r.body)
		}
	}
	// Bad input is still the documented 4xx, not a 500.
	if r := do(t, "GET", s.url+statsPath+"?period=x"); r.status != 400 {
		t.Fatalf("bad input on a broken database: %d", r.status)
	}
}

func TestGoldenBody(t *testing.T) {
	s := newStack(t, pgDB(t), stackOptions{})
	want := `{"period":"day","from":"2026-11-16","to":"2026-11-16","start":"2026-11-15T21:00:00Z","endExclusive":"2026-11-16T21:00:00Z",` +
		`"timezone":"Europe/Moscow","refreshMinutes":10,"server":{"number":2,"name":"Beta","guildId":"222222222222222222",` +
		`"iconUrl":"https://cdn.test/icons/222222222222222222/1c0n.png?size=256","bannerUrl":null,"totalMessages":5,` +
		`"channels":[{"id":"20","name":"general","messages":5}],"generatedAt":"2026-11-16T21:30:00Z","status":"ok","error":null}}`
	for _, target := range []string{
		statsPath + "?period=day&date=2026-11-16&server=2",
		statsPath + "/?server=0002&date=2026-11-16&period=day&unknown=1&unknown=2",
		statsPath + "?period=day&date=2026-11-16&server=" + betaID,
	} {
		r := do(t, "GET", s.url+target)
		if r.status != 200 || r.body != want {
			t.Fatalf("%s: %d\n got %s\nwant %s", target, r.status, r.body, want)
		}
	}
}

// HEAD answers exactly the headers of GET, without a body.
func TestHeadMatchesGet(t *testing.T) {
	s := newStack(t, pgDB(t), stackOptions{})
	for _, target := range []string{statsPath, statsPath + "/?period=week", iconsPath, iconsPath + "/?server=1", seriesPath + "/?from=2026-11-01&to=2026-11-20"} {
		get := do(t, "GET", s.url+target)
		head := do(t, "HEAD", s.url+target)
		if get.status != 200 || head.status != 200 || head.body != "" {
			t.Fatalf("%s: GET %d, HEAD %d %q", target, get.status, head.status, head.body)
		}
		for _, h := range []string{"Content-Type", "Content-Length", "Access-Control-Allow-Origin"} {
			if get.header.Get(h) != head.header.Get(h) || get.header.Get(h) == "" {
				t.Fatalf("%s: %s GET %q HEAD %q", target, h, get.header.Get(h), head.header.Get(h))
			}
		}
		if get.header.Get("Content-Length") != strconv.Itoa(len(get.body)) {
			t.Fatalf("%s: Content-Length %s for %d bytes", target, get.header.Get("Content-Length"), len(get.body))
		}
	}
}

func getStats(t *testing.T, s *stack, target string) answerstest.Statistics {
	t.Helper()
	return getJSON[answerstest.Statistics](t, s, target)
}

func str(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

func num(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

func TestMonthDefault(t *testing.T) {
	s := newStack(t, pgDB(t), stackOptions{redis: newRedis(t, "")})
	for _, target := range []string{statsPath, statsPath + "/", statsPath + "?period=month", statsPath + "?month=2026-11&x=1"} {
		b := getStats(t, s, target)
		if str(b.Month) != "2026-11" || b.Period != nil || b.Start != nil || b.From != nil || b.Server != nil ||
			b.Timezone != "Europe/Moscow" || b.RefreshMinutes != 10 {
			t.Fatalf("%s: header fields %+v", target, b)
		}
		if *b.TotalServers != 3 || *b.ReadyServers != 1 || *b.TotalMessages != 300 || *b.Complete || len(b.Servers) != 3 {
			t.Fatalf("%s: totals %d %d %d %v", target, *b.TotalServers, *b.ReadyServers, *b.TotalMessages, *b.Complete)
		}
		alpha, beta, gamma := b.Servers[0], b.Servers[1], b.Servers[2]
		wantCh := []answerstest.Channel{
			{ID: "10", Name: "general", Messages: 200},
			{ID: "9", Name: "random", Messages: 50},
			{ID: "11", Name: "memes", Messages: 50},
		}
		if alpha.Number != 1 || alpha.Status != "ok" || num(alpha.TotalMessages) != 300 || !reflect.DeepEqual(alpha.Channels, wantCh) ||
			str(alpha.GeneratedAt) != "2026-11-20T09:55:00Z" || alpha.Error != nil ||
			str(alpha.IconURL) != cdn+"/icons/"+alphaID+"/a_f00d.gif?size=256" || str(alpha.BannerURL) != cdn+"/banners/"+alphaID+"/b4nn3r.png?size=1024" {
			t.Fatalf("alpha %+v", alpha)
		}
		// Beta's report is 2 h old with refreshMinutes 10: stale, no stored error.
		if beta.Status != "stale" || num(beta.TotalMessages) != 70 || beta.Error != nil || beta.BannerURL != nil ||
			str(beta.IconURL) != cdn+"/icons/"+betaID+"/1c0n.png?size=256" {
			t.Fatalf("beta %+v", beta)
		}
		if gamma.Name != "Gamma & Co" || gamma.GuildID != gammaID || gamma.Status != "missing" || gamma.TotalMessages != nil ||
			gamma.Channels == nil || len(gamma.Channels) != 0 || gamma.GeneratedAt != nil || gamma.Error != nil || gamma.IconURL != nil {
			t.Fatalf("gamma %+v", gamma)
		}
	}
}

func TestServerMatching(t *testing.T) {
	s := newStack(t, pgDB(t), stackOptions{})
	// "1" is Gamma's guildId: the exact guildId match wins over number 1.
	b := getStats(t, s, statsPath+"?month=2026-10&server=1")
	if b.Server == nil || b.Server.Number != 3 || b.Server.Status != "missing" || b.Servers != nil || b.TotalServers != nil || b.Complete != nil {
		t.Fatalf("server=1: %+v", b.Server)
	}
	// "01" is no guildId, so it is the number 1: Alpha, stale with its stored error.
	b = getStats(t, s, statsPath+"?month=2026-10&server=01")
	if b.Server.Number != 1 || b.Server.Status != "stale" || num(b.Server.TotalMessages) != 1000 ||
		b.Server.Error == nil || b.Server.Error.Code != "rate_limited" || b.Server.Error.Message != "slow down" {
		t.Fatalf("server=01: %+v", b.Server)
	}
	// A month that is no longer refreshed is never age-stale.
	b = getStats(t, s, statsPath+"?month=2026-09&server="+alphaID)
	if b.Server.Status != "ok" || num(b.Server.TotalMessages) != 900 || len(b.Server.Channels) != 0 {
		t.Fatalf("2026-09: %+v", b.Server)
	}
}

func TestWeek(t *testing.T) {
	s := newStack(t, pgDB(t), stackOptions{redis: newRedis(t, "")})
	for _, target := range []string{statsPath + "?period=week", statsPath + "?period=week&date=2026-11-20"} {
		b := getStats(t, s, target)
		if str(b.Period) != "week" || str(b.From) != "2026-11-14" || str(b.To) != "2026-11-20" || b.Month != nil ||
			str(b.Start) != "2026-11-13T21:00:00Z" || str(b.EndExclusive) != "2026-11-20T21:00:00Z" {
			t.Fatalf("%s: period fields %+v", target, b)
		}
		alpha, beta, gamma := b.Servers[0], b.Servers[1], b.Servers[2]
		// Channels summed by id, the name from the newest day.
		wantCh := []answerstest.Channel{{ID: "10", Name: "general", Messages: 70}, {ID: "12", Name: "new-name", Messages: 7}}
		if alpha.Status != "ok" || num(alpha.TotalMessages) != 77 || !reflect.DeepEqual(alpha.Channels, wantCh) ||
			str(alpha.GeneratedAt) != "2026-11-14T21:30:00Z" {
			t.Fatalf("alpha %+v", alpha)
		}
		// One day missing: null total, no channels, the earliest existing time.
		if beta.Status != "missing" || beta.TotalMessages != nil || len(beta.Channels) != 0 || str(beta.GeneratedAt) != "2026-11-14T21:30:00Z" {
			t.Fatalf("beta %+v", beta)
		}
		// A stale day keeps the sum; the stored error shows.
		if gamma.Status != "stale" || num(gamma.TotalMessages) != 14 || gamma.Error == nil || gamma.Error.Code != "http_500" ||
			!reflect.DeepEqual(gamma.Channels, []answerstest.Channel{{ID: "30", Name: "general", Messages: 14}}) {
			t.Fatalf("gamma %+v", gamma)
		}
		if *b.ReadyServers != 1 || *b.TotalMessages != 77 || *b.Complete || *b.TotalServers != 3 {
			t.Fatalf("totals %+v", b)
		}
	}
}

func TestRangeAndDay(t *testing.T) {
	s := newStack(t, pgDB(t), stackOptions{})
	b := getStats(t, s, statsPath+"?period=range&from=2026-11-14&to=2026-11-16")
	if str(b.Period) != "range" || *b.ReadyServers != 3 || *b.TotalMessages != 33+15+6 || !*b.Complete {
		t.Fatalf("range: %+v", b)
	}
	// One day, from = to.
	b = getStats(t, s, statsPath+"?period=range&from=2026-11-17&to=2026-11-17")
	if b.Servers[1].Status != "missing" || *b.ReadyServers != 2 || *b.TotalMessages != 11+2 || *b.Complete {
		t.Fatalf("range of the missing day: %+v", b.Servers[1])
	}
	// Today: Gamma's report is an hour old, so it is stale without an error.
	b = getStats(t, s, statsPath+"?period=day")
	if str(b.From) != "2026-11-20" || b.Servers[0].Status != "ok" || b.Servers[1].Status != "ok" ||
		b.Servers[2].Status != "stale" || b.Servers[2].Error != nil || num(b.Servers[2].TotalMessages) != 2 {
		t.Fatalf("today: %+v", b.Servers)
	}
	// 15 days: PostgreSQL sums the channels in two halves; the sums and the
	// newest names cross the split.
	b = getStats(t, s, statsPath+"?period=range&from=2026-11-06&to=2026-11-20&server=01")
	wantCh := []answerstest.Channel{
		{ID: "10", Name: "general", Messages: 150},
		{ID: "12", Name: "new-name", Messages: 15},
		{ID: "13", Name: "archived", Messages: 2},
	}
	if b.Server.Status != "ok" || num(b.Server.TotalMessages) != 167 || !reflect.DeepEqual(b.Server.Channels, wantCh) ||
		str(b.Server.GeneratedAt) != "2026-11-06T21:30:00Z" {
		t.Fatalf("15 days: %+v", b.Server)
	}
	// A valid date without any report.
	b = getStats(t, s, statsPath+"?period=day&date=2015-01-01&server=2")
	if b.Server.Status != "missing" || b.Server.GeneratedAt != nil || b.Server.TotalMessages != nil {
		t.Fatalf("empty day: %+v", b.Server)
	}
	// 31 days, the longest range.
	b = getStats(t, s, statsPath+"?period=range&from=2026-10-21&to=2026-11-20")
	if *b.ReadyServers != 0 || b.Servers[0].Status != "missing" || str(b.Servers[0].GeneratedAt) != "2026-11-06T21:30:00Z" {
		t.Fatalf("31 days: %+v", b.Servers[0])
	}
}

func TestIcons(t *testing.T) {
	s := newStack(t, pgDB(t), stackOptions{redis: newRedis(t, "")})
	r := do(t, "GET", s.url+iconsPath)
	want := `{"servers":[` +
		`{"number":1,"name":"Alpha","guildId":"81384788765712384","iconUrl":"https://cdn.test/icons/81384788765712384/a_f00d.gif?size=256","bannerUrl":"https://cdn.test/banners/81384788765712384/b4nn3r.png?size=1024"},` +
		`{"number":2,"name":"Beta","guildId":"222222222222222222","iconUrl":"https://cdn.test/icons/222222222222222222/1c0n.png?size=256","bannerUrl":null},` +
		`{"number":3,"name":"Gamma & Co","guildId":"1","iconUrl":null,"bannerUrl":null}],"totalServers":3}`
	if r.status != 200 || r.body != want {
		t.Fatalf("all icons: %d\n got %s\nwant %s", r.status, r.body, want)
	}
	// Date and period parameters are not part of icons: ignored like any unknown one.
	r = do(t, "GET", s.url+iconsPath+"/?server=002&period=x")
	if want := `{"server":{"number":2,"name":"Beta","guildId":"222222222222222222","iconUrl":"https://cdn.test/icons/222222222222222222/1c0n.png?size=256","bannerUrl":null}}`; r.status != 200 || r.body != want {
		t.Fatalf("one server: %d %s", r.status, r.body)
	}
}

// The embedded SQLite database gives the same answers as PostgreSQL.
func TestSQLiteMatchesPostgres(t *testing.T) {
	lite, err := db.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "stats.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(lite) })
	if err := migrateUp(lite); err != nil {
		t.Fatal(err)
	}
	seed(t, lite)
	pg := newStack(t, pgDB(t), stackOptions{direct: true})
	sq := newStack(t, lite, stackOptions{})
	for _, target := range []string{
		statsPath, statsPath + "?month=2026-10", statsPath + "?month=2026-10&server=01", statsPath + "?period=week",
		statsPath + "?period=day", statsPath + "?period=range&from=2026-11-14&to=2026-11-16", statsPath + "?period=day&date=2026-11-16&server=1",
		statsPath + "?period=range&from=2026-10-21&to=2026-11-20", statsPath + "?period=range&from=2026-11-06&to=2026-11-20",
		statsPath + "?period=range&from=2026-11-06&to=2026-11-20&server=01", statsPath + "?server=9", iconsPath, iconsPath + "?server=" + alphaID,
		seriesPath + "?from=2026-11-01&to=2026-11-20", seriesPath + "?from=2026-11-05&to=2026-11-20&server=1",
		seriesPath + "?from=2026-11-14&to=2026-11-20&server=" + gammaID,
		seriesPath + "?from=2026-10-30&to=2026-11-12&tz=America/New_York", seriesPath + "?from=2026-10-30&to=2026-11-12&tz=Asia/Tokyo&server=01",
		"/api/chat-activity?from=2026-10-31&to=2026-11-11", "/api/chat-activity?from=2026-11-01&to=2026-11-10&server=01&tz=America/New_York",
		"/api/chat-activity?from=2026-11-01&to=2026-11-01&server=2&tz=UTC",
	} {
		a, b := do(t, "GET", pg.url+target), do(t, "GET", sq.url+target)
		if a.status != b.status || a.body != b.body {
			t.Fatalf("%s:\npostgres %d %s\nsqlite   %d %s", target, a.status, a.body, b.status, b.body)
		}
		if a.status == http.StatusOK && len(a.body) < 50 {
			t.Fatalf("%s: suspiciously short answer %s", target, a.body)
		}
	}
}

// Parallel halves on a second connection never exhaust a small pool.
func TestSplitAggregateSmallPool(t *testing.T) {
	pgDB(t) // seeded
	gdb, err := db.Open(context.Background(), pgURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(gdb) })
	sqlDB, _ := gdb.DB()
	sqlDB.SetMaxOpenConns(2)
	s := newStack(t, gdb, stackOptions{direct: true})
	ref := newStack(t, pgDB(t), stackOptions{direct: true})
	var wg sync.WaitGroup
	errs := make(chan string, 12)
	for i := 0; i < 12; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			target := fmt.Sprintf("%s?period=range&from=2026-11-%02d&to=2026-11-20", statsPath, 1+i%6)
			got, err1 := request("GET", s.url+target)
			want, err2 := request("GET", ref.url+target)
			if err := errors.Join(err1, err2); err != nil {
				errs <- err.Error()
			} else if got.status != 200 || got.body != want.body {
				errs <- fmt.Sprintf("%s: %d %s", target, got.status, got.body)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("requests hang: connection pool deadlock")
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
