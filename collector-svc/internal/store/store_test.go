package store

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/shared/migrate/migratetest"
	sharedrdb "forumstats.local/shared/rdb"
	"forumstats.local/shared/reports"
	"forumstats.local/shared/testutil"
)

func TestMain(m *testing.M) { testutil.Run(m) }

// newPG opens a fresh, migrated PostgreSQL database for one test.
func newPG(t *testing.T) *gorm.DB { return migratetest.Postgres(t, reports.Migrations) }

// newSQLite opens a fresh, migrated SQLite database for one test.
func newSQLite(t *testing.T) *gorm.DB { return migratetest.SQLite(t, reports.Migrations) }

// both runs fn against PostgreSQL and SQLite.
func both(t *testing.T, fn func(t *testing.T, gdb *gorm.DB)) {
	migratetest.Dialects(t, reports.Migrations, fn)
}

func generation(t *testing.T, gdb *gorm.DB) int64 {
	t.Helper()
	g, err := reports.Generation(context.Background(), gdb)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

var at = time.Date(2026, 11, 19, 20, 59, 0, 123456789, time.UTC)

type channel struct {
	id, name string
	messages int64
}

// saveOK writes a whole report of status ok, as a pass does.
func saveOK(ctx context.Context, s *Store, kind reports.Kind, guildID, period string, at time.Time, total int64, channels ...channel) error {
	row := reports.Row{GuildID: guildID, Period: period, GeneratedAt: at, Status: reports.StatusOK, TotalMessages: total}
	rows := make([]reports.ChannelRow, len(channels))
	for i, c := range channels {
		rows[i] = reports.ChannelRow{GuildID: guildID, Period: period, ChannelID: c.id, Name: c.name, Messages: c.messages}
	}
	return s.SaveReport(ctx, kind, row, rows)
}

func TestSaveReportReplacesWholeReport(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		ctx := context.Background()
		s := New(gdb, nil, nil)
		g0 := generation(t, gdb)
		if err := saveOK(ctx, s, reports.KindDay, "1", "2026-11-19", at, 10, channel{"11", "general", 6}, channel{"12", "random", 4}); err != nil {
			t.Fatal(err)
		}
		// The second refresh lost a channel and renamed another: nothing of the first stays.
		if err := saveOK(ctx, s, reports.KindDay, "1", "2026-11-19", at.Add(time.Minute), 7, channel{"11", "general-renamed", 7}); err != nil {
			t.Fatal(err)
		}
		if g := generation(t, gdb); g != g0+2 {
			t.Fatalf("generation %d, want %d", g, g0+2)
		}
		var rep reports.DailyReport
		if err := gdb.First(&rep, "guild_id = ? AND day = ?", "1", "2026-11-19").Error; err != nil {
			t.Fatal(err)
		}
		if rep.TotalMessages != 7 || rep.Status != reports.StatusOK || !rep.GeneratedAt.Equal(at.Add(time.Minute).Truncate(time.Microsecond)) {
			t.Fatalf("report %+v", rep)
		}
		var chans []reports.DailyChannelCount
		gdb.Find(&chans, "guild_id = ?", "1")
		if len(chans) != 1 || chans[0].Name != "general-renamed" || chans[0].Messages != 7 {
			t.Fatalf("channels %+v", chans)
		}

		// Monthly reports go to their own tables; a report without channels is fine.
		if err := saveOK(ctx, s, reports.KindMonth, "1", "2026-11", at, 0); err != nil {
			t.Fatal(err)
		}
		var m reports.MonthlyReport
		if err := gdb.First(&m, "guild_id = ? AND month = ?", "1", "2026-11").Error; err != nil {
			t.Fatal(err)
		}
	})
}

