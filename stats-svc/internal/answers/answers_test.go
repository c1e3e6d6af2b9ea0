package answers

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"forumstats.local/shared/form"
	"forumstats.local/shared/reports"
	"forumstats.local/stats-svc/internal/answers/answerstest"
	"forumstats.local/stats-svc/internal/query"
)

// 2026-11-20 13:00 in Moscow.
var now = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func parse(t *testing.T, raw string) query.Query {
	t.Helper()
	q, err := query.Parse(form.Parse(raw), now)
	if err != nil {
		t.Fatalf("parse %q: %v", raw, err)
	}
	return q
}

var links = Links{CDN: "https://cdn.example/"}

var (
	alpha = Server{Number: 1, Name: "Alpha", GuildID: "100", Icon: ptr("abc"), Banner: ptr("a_ban"), BannerKnown: true}
	beta  = Server{Number: 2, Name: "Beta", GuildID: "200", Icon: ptr("a_anim"), Banner: ptr("old"), BannerKnown: false}
	gamma = Server{Number: 3, Name: "Gamma & Co", GuildID: "300"}
)

// statistics is Statistics with the test's links, failing the test on an error.
func statistics(t *testing.T, q query.Query, now time.Time, d Data) Answer {
	t.Helper()
	a, err := Statistics(q, now, d, links)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func decode(t *testing.T, a Answer) answerstest.Statistics {
	t.Helper()
	return decodeBody[answerstest.Statistics](t, a)
}

// decodeBody decodes an answer's body as T, failing the test where it does not decode.
func decodeBody[T any](t *testing.T, a Answer) T {
	t.Helper()
	var d T
	if err := json.Unmarshal(a.Body, &d); err != nil {
		t.Fatalf("decode %s: %v", a.Body, err)
	}
	return d
}

func TestGoldenDayAnswer(t *testing.T) {
	q := parse(t, "period=day&date=2026-11-10&server=1")
	a := statistics(t, q, now, Data{
		RefreshMinutes: 10,
		Servers:        []Server{alpha},
		Reports:        []reports.Row{{GuildID: "100", Period: "2026-11-10", GeneratedAt: at("2026-11-10T20:59:00.75Z"), Status: reports.StatusOK, TotalMessages: 12}},
		Channels:       []Channel{{GuildID: "100", ID: "9", Name: "general", Messages: 12}},
	})
	want := `{"period":"day","from":"2026-11-10","to":"2026-11-10","start":"2026-11-09T21:00:00Z","endExclusive":"2026-11-10T21:00:00Z",` +
		`"timezone":"Europe/Moscow","refreshMinutes":10,"server":{"number":1,"name":"Alpha","guildId":"100",` +
		`"iconUrl":"https://cdn.example/icons/100/abc.png?size=256","bannerUrl":"https://cdn.example/banners/100/a_ban.gif?size=1024",` +
		`"totalMessages":12,"channels":[{"id":"9","name":"general","messages":12}],"generatedAt":"2026-11-10T20:59:00Z","status":"ok","error":null}}`
	if string(a.Body) != want {
		t.Fatalf("body\n got %s\nwant %s", a.Body, want)
	}
	// A finished day is not refreshed: the answer holds until Moscow midnight.
	if !a.ValidUntil.Equal(at("2026-11-20T21:00:00Z")) {
		t.Fatalf("valid until %v", a.ValidUntil)
	}
}

func TestGoldenMonthAllServers(t *testing.T) {
	q := parse(t, "month=2026-10")
	a := statistics(t, q, now, Data{RefreshMinutes: 5, Servers: nil})
	want := `{"month":"2026-10","timezone":"Europe/Moscow","refreshMinutes":5,"servers":[],"totalServers":0,"readyServers":0,"totalMessages":0,"complete":true}`
	if string(a.Body) != want {
		t.Fatalf("body\n got %s\nwant %s", a.Body, want)
	}
}

func TestMonthAllServers(t *testing.T) {
	q := parse(t, "month=2026-09") // neither current nor previous: never age-stale
	a := statistics(t, q, now, Data{
		RefreshMinutes: 10,
		Servers:        []Server{alpha, beta, gamma},
		Reports: []reports.Row{
			{GuildID: "100", Period: "2026-09", GeneratedAt: at("2026-10-01T00:00:00Z"), Status: reports.StatusOK, TotalMessages: 40},
			{GuildID: "200", Period: "2026-09", GeneratedAt: at("2026-09-29T00:00:00Z"), Status: reports.StatusStale,
				ErrorCode: ptr("rate_limited"), ErrorMessage: ptr("slow down"), TotalMessages: 7},
		},
		Channels: []Channel{
			{GuildID: "100", ID: "11", Name: "b", Messages: 10},
			{GuildID: "100", ID: "9", Name: "a", Messages: 10},
			{GuildID: "100", ID: "5", Name: "c", Messages: 20},
			{GuildID: "200", ID: "1", Name: "x", Messages: 7},
		},
	})
	d := decode(t, a)
	if d.Month == nil || *d.Month != "2026-09" || d.Period != nil || d.Start != nil || d.From != nil {
		t.Fatalf("month fields: %s", a.Body)
	}
	if *d.TotalServers != 3 || *d.ReadyServers != 1 || *d.TotalMessages != 40 || *d.Complete {
		t.Fatalf("totals: %s", a.Body)
	}
	if len(d.Servers) != 3 || d.Servers[0].Number != 1 || d.Servers[2].Number != 3 {
		t.Fatalf("servers: %s", a.Body)
	}
	s1, s2, s3 := d.Servers[0], d.Servers[1], d.Servers[2]
	wantCh := []answerstest.Channel{
		{ID: "5", Name: "c", Messages: 20},
		{ID: "9", Name: "a", Messages: 10},
		{ID: "11", Name: "b", Messages: 10},
	}
	if s1.Status != reports.StatusOK || *s1.TotalMessages != 40 || !reflect.DeepEqual(s1.Channels, wantCh) || s1.Error != nil {
		t.Fatalf("alpha: %+v", s1)
	}
	if s2.Status != reports.StatusStale || *s2.TotalMessages != 7 || s2.Error == nil || *s2.Error != (answerstest.Error{Code: "rate_limited", Message: "slow down"}) {
		t.Fatalf("beta: %+v", s2)
	}
	if *s2.IconURL != "https://cdn.example/icons/200/a_anim.gif?size=256" || s2.BannerURL != nil {
		t.Fatalf("beta links: %v %v", *s2.IconURL, s2.BannerURL)
	}
	if s3.Status != reports.StatusMissing || s3.TotalMessages != nil || s3.Channels == nil || len(s3.Channels) != 0 ||
		s3.GeneratedAt != nil || s3.Error != nil || s3.IconURL != nil || s3.BannerURL != nil {
		t.Fatalf("gamma: %+v", s3)
	}
}

func TestAgeStaleness(t *testing.T) {
	// refreshMinutes 10: a refreshed report older than 30 minutes is stale.
	tests := []struct {
		name      string
		raw       string
		period    string
		generated string
		status    string
		until     string // expected ValidUntil
	}{
		{"current month fresh", "", "2026-11", "2026-11-20T09:40:00Z", reports.StatusOK, "2026-11-20T10:10:00.000000001Z"},
		{"current month old", "", "2026-11", "2026-11-20T09:29:59Z", reports.StatusStale, "2026-11-20T21:00:00Z"},
		{"current month exactly 3x", "", "2026-11", "2026-11-20T09:30:00Z", reports.StatusOK, "2026-11-20T10:00:00.000000001Z"},
		{"previous month old", "month=2026-10", "2026-10", "2026-11-01T00:00:00Z", reports.StatusStale, "2026-11-20T21:00:00Z"},
		{"older month old", "month=2026-09", "2026-09", "2026-10-01T00:00:00Z", reports.StatusOK, "2026-11-20T21:00:00Z"},
		{"today old", "period=day", "2026-11-20", "2026-11-20T08:00:00Z", reports.StatusStale, "2026-11-20T21:00:00Z"},
		{"yesterday fresh", "period=day&date=2026-11-19", "2026-11-19", "2026-11-20T09:55:00Z", reports.StatusOK, "2026-11-20T10:25:00.000000001Z"},
		{"yesterday old", "period=day&date=2026-11-19", "2026-11-19", "2026-11-19T21:00:00Z", reports.StatusStale, "2026-11-20T21:00:00Z"},
		{"two days ago old", "period=day&date=2026-11-18", "2026-11-18", "2026-11-18T21:00:00Z", reports.StatusOK, "2026-11-20T21:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := parse(t, tt.raw+"&server=100")
			a := statistics(t, q, now, Data{
				RefreshMinutes: 10,
				Servers:        []Server{alpha},
				Reports:        []reports.Row{{GuildID: "100", Period: tt.period, GeneratedAt: at(tt.generated), Status: reports.StatusOK, TotalMessages: 3}},
			})
			d := decode(t, a)
			if d.Server.Status != tt.status || d.Server.Error != nil || *d.Server.TotalMessages != 3 {
				t.Fatalf("server %+v, want status %s", d.Server, tt.status)
			}
			if want, _ := time.Parse(time.RFC3339Nano, tt.until); !a.ValidUntil.Equal(want) {
				t.Fatalf("valid until %v, want %v", a.ValidUntil, want)
			}
		})
	}
}

