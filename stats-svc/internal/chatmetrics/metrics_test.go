package chatmetrics_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"
	"gorm.io/gorm"

	"forumstats.local/shared/migrate/migratetest"
	"forumstats.local/shared/reports"
	tu "forumstats.local/shared/testutil"
	"forumstats.local/stats-svc/internal/chatmetrics"
)

var pgURL string

func TestMain(m *testing.M) { tu.Main(m, &pgURL, reports.Migrations) }

// testNow is 2026-11-20 13:00 in Moscow: today 2026-11-20, yesterday 2026-11-19, month 2026-11.
var testNow = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

const (
	alpha = "81384788765712384"
	beta  = "222222222222222222"
	gamma = "333"
	gone  = "4242" // left the catalog: its reports are never exported
)

// seed writes the fixture of want: Alpha has all three reports (channel 12 renamed today),
// Beta has only this month's (2 h old: stale by age with 5-minute passes), Gamma none.
func seed(t *testing.T, gdb *gorm.DB) {
	t.Helper()
	day := func(guild, d string, at time.Time, status string, chans map[string]int64, names map[string]string) []any {
		var total int64
		var cs []reports.DailyChannelCount
		for id, n := range chans {
			total += n
			cs = append(cs, reports.DailyChannelCount{GuildID: guild, Day: d, ChannelID: id, Name: names[id], Messages: n})
		}
		return []any{&reports.DailyReport{GuildID: guild, Day: d, GeneratedAt: at, Status: status, TotalMessages: total}, &cs}
	}
	rows := []any{
		&[]reports.CatalogServer{{Number: 1, Name: "Alpha", GuildID: alpha}, {Number: 2, Name: "Beta \"quoted\"", GuildID: beta}, {Number: 3, Name: "Gamma", GuildID: gamma}},
		&[]reports.MonthlyReport{
			{GuildID: alpha, Month: "2026-11", GeneratedAt: testNow.Add(-5 * time.Minute), Status: "ok", TotalMessages: 300},
			{GuildID: beta, Month: "2026-11", GeneratedAt: testNow.Add(-2 * time.Hour), Status: "ok", TotalMessages: 70},
			{GuildID: alpha, Month: "2026-10", GeneratedAt: testNow, Status: "ok", TotalMessages: 1000},
			{GuildID: gone, Month: "2026-11", GeneratedAt: testNow, Status: "ok", TotalMessages: 5000},
		},
		&[]reports.MonthlyChannelCount{
			{GuildID: alpha, Month: "2026-11", ChannelID: "10", Name: "general", Messages: 250},
			{GuildID: alpha, Month: "2026-11", ChannelID: "12", Name: "old-name", Messages: 50},
			{GuildID: beta, Month: "2026-11", ChannelID: "20", Name: "lobby", Messages: 70},
			{GuildID: gone, Month: "2026-11", ChannelID: "40", Name: "x", Messages: 5000},
		},
	}
	rows = append(rows, day(alpha, "2026-11-20", testNow.Add(-time.Minute), "ok", map[string]int64{"10": 7, "12": 1}, map[string]string{"10": "general", "12": "new-name"})...)
	rows = append(rows, day(alpha, "2026-11-19", testNow.Add(-10*time.Hour), "stale", map[string]int64{"10": 20}, map[string]string{"10": "general"})...)
	rows = append(rows, day(alpha, "2026-11-18", testNow, "ok", map[string]int64{"10": 99}, map[string]string{"10": "general"})...)
	rows = append(rows, day(gone, "2026-11-20", testNow, "ok", map[string]int64{"40": 9}, map[string]string{"40": "x"})...)
	err := gdb.Transaction(func(tx *gorm.DB) error {
		for _, r := range rows {
			if err := tx.Create(r).Error; err != nil {
				return err
			}
		}
		if err := tx.Exec("UPDATE collector_state SET refresh_minutes = 5 WHERE id = 1").Error; err != nil {
			return err
		}
		_, err := reports.BumpGeneration(tx)
		return err
	})
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
}

