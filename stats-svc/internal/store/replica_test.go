package store_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/reports"
	"forumstats.local/shared/testutil"
	"forumstats.local/stats-svc/internal/answers"
	"forumstats.local/stats-svc/internal/query"
	"forumstats.local/stats-svc/internal/store"
)

// TestStatisticsOnReplica: with a replica, a long all-servers range (aggregated in two halves on
// two connections sharing one snapshot) is read entirely on the replica: both halves' channel
// counts are the replica's (10 a day) and not the primary's (1 a day). When the replica goes
// away, the same query is answered by the primary.
func TestStatisticsOnReplica(t *testing.T) {
	admin, err := testutil.PostgresURL()
	if err != nil {
		t.Fatalf("no PostgreSQL (TEST_POSTGRES_URL, 127.0.0.1:5432 or Docker): %v", err)
	}
	ctx := context.Background()
	const guild = "81384788765712384"
	from, _ := reports.ParseDay("2026-11-01")
	to := from.AddDays(13) // 14 days: split in two halves
	var dbs [2]*gorm.DB
	var dropReplica func()
	for i, perDay := range []int64{1, 10} {
		u, drop, err := testutil.CreateDatabase(ctx, admin, fmt.Sprintf("test_stats_store_replica_%d_%d", i, os.Getpid()), "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(drop)
		dropReplica = drop
		gdb := testutil.OpenDB(t, u)
		if _, err := migrate.Up(ctx, gdb, reports.Migrations); err != nil {
			t.Fatal(err)
		}
		err = gdb.Transaction(func(tx *gorm.DB) error {
			if err := tx.Create(&reports.CatalogServer{Number: 1, Name: "Alpha", GuildID: guild}).Error; err != nil {
				return err
			}
			for d := from; !to.Before(d); d = d.AddDays(1) {
				if err := tx.Create(&reports.DailyReport{GuildID: guild, Day: d.String(), GeneratedAt: d.End(), Status: "ok", TotalMessages: perDay}).Error; err != nil {
					return err
				}
				if err := tx.Create(&reports.DailyChannelCount{GuildID: guild, Day: d.String(), ChannelID: "10", Name: "general", Messages: perDay}).Error; err != nil {
					return err
				}
			}
			_, err := reports.BumpGeneration(tx)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		dbs[i] = gdb
	}
	reads, err := db.NewReads(dbs[0], dbs[1], db.ReadsOptions{Service: "stats-store-test"})
	if err != nil {
		t.Fatal(err)
	}
	st := store.New(dbs[0], answers.Links{CDN: "https://cdn.test"})
	st.RouteReads(reads)
	q := query.Query{Mode: query.ModeRange, From: from, To: to}
	now := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	answer := func() string {
		t.Helper()
		a, err := st.Statistics(ctx, q, now)
		if err != nil {
			t.Fatal(err)
		}
		return string(a.Body)
	}
	if body := answer(); !strings.Contains(body, `"messages":140`) || strings.Contains(body, `"messages":14,`) {
		t.Fatalf("on the replica (both halves 14 × 10, not 77 from a half on the primary): %s", body)
	}
	dropReplica()
	if body := answer(); strings.Contains(body, `"messages":140`) || !strings.Contains(body, `"messages":14`) {
		t.Fatalf("replica gone: %s", body)
	}
}