func TestCompositePeriods(t *testing.T) {
	day := func(g, d, gen, status string, total int64, code *string) reports.Row {
		return reports.Row{GuildID: g, Period: d, GeneratedAt: at(gen), Status: status, TotalMessages: total, ErrorCode: code, ErrorMessage: code}
	}
	q := parse(t, "period=range&from=2026-11-01&to=2026-11-03")
	a := statistics(t, q, now, Data{
		RefreshMinutes: 10,
		Servers:        []Server{alpha, beta, gamma},
		Reports: []reports.Row{
			// alpha: complete and ok.
			day("100", "2026-11-01", "2026-11-01T21:00:00Z", reports.StatusOK, 1, nil),
			day("100", "2026-11-02", "2026-11-02T21:00:00Z", reports.StatusOK, 2, nil),
			day("100", "2026-11-03", "2026-11-03T20:00:00Z", reports.StatusOK, 4, nil),
			// beta: complete, two stale days: the sum stays, the newest error shows.
			day("200", "2026-11-03", "2026-11-04T00:00:00Z", reports.StatusStale, 5, ptr("late")),
			day("200", "2026-11-01", "2026-10-31T22:00:00Z", reports.StatusStale, 10, ptr("early")),
			day("200", "2026-11-02", "2026-11-02T22:00:00Z", reports.StatusOK, 20, nil),
			// gamma: one day missing.
			day("300", "2026-11-01", "2026-11-01T23:00:00Z", reports.StatusOK, 100, nil),
			day("300", "2026-11-03", "2026-11-03T23:00:00Z", reports.StatusOK, 100, nil),
		},
		Channels: []Channel{
			{GuildID: "100", ID: "1", Name: "one", Messages: 7},
			{GuildID: "200", ID: "2", Name: "two", Messages: 35},
			{GuildID: "300", ID: "3", Name: "three", Messages: 200},
		},
	})
	d := decode(t, a)
	if *d.Period != "range" || *d.From != "2026-11-01" || *d.To != "2026-11-03" ||
		*d.Start != "2026-10-31T21:00:00Z" || *d.EndExclusive != "2026-11-03T21:00:00Z" || d.Month != nil {
		t.Fatalf("period fields: %s", a.Body)
	}
	s1, s2, s3 := d.Servers[0], d.Servers[1], d.Servers[2]
	if s1.Status != reports.StatusOK || *s1.TotalMessages != 7 || *s1.GeneratedAt != "2026-11-01T21:00:00Z" || len(s1.Channels) != 1 {
		t.Fatalf("alpha %+v", s1)
	}
	if s2.Status != reports.StatusStale || *s2.TotalMessages != 35 || *s2.GeneratedAt != "2026-10-31T22:00:00Z" ||
		s2.Error == nil || s2.Error.Code != "late" || len(s2.Channels) != 1 {
		t.Fatalf("beta %+v", s2)
	}
	if s3.Status != reports.StatusMissing || s3.TotalMessages != nil || len(s3.Channels) != 0 || *s3.GeneratedAt != "2026-11-01T23:00:00Z" || s3.Error != nil {
		t.Fatalf("gamma %+v", s3)
	}
	if *d.ReadyServers != 1 || *d.TotalMessages != 7 || *d.Complete || *d.TotalServers != 3 {
		t.Fatalf("totals %s", a.Body)
	}
}

