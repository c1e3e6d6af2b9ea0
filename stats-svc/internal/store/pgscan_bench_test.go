package store

import (
	"context"
	"fmt"
	"testing"

	"forumstats.local/shared/reports"
	tu "forumstats.local/shared/testutil"
	"forumstats.local/stats-svc/internal/answers"
)

// BenchmarkScanReports measures what reading the 36,600 report rows of a 366-day all-servers
// series costs: through database/sql (as on SQLite) and decoded raw (pgscan.go), both into a
// slice sized before the scan, in one read transaction each, on PostgreSQL.
//
//	go test -run XXX -bench ScanReports -benchmem ./stats-svc/internal/store/
func BenchmarkScanReports(b *testing.B) {
	gdb := tu.OpenDB(b, tu.NewDatabase(b, reports.Migrations))
	// 100 catalog servers, each with a daily report for each of the 366 days.
	tu.Exec(b, gdb,
		`INSERT INTO catalog_servers (number, name, guild_id)
		 SELECT n, 'server ' || n, (100000000000000000 + n)::text FROM generate_series(1, 100) n`,
		`INSERT INTO daily_reports (guild_id, day, generated_at, status, total_messages)
		 SELECT guild_id, to_char(DATE '2025-11-24' + d, 'YYYY-MM-DD'), now(), 'ok', number * d
		 FROM catalog_servers, generate_series(0, 365) d`,
	)
	s := New(gdb, answers.Links{})
	query := reportsSQL(reports.KindDay, "BETWEEN ? AND ?")
	for _, c := range []struct {
		name string
		raw  bool
	}{{"database-sql", false}, {"pgx-raw", true}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				err := s.read(context.Background(), func(v view) error {
					if !c.raw {
						v.conn = nil
					}
					rows, err := v.reports(36600, query, "2025-11-24", "2026-11-24")
					if err == nil && len(rows) != 36600 {
						err = fmt.Errorf("%d rows, want 36,600", len(rows))
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