const want = `
# HELP chat_channel_info Newest known name of each exported channel (value 1).
# TYPE chat_channel_info gauge
chat_channel_info{channel_id="10",guild_id="81384788765712384",name="general"} 1
chat_channel_info{channel_id="12",guild_id="81384788765712384",name="new-name"} 1
chat_channel_info{channel_id="20",guild_id="222222222222222222",name="lobby"} 1
# HELP chat_messages Messages counted by the stored report of the period (today, yesterday: Moscow days; month: the current Moscow month); channel_id="" is the server total. Absent when the report is missing.
# TYPE chat_messages gauge
chat_messages{channel_id="",guild_id="222222222222222222",period="month"} 70
chat_messages{channel_id="",guild_id="81384788765712384",period="month"} 300
chat_messages{channel_id="",guild_id="81384788765712384",period="today"} 8
chat_messages{channel_id="",guild_id="81384788765712384",period="yesterday"} 20
chat_messages{channel_id="10",guild_id="81384788765712384",period="month"} 250
chat_messages{channel_id="10",guild_id="81384788765712384",period="today"} 7
chat_messages{channel_id="10",guild_id="81384788765712384",period="yesterday"} 20
chat_messages{channel_id="12",guild_id="81384788765712384",period="month"} 50
chat_messages{channel_id="12",guild_id="81384788765712384",period="today"} 1
chat_messages{channel_id="20",guild_id="222222222222222222",period="month"} 70
# HELP chat_metrics_read_errors_total Scrapes whose read of the reports failed; they exported no chat_* count series.
# TYPE chat_metrics_read_errors_total counter
chat_metrics_read_errors_total 0
# HELP chat_report_age_seconds Seconds since the current report of the kind (daily: today, monthly: this month) was generated.
# TYPE chat_report_age_seconds gauge
chat_report_age_seconds{guild_id="222222222222222222",kind="monthly"} 7200
chat_report_age_seconds{guild_id="81384788765712384",kind="daily"} 60
chat_report_age_seconds{guild_id="81384788765712384",kind="monthly"} 300
# HELP chat_report_status Status of the current report of the kind: 1 for the status it has (ok, stale, or missing), 0 for the others.
# TYPE chat_report_status gauge
chat_report_status{guild_id="222222222222222222",kind="daily",status="missing"} 1
chat_report_status{guild_id="222222222222222222",kind="daily",status="ok"} 0
chat_report_status{guild_id="222222222222222222",kind="daily",status="stale"} 0
chat_report_status{guild_id="222222222222222222",kind="monthly",status="missing"} 0
chat_report_status{guild_id="222222222222222222",kind="monthly",status="ok"} 0
chat_report_status{guild_id="222222222222222222",kind="monthly",status="stale"} 1
chat_report_status{guild_id="333",kind="daily",status="missing"} 1
chat_report_status{guild_id="333",kind="daily",status="ok"} 0
chat_report_status{guild_id="333",kind="daily",status="stale"} 0
chat_report_status{guild_id="333",kind="monthly",status="missing"} 1
chat_report_status{guild_id="333",kind="monthly",status="ok"} 0
chat_report_status{guild_id="333",kind="monthly",status="stale"} 0
chat_report_status{guild_id="81384788765712384",kind="daily",status="missing"} 0
chat_report_status{guild_id="81384788765712384",kind="daily",status="ok"} 1
chat_report_status{guild_id="81384788765712384",kind="daily",status="stale"} 0
chat_report_status{guild_id="81384788765712384",kind="monthly",status="missing"} 0
chat_report_status{guild_id="81384788765712384",kind="monthly",status="ok"} 1
chat_report_status{guild_id="81384788765712384",kind="monthly",status="stale"} 0
# HELP chat_server_info Catalog servers: number and name of each guild_id (value 1).
# TYPE chat_server_info gauge
chat_server_info{guild_id="222222222222222222",name="Beta \"quoted\"",number="2"} 1
chat_server_info{guild_id="333",name="Gamma",number="3"} 1
chat_server_info{guild_id="81384788765712384",name="Alpha",number="1"} 1
`

// databases returns a freshly migrated and seeded database of each dialect.
func databases(t *testing.T) map[string]*gorm.DB {
	t.Helper()
	pg, lite := migratetest.Databases(t, reports.Migrations)
	out := map[string]*gorm.DB{"postgres": pg, "sqlite": lite}
	for _, gdb := range out {
		seed(t, gdb)
	}
	return out
}

func TestExactValues(t *testing.T) {
	for name, gdb := range databases(t) {
		t.Run(name, func(t *testing.T) {
			c := chatmetrics.New(chatmetrics.NewDB(gdb), chatmetrics.Options{Now: func() time.Time { return testNow }})
			if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
				t.Fatal(err)
			}
			problems, err := promlint.New(strings.NewReader(gather(t, c))).Lint()
			if err != nil || len(problems) > 0 {
				t.Fatalf("promlint: %v %v", problems, err)
			}
			// Series count: documented bound (README): servers×(1+6) + reports×1 + ages + channel rows + channels.
			if n := testutil.CollectAndCount(c); n != 3*7+4+3+6+3+1 {
				t.Fatalf("%d series", n)
			}
		})
	}
}