func TestWeekWithTodayTurnsStale(t *testing.T) {
	q := parse(t, "period=week&server=1")
	var reps []reports.Row
	for _, d := range q.Days() {
		reps = append(reps, reports.Row{GuildID: "100", Period: d.String(), GeneratedAt: d.AddDays(1).Start(), Status: reports.StatusOK, TotalMessages: 1})
	}
	reps[6].GeneratedAt = at("2026-11-20T09:50:00Z") // today, fresh
	reps[5].GeneratedAt = at("2026-11-20T09:45:00Z") // yesterday, fresh, turns stale first
	a := statistics(t, q, now, Data{RefreshMinutes: 10, Servers: []Server{alpha}, Reports: reps})
	d := decode(t, a)
	if d.Server.Status != reports.StatusOK || *d.Server.TotalMessages != 7 {
		t.Fatalf("server %+v", d.Server)
	}
	if want := at("2026-11-20T10:15:00Z").Add(time.Nanosecond); !a.ValidUntil.Equal(want) {
		t.Fatalf("valid until %v, want %v", a.ValidUntil, want)
	}
	later, err := Statistics(q, a.ValidUntil, Data{RefreshMinutes: 10, Servers: []Server{alpha}, Reports: reps}, links)
	if err != nil {
		t.Fatal(err)
	}
	if s := decode(t, later).Server.Status; s != reports.StatusStale {
		t.Fatalf("at valid-until the answer must change, status %s", s)
	}
}

