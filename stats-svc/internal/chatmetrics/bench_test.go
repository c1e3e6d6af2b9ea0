package chatmetrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"forumstats.local/shared/reports"
	tu "forumstats.local/shared/testutil"
	"forumstats.local/stats-svc/internal/chatmetrics"
)

// BenchmarkRead measures what a re-read costs at scrape time (after the collector wrote) at the
// scale of the README's bound: 1,000 servers of 50 channels, each with today's, yesterday's and
// this month's reports (150,000 channel rows), on PostgreSQL; and the emission of its series.
//
//	go test -run XXX -bench . ./stats-svc/internal/chatmetrics/
func BenchmarkRead(b *testing.B) {
	gdb := tu.OpenDB(b, tu.NewDatabase(b, reports.Migrations))
	tu.Exec(b, gdb,
		`INSERT INTO catalog_servers (number, name, guild_id) SELECT n, 'server ' || n, (100000 + n)::text FROM generate_series(1, 1000) n`,
		`INSERT INTO daily_reports (guild_id, day, generated_at, status, total_messages)
		 SELECT (100000 + n)::text, d, now(), 'ok', 1000 FROM generate_series(1, 1000) n, unnest(ARRAY['2026-11-20', '2026-11-19']) d`,
		`INSERT INTO monthly_reports (guild_id, month, generated_at, status, total_messages)
		 SELECT (100000 + n)::text, '2026-11', now(), 'ok', 30000 FROM generate_series(1, 1000) n`,
		`INSERT INTO daily_channel_counts (guild_id, day, channel_id, name, messages)
		 SELECT (100000 + n)::text, d, (c)::text, 'channel ' || c, 20 FROM generate_series(1, 1000) n, generate_series(1, 50) c, unnest(ARRAY['2026-11-20', '2026-11-19']) d`,
		`INSERT INTO monthly_channel_counts (guild_id, month, channel_id, name, messages)
		 SELECT (100000 + n)::text, '2026-11', (c)::text, 'channel ' || c, 600 FROM generate_series(1, 1000) n, generate_series(1, 50) c`,
		`ANALYZE`,
	)
	src := chatmetrics.NewDB(gdb)
	p := chatmetrics.PeriodsAt(testNow)
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			if _, err := src.Read(context.Background(), p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("collect-cached", func(b *testing.B) {
		c := chatmetrics.New(src, chatmetrics.Options{Now: func() time.Time { return testNow }, TTL: time.Hour})
		ch := make(chan prometheus.Metric, 1024)
		done := make(chan int)
		go func() {
			n := 0
			for range ch {
				n++
			}
			done <- n
		}()
		for b.Loop() {
			c.Collect(ch)
		}
		close(ch)
		b.ReportMetric(float64(<-done)/float64(b.N), "series/op")
	})
}