func TestMarkStaleKeepsCounts(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		ctx := context.Background()
		s := New(gdb, nil, nil)
		if err := saveOK(ctx, s, reports.KindMonth, "5", "2026-10", at, 340, channel{"9", "general", 340}); err != nil {
			t.Fatal(err)
		}
		g0 := generation(t, gdb)
		marked, err := s.MarkStale(ctx, reports.KindMonth, "5", "2026-10", "rate_limited", "HTTP 429")
		if err != nil || !marked {
			t.Fatalf("marked %v, err %v", marked, err)
		}
		var m reports.MonthlyReport
		gdb.First(&m, "guild_id = ? AND month = ?", "5", "2026-10")
		if m.Status != reports.StatusStale || *m.ErrorCode != "rate_limited" || *m.ErrorMessage != "HTTP 429" ||
			m.TotalMessages != 340 || !m.GeneratedAt.Equal(at.Truncate(time.Microsecond)) {
			t.Fatalf("stale report %+v", m)
		}
		var n int64
		gdb.Model(&reports.MonthlyChannelCount{}).Where("guild_id = ?", "5").Count(&n)
		if n != 1 {
			t.Fatalf("%d channel rows after marking stale", n)
		}
		if generation(t, gdb) != g0+1 {
			t.Fatal("marking stale did not bump the generation")
		}
		// A period never collected stays missing, and nothing changes.
		marked, err = s.MarkStale(ctx, reports.KindDay, "5", "2026-10-01", "timeout", "x")
		if err != nil || marked {
			t.Fatalf("marked a missing report: %v %v", marked, err)
		}
		gdb.Model(&reports.DailyReport{}).Count(&n)
		if n != 0 || generation(t, gdb) != g0+1 {
			t.Fatalf("%d daily reports, generation %d", n, generation(t, gdb))
		}
		// A later good refresh clears the error.
		if err := saveOK(ctx, s, reports.KindMonth, "5", "2026-10", at.Add(time.Hour), 341); err != nil {
			t.Fatal(err)
		}
		m = reports.MonthlyReport{}
		gdb.First(&m, "guild_id = ? AND month = ?", "5", "2026-10")
		if m.Status != reports.StatusOK || m.ErrorCode != nil || m.ErrorMessage != nil || m.TotalMessages != 341 {
			t.Fatalf("refreshed report %+v", m)
		}
	})
}

func TestSyncCatalog(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		ctx := context.Background()
		s := New(gdb, nil, nil)
		a := []catalog.Entry{{Number: 1, Name: "Alpha", GuildID: "100"}, {Number: 2, Name: "Beta", GuildID: "200"}}
		if err := s.SyncCatalog(ctx, a); err != nil {
			t.Fatal(err)
		}
		g0 := generation(t, gdb)
		if err := s.SyncCatalog(ctx, []catalog.Entry{a[1], a[0]}); err != nil {
			t.Fatal(err)
		}
		if generation(t, gdb) != g0 {
			t.Fatal("an unchanged catalog bumped the generation")
		}
		// Numbers may move between guilds in one replacement (no unique-key clash midway).
		b := []catalog.Entry{{Number: 1, Name: "Beta", GuildID: "200"}, {Number: 3, Name: "Gamma", GuildID: "300"}}
		if err := s.SyncCatalog(ctx, b); err != nil {
			t.Fatal(err)
		}
		got, err := s.Catalog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0] != b[0] || got[1] != b[1] {
			t.Fatalf("catalog %+v", got)
		}
		if generation(t, gdb) != g0+1 {
			t.Fatal("a changed catalog did not bump the generation")
		}
	})
}

func TestSaveGuild(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		ctx := context.Background()
		s := New(gdb, nil, nil)
		icon := "a_abc"
		if err := s.SaveGuild(ctx, "7", &icon, nil, at); err != nil {
			t.Fatal(err)
		}
		g0 := generation(t, gdb)
		if err := s.SaveGuild(ctx, "7", &icon, nil, at.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		var g reports.Guild
		gdb.First(&g, "guild_id = ?", "7")
		if !g.BannerKnown || g.Banner != nil || *g.Icon != icon || !g.MetadataAt.Equal(at.Add(time.Hour).Truncate(time.Microsecond)) {
			t.Fatalf("guild %+v", g)
		}
		if generation(t, gdb) != g0 {
			t.Fatal("unchanged images bumped the generation")
		}
		banner := "b1"
		if err := s.SaveGuild(ctx, "7", nil, &banner, at); err != nil {
			t.Fatal(err)
		}
		g = reports.Guild{}
		gdb.First(&g, "guild_id = ?", "7")
		if g.Icon != nil || *g.Banner != "b1" || generation(t, gdb) != g0+1 {
			t.Fatalf("guild %+v generation %d", g, generation(t, gdb))
		}
	})
}