func TestServerNotFound(t *testing.T) {
	if _, err := Statistics(parse(t, "server=5"), now, Data{}, links); !errors.Is(err, ErrServerNotFound) {
		t.Fatalf("statistics: %v", err)
	}
	if _, err := Icons(nil, true, links); !errors.Is(err, ErrServerNotFound) {
		t.Fatalf("icons: %v", err)
	}
}

func TestLinks(t *testing.T) {
	tests := []struct {
		s              Server
		icon, banner   string
		noIcon, noBann bool
	}{
		{s: alpha, icon: "https://cdn.example/icons/100/abc.png?size=256", banner: "https://cdn.example/banners/100/a_ban.gif?size=1024"},
		{s: beta, icon: "https://cdn.example/icons/200/a_anim.gif?size=256", noBann: true},
		{s: gamma, noIcon: true, noBann: true},
		{s: Server{GuildID: "4", Icon: ptr(""), Banner: nil, BannerKnown: true}, noIcon: true, noBann: true},
		{s: Server{GuildID: "5", Icon: ptr("A_x"), Banner: ptr("b"), BannerKnown: true}, icon: "https://cdn.example/icons/5/A_x.png?size=256", banner: "https://cdn.example/banners/5/b.png?size=1024"},
	}
	for _, tt := range tests {
		icon, banner := links.icon(tt.s), links.banner(tt.s)
		if (icon == nil) != tt.noIcon || (icon != nil && *icon != tt.icon) {
			t.Errorf("%s icon = %v", tt.s.GuildID, icon)
		}
		if (banner == nil) != tt.noBann || (banner != nil && *banner != tt.banner) {
			t.Errorf("%s banner = %v", tt.s.GuildID, banner)
		}
	}
}