// TestMidnight: after Moscow midnight today's report is missing (no count, status missing) and
// the former today is yesterday, re-read at once whatever the TTL.
func TestMidnight(t *testing.T) {
	gdb := databases(t)["sqlite"]
	clock := tu.NewClock(testNow)
	c := chatmetrics.New(chatmetrics.NewDB(gdb), chatmetrics.Options{Now: clock.Now, TTL: time.Hour})
	if out := gather(t, c); !strings.Contains(out, `chat_messages{channel_id="",guild_id="81384788765712384",period="today"} 8`) {
		t.Fatalf("before midnight:\n%s", out)
	}
	clock.Set(time.Date(2026, 11, 20, 21, 0, 1, 0, time.UTC)) // 2026-11-21 00:00:01 Moscow
	out := gather(t, c)
	for _, absent := range []string{`period="today"`, `channel_id="",guild_id="81384788765712384",period="yesterday"} 20`} {
		if strings.Contains(out, absent) {
			t.Errorf("after midnight: %s present\n%s", absent, out)
		}
	}
	for _, present := range []string{
		`chat_messages{channel_id="",guild_id="81384788765712384",period="yesterday"} 8`,
		`chat_report_status{guild_id="81384788765712384",kind="daily",status="missing"} 1`,
	} {
		if !strings.Contains(out, present) {
			t.Errorf("after midnight: %s absent\n%s", present, out)
		}
	}
}

func gather(t *testing.T, c prometheus.Collector) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// counting counts the reads of a source and can fail them.
type counting struct {
	chatmetrics.Source
	gens, reads atomic.Int64
	fail        atomic.Bool
}

var errDown = errors.New("database down")

func (c *counting) Generation(ctx context.Context) (int64, error) {
	c.gens.Add(1)
	if c.fail.Load() {
		return 0, errDown
	}
	return c.Source.Generation(ctx)
}

func (c *counting) Read(ctx context.Context, p chatmetrics.Periods) (chatmetrics.Snapshot, error) {
	c.reads.Add(1)
	if c.fail.Load() {
		return chatmetrics.Snapshot{}, errDown
	}
	return c.Source.Read(ctx, p)
}

// TestCache: within the TTL a scrape reads nothing; after it, one generation query, and a
// re-read only when the collector wrote (a new generation). A failed read exports no chat_*
// series but the error counter, and is itself cached for the TTL.
func TestCache(t *testing.T) {
	gdb := databases(t)["postgres"]
	clock := tu.NewClock(testNow)
	src := &counting{Source: chatmetrics.NewDB(gdb)}
	c := chatmetrics.New(src, chatmetrics.Options{Now: clock.Now, TTL: 10 * time.Second})
	scrape := func() string { return gather(t, c) }
	expect := func(step string, gens, reads int64) {
		t.Helper()
		if g, r := src.gens.Load(), src.reads.Load(); g != gens || r != reads {
			t.Fatalf("%s: %d generation queries, %d reads; want %d, %d", step, g, r, gens, reads)
		}
	}
	scrape()
	expect("first scrape", 0, 1)
	for range 5 {
		clock.Add(time.Second)
		scrape()
	}
	expect("within the TTL", 0, 1)
	clock.Add(5 * time.Second)
	scrape()
	scrape()
	expect("TTL passed, same generation", 1, 1)

	// The collector writes: the next check sees a new generation and re-reads.
	if err := gdb.Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("UPDATE daily_reports SET total_messages = 9 WHERE guild_id = ? AND day = '2026-11-20'", alpha).Error; err != nil {
			return err
		}
		_, err := reports.BumpGeneration(tx)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if out := scrape(); !strings.Contains(out, `chat_messages{channel_id="",guild_id="81384788765712384",period="today"} 8`) {
		t.Fatalf("re-read within the TTL:\n%s", out)
	}
	clock.Add(10 * time.Second)
	if out := scrape(); !strings.Contains(out, `chat_messages{channel_id="",guild_id="81384788765712384",period="today"} 9`) {
		t.Fatalf("new generation not read:\n%s", out)
	}
	expect("new generation", 2, 2)

	src.fail.Store(true)
	clock.Add(10 * time.Second)
	out := scrape()
	if strings.Contains(out, "chat_messages") || strings.Contains(out, "chat_server_info") || !strings.Contains(out, "chat_metrics_read_errors_total 1") {
		t.Fatalf("failed read:\n%s", out)
	}
	scrape()
	expect("failure cached", 3, 2)
	src.fail.Store(false)
	clock.Add(10 * time.Second)
	if out := scrape(); !strings.Contains(out, "chat_messages{") {
		t.Fatalf("not recovered:\n%s", out)
	}
	expect("recovered", 3, 3)
}
