// Command livestorage measures what a day of live counts costs in PostgreSQL: it creates a fresh
// database, applies the reports migrations, fills a day of the live_counts table for -guilds
// servers of -channels channels (one row per channel and hour, plus the server's total row, as if
// every channel had messages every hour: the worst case, since only counts that are not zero are
// stored), and reads pg_total_relation_size (table, primary key, TOAST). It does the same for a
// twin table of 15-minute buckets (what half-hour time zones would need), and for the hourly
// table with ids as bigint instead of text, for comparison. It prints bytes per row (all, and the
// table alone without its key index) and per day, and the size of the 62 days the collector's
// refresh windows reach back at most (this month and the previous one).
//
//	go run ./tools/bench/livestorage [-guilds 1000] [-channels 30]
package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"gorm.io/gorm"

	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/reports"
	"forumstats.local/tools/bench"
)

func main() {
	var f bench.Flags
	f.Define("bench_livestorage")
	guilds := flag.Int("guilds", 1000, "servers")
	channels := flag.Int("channels", 30, "channels per server")
	flag.Parse()
	bench.Exit("livestorage", run(f, *guilds, *channels))
}

// layout is one way of storing a day: the table, how to create it, and its buckets per day.
type layout struct {
	name, table, create string
	buckets             int
	ids                 string // SQL type of the ids: text or bigint
}

var layouts = []layout{
	{name: "hourly (the schema)", table: "live_counts", buckets: 24, ids: "text"},
	{name: "15-minute buckets", table: "live_counts_quarter", buckets: 96, ids: "text",
		create: `CREATE TABLE live_counts_quarter (LIKE live_counts INCLUDING ALL)`},
	{name: "hourly, bigint ids", table: "live_counts_bigint", buckets: 24, ids: "bigint",
		create: `CREATE TABLE live_counts_bigint (guild_id bigint NOT NULL, hour integer NOT NULL CHECK (hour >= 0),
			channel_id bigint NOT NULL, messages integer NOT NULL CHECK (messages >= 0), PRIMARY KEY (guild_id, hour, channel_id))`},
}

func run(f bench.Flags, guilds, channels int) (err error) {
	if err := f.Check(); err != nil {
		return err
	}
	ctx := context.Background()
	var c bench.Cleanups
	defer c.Close()
	dbURL, err := c.CreateDatabase(ctx, f, f.DB)
	if err != nil {
		return err
	}
	gdb, err := db.Open(ctx, dbURL, nil)
	if err != nil {
		return err
	}
	defer db.Close(gdb)
	if _, err := migrate.Up(ctx, gdb, reports.Migrations); err != nil {
		return err
	}
	fmt.Printf("live counts of one day: %d servers × %d channels (+ the server's total row), every count set\n", guilds, channels)
	fmt.Printf("%-22s %10s %12s %10s %10s\n", "layout", "rows", "bytes", "bytes/row", "heap/row")
	for _, l := range layouts {
		rows, size, heap, err := measure(ctx, gdb, l, guilds, channels)
		if err != nil {
			return fmt.Errorf("%s: %w", l.name, err)
		}
		fmt.Printf("%-22s %10d %12d %10.1f %10.1f   (%.1f MiB a day, %.1f GiB in 62 days)\n", l.name, rows, size,
			float64(size)/float64(rows), float64(heap)/float64(rows), float64(size)/(1<<20), float64(size)*62/(1<<30))
	}
	return nil
}

// measure fills one day of l and returns its rows and pg_total_relation_size. Ids are 18 and 19
// digits like today's snowflakes; channel ” is the server's total (0 with bigint ids).
func measure(ctx context.Context, gdb *gorm.DB, l layout, guilds, channels int) (rows, size, heap int64, err error) {
	tx := gdb.WithContext(ctx)
	if l.create != "" {
		if err := tx.Exec(l.create).Error; err != nil {
			return 0, 0, 0, err
		}
	}
	guild, channel, total := "(1100000000000000000 + g::bigint * 4194304000)", "(900000000000000000 + g::bigint * 1000 + c)", "0"
	if l.ids == "text" {
		guild, channel, total = guild+"::text", channel+"::text", "''"
	}
	firstBucket := time.Date(2026, 11, 25, 21, 0, 0, 0, time.UTC).Unix() / int64(24*3600/l.buckets)
	insert := fmt.Sprintf(`INSERT INTO %s (guild_id, hour, channel_id, messages)
		SELECT %s, ? + b, CASE WHEN c = 0 THEN %s ELSE %s END, 1 + (g * 31 + b * 7 + c) %% 200
		FROM generate_series(1, ?) g, generate_series(0, ?) b, generate_series(0, ?) c`, l.table, guild, total, channel)
	if err = tx.Exec(insert, firstBucket, guilds, l.buckets-1, channels).Error; err != nil {
		return 0, 0, 0, err
	}
	if err := tx.Exec("ANALYZE " + l.table).Error; err != nil {
		return 0, 0, 0, err
	}
	var got struct{ Rows, Size, Heap int64 }
	err = tx.Raw(fmt.Sprintf(`SELECT (SELECT count(*) FROM %[1]s) AS rows, pg_total_relation_size('%[1]s') AS size,
		pg_relation_size('%[1]s') AS heap`, l.table)).Scan(&got).Error
	return got.Rows, got.Size, got.Heap, err
}