func TestIcons(t *testing.T) {
	a, err := Icons([]Server{alpha, gamma}, false, Links{CDN: "https://cdn.discordapp.com"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"servers":[{"number":1,"name":"Alpha","guildId":"100","iconUrl":"https://cdn.discordapp.com/icons/100/abc.png?size=256",` +
		`"bannerUrl":"https://cdn.discordapp.com/banners/100/a_ban.gif?size=1024"},{"number":3,"name":"Gamma & Co","guildId":"300","iconUrl":null,"bannerUrl":null}],"totalServers":2}`
	if string(a.Body) != want {
		t.Fatalf("body\n got %s\nwant %s", a.Body, want)
	}
	a, err = Icons([]Server{gamma}, true, links)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"server":{"number":3,"name":"Gamma & Co","guildId":"300","iconUrl":null,"bannerUrl":null}}`; string(a.Body) != want {
		t.Fatalf("body %s", a.Body)
	}
	a, _ = Icons(nil, false, links)
	if want := `{"servers":[],"totalServers":0}`; string(a.Body) != want {
		t.Fatalf("body %s", a.Body)
	}
}

// FuzzStatistics composes arbitrary day reports: the answer is valid JSON,
// totals only count ok servers, and a server is ok or stale only with every
// day present.
func FuzzStatistics(f *testing.F) {
	f.Add(uint8(3), []byte{0, 1, 2, 3, 4, 5, 6}, int64(5))
	f.Add(uint8(1), []byte{}, int64(0))
	f.Add(uint8(7), []byte{255, 128, 7, 7, 9}, int64(-3))
	f.Fuzz(func(t *testing.T, days uint8, cells []byte, refresh int64) {
		n := 1 + int(days)%query.MaxRangeDays
		from := reports.DayOf(now).AddDays(-n + 2) // ends tomorrow: today and yesterday are live
		q, err := query.Parse(form.Parse("period=range&from="+from.String()+"&to="+from.AddDays(n-1).String()), now)
		if err != nil {
			t.Fatal(err)
		}
		servers := []Server{alpha, beta, gamma}
		var reps []reports.Row
		for i, c := range cells {
			s := servers[i%3]
			d := from.AddDays(int(c) % n)
			dup := false
			for _, r := range reps {
				dup = dup || (r.GuildID == s.GuildID && r.Period == d.String())
			}
			if dup {
				continue
			}
			status := reports.StatusOK
			if c&0x80 != 0 {
				status = reports.StatusStale
			}
			reps = append(reps, reports.Row{GuildID: s.GuildID, Period: d.String(), GeneratedAt: now.Add(-time.Duration(c) * time.Minute), Status: status, TotalMessages: int64(c)})
		}
		a := statistics(t, q, now, Data{RefreshMinutes: int(refresh % 60), Servers: servers, Reports: reps})
		d := decode(t, a)
		var ready int
		var total int64
		for _, s := range d.Servers {
			present := 0
			for _, r := range reps {
				if r.GuildID == s.GuildID {
					present++
				}
			}
			switch s.Status {
			case reports.StatusOK:
				ready++
				total += *s.TotalMessages
				fallthrough
			case reports.StatusStale:
				if present != n || s.TotalMessages == nil {
					t.Fatalf("%s %s with %d of %d days", s.GuildID, s.Status, present, n)
				}
			case reports.StatusMissing:
				if present == n || s.TotalMessages != nil || len(s.Channels) != 0 {
					t.Fatalf("%s missing with %d of %d days", s.GuildID, present, n)
				}
			default:
				t.Fatalf("status %q", s.Status)
			}
		}
		if *d.ReadyServers != ready || *d.TotalMessages != total || *d.Complete != (ready == 3) {
			t.Fatalf("totals %s", a.Body)
		}
		if !a.ValidUntil.After(now) || a.ValidUntil.After(reports.NextMidnight(now)) {
			t.Fatalf("valid until %v", a.ValidUntil)
		}
	})
}

// BenchmarkStatisticsAllServers composes and encodes the largest answer:
// 100 servers × 50 channels over 31 days.
func BenchmarkStatisticsAllServers(b *testing.B) {
	q, err := query.Parse(form.Parse("period=range&from=2026-10-21&to=2026-11-20"), now)
	if err != nil {
		b.Fatal(err)
	}
	var d Data
	d.RefreshMinutes = 10
	for g := 1; g <= 100; g++ {
		id := fmt.Sprint(100000000000000000 + g)
		d.Servers = append(d.Servers, Server{Number: g, Name: fmt.Sprint("Server ", g), GuildID: id, Icon: ptr("a_0123456789abcdef"), Banner: ptr("0123456789abcdef"), BannerKnown: true})
		for _, day := range q.Days() {
			d.Reports = append(d.Reports, reports.Row{GuildID: id, Period: day.String(), GeneratedAt: day.AddDays(1).Start(), Status: reports.StatusOK, TotalMessages: 1000})
		}
		for c := 1; c <= 50; c++ {
			d.Channels = append(d.Channels, Channel{GuildID: id, ID: fmt.Sprint(200000000000000000 + g*1000 + c), Name: fmt.Sprint("channel-", c), Messages: int64((g*31 + c*17) % 100 * 31)})
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Statistics(q, now, d, links); err != nil {
			b.Fatal(err)
		}
	}
}
