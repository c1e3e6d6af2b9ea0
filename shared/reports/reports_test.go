package reports_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"forumstats.local/shared/migrate"
	"forumstats.local/shared/reports"
	"forumstats.local/shared/testutil"
)

var pgURL string

func TestMain(m *testing.M) { testutil.Main(m, &pgURL, reports.Migrations) }

func openBoth(t *testing.T) map[string]*gorm.DB {
	t.Helper()
	ctx := context.Background()
	pg := testutil.OpenDB(t, pgURL)
	lite := testutil.OpenDB(t, "sqlite:"+filepath.Join(t.TempDir(), "r.db"))
	if _, err := migrate.Up(ctx, lite, reports.Migrations); err != nil {
		t.Fatalf("sqlite migrations: %v", err)
	}
	// Applying again is a no-op.
	if applied, err := migrate.Up(ctx, lite, reports.Migrations); err != nil || len(applied) != 0 {
		t.Fatalf("second migrate: applied %v, err %v", applied, err)
	}
	return map[string]*gorm.DB{"postgres": pg, "sqlite": lite}
}

func TestRoundTripAndGeneration(t *testing.T) {
	for name, gdb := range openBoth(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			gen0, err := reports.Generation(ctx, gdb)
			if err != nil {
				t.Fatal(err)
			}
			at := time.Date(2026, 11, 19, 20, 59, 0, 0, time.UTC)
			err = gdb.Transaction(func(tx *gorm.DB) error {
				if err := tx.Create(&reports.CatalogServer{Number: 1, Name: "Alpha", GuildID: "81384788765712384"}).Error; err != nil {
					return err
				}
				if err := tx.Create(&reports.DailyReport{GuildID: "81384788765712384", Day: "2026-11-19", GeneratedAt: at, Status: reports.StatusOK, TotalMessages: 12}).Error; err != nil {
					return err
				}
				if err := tx.Create(&reports.DailyChannelCount{GuildID: "81384788765712384", Day: "2026-11-19", ChannelID: "1", Name: "general", Messages: 12}).Error; err != nil {
					return err
				}
				_, err := reports.BumpGeneration(tx)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			gen1, _ := reports.Generation(ctx, gdb)
			if gen1 != gen0+1 {
				t.Fatalf("generation %d after bump from %d", gen1, gen0)
			}
			if st, err := reports.ReadState(gdb); err != nil || st != (reports.ReaderState{RefreshMinutes: 10, Generation: gen1}) {
				t.Fatalf("ReadState = %+v, %v; want the default 10 minutes and generation %d", st, err, gen1)
			}
			// A database without the state row is an error, not a zero state.
			errRollback := errors.New("rollback")
			err = gdb.Transaction(func(tx *gorm.DB) error {
				if err := tx.Exec("DELETE FROM collector_state").Error; err != nil {
					return err
				}
				if _, err := reports.ReadState(tx); err == nil || !strings.Contains(err.Error(), "no row") {
					t.Errorf("ReadState without the row: %v", err)
				}
				return errRollback
			})
			if !errors.Is(err, errRollback) {
				t.Fatal(err)
			}
			var got reports.DailyReport
			if err := gdb.First(&got, "guild_id = ? AND day = ?", "81384788765712384", "2026-11-19").Error; err != nil {
				t.Fatal(err)
			}
			if !got.GeneratedAt.Equal(at) || got.TotalMessages != 12 {
				t.Fatalf("read back %+v", got)
			}
			// A channel count without its report violates the foreign key.
			bad := gdb.Create(&reports.DailyChannelCount{GuildID: "x", Day: "2026-11-18", ChannelID: "1", Name: "n"}).Error
			if bad == nil {
				t.Fatal("orphan channel count accepted")
			}
		})
	}
}