func TestPassStateAndMissingDays(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		ctx := context.Background()
		s := New(gdb, nil, nil)
		g0 := generation(t, gdb)
		if err := s.RecordPassStart(ctx, at, 10); err != nil {
			t.Fatal(err)
		}
		if generation(t, gdb) != g0 {
			t.Fatal("recording the default refresh minutes bumped the generation")
		}
		if err := s.RecordPassStart(ctx, at, 3); err != nil {
			t.Fatal(err)
		}
		if generation(t, gdb) != g0+1 {
			t.Fatal("a new refresh interval did not bump the generation")
		}
		var minutes int
		if err := gdb.Raw("SELECT refresh_minutes FROM collector_state WHERE id = 1").Scan(&minutes).Error; err != nil || minutes != 3 {
			t.Fatalf("refresh minutes %d, %v", minutes, err)
		}
		fail := context.DeadlineExceeded
		if err := s.RecordPassEnd(ctx, at.Add(time.Minute), fail); err != nil {
			t.Fatal(err)
		}
		st, err := s.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.LastGoodPassAt != nil || st.LastError == nil || *st.LastError != fail.Error() || !st.PassStartedAt.Equal(at.Truncate(time.Microsecond)) {
			t.Fatalf("state after a failed pass %+v", st)
		}
		if err := s.RecordPassEnd(ctx, at.Add(2*time.Minute), nil); err != nil {
			t.Fatal(err)
		}
		st, _ = s.State(ctx)
		if st.LastError != nil || !st.LastGoodPassAt.Equal(at.Add(2*time.Minute).Truncate(time.Microsecond)) || !st.PassFinishedAt.Equal(*st.LastGoodPassAt) {
			t.Fatalf("state after a good pass %+v", st)
		}

		if err := saveOK(ctx, s, reports.KindDay, "1", "2026-11-17", at, 0); err != nil {
			t.Fatal(err)
		}
		missing, err := s.MissingDays(ctx, "1", []string{"2026-11-18", "2026-11-17", "2026-11-16"})
		if err != nil || len(missing) != 2 || missing[0] != "2026-11-18" || missing[1] != "2026-11-16" {
			t.Fatalf("missing %v, %v", missing, err)
		}
		missing, _ = s.MissingDays(ctx, "2", []string{"2026-11-17"})
		if len(missing) != 1 {
			t.Fatalf("another guild's report counted: %v", missing)
		}
	})
}

// TestPublishesGeneration: a write announces its generation on Redis after the commit.
func TestPublishesGeneration(t *testing.T) {
	ctx := context.Background()
	u, err := testutil.RedisURL()
	if err != nil {
		t.Fatal(err)
	}
	rdb, err := sharedrdb.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	sub := rdb.Subscribe(ctx, reports.GenerationChannel)
	defer sub.Close()
	if _, err := sub.ReceiveTimeout(ctx, 2*time.Second); err != nil { // the subscription confirmation
		t.Fatal(err)
	}
	gdb := newPG(t)
	s := New(gdb, rdb, nil)
	if err := saveOK(ctx, s, reports.KindDay, "1", "2026-11-19", at, 0); err != nil {
		t.Fatal(err)
	}
	want := strconv.FormatInt(generation(t, gdb), 10)
	// Other test packages share this Redis and may announce their own generations.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		msg, err := sub.ReceiveTimeout(ctx, time.Until(deadline))
		if err != nil {
			break
		}
		if m, ok := msg.(*redis.Message); ok && m.Payload == want {
			return
		}
	}
	t.Fatalf("generation %s was not announced", want)
}

func TestReport(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		ctx := context.Background()
		s := New(gdb, nil, nil)
		if _, _, found, err := s.Report(ctx, reports.KindDay, "1", "2026-11-18"); err != nil || found {
			t.Fatalf("found %v, err %v before any write", found, err)
		}
		if err := saveOK(ctx, s, reports.KindDay, "1", "2026-11-18", at, 10, channel{"12", "random", 4}, channel{"11", "general", 6}); err != nil {
			t.Fatal(err)
		}
		if err := saveOK(ctx, s, reports.KindMonth, "1", "2026-11", at, 99, channel{"11", "general", 99}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.MarkStale(ctx, reports.KindDay, "1", "2026-11-18", "timeout", "slow"); err != nil {
			t.Fatal(err)
		}
		row, chans, found, err := s.Report(ctx, reports.KindDay, "1", "2026-11-18")
		if err != nil || !found {
			t.Fatalf("found %v, err %v", found, err)
		}
		if row.GuildID != "1" || row.Period != "2026-11-18" || row.TotalMessages != 10 || row.Status != reports.StatusStale ||
			row.ErrorCode == nil || *row.ErrorCode != "timeout" || !row.GeneratedAt.Equal(at.Truncate(time.Microsecond)) {
			t.Fatalf("row %+v", row)
		}
		want := []reports.ChannelRow{
			{GuildID: "1", Period: "2026-11-18", ChannelID: "11", Name: "general", Messages: 6},
			{GuildID: "1", Period: "2026-11-18", ChannelID: "12", Name: "random", Messages: 4},
		}
		if !slices.Equal(chans, want) {
			t.Fatalf("channels %+v, want %+v", chans, want)
		}
		if row, chans, found, err := s.Report(ctx, reports.KindMonth, "1", "2026-11"); err != nil || !found || row.TotalMessages != 99 || len(chans) != 1 {
			t.Fatalf("month: %+v %+v %v %v", row, chans, found, err)
		}
	})
}
