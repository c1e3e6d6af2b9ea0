package main

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"forumstats.local/shared/reports"
	"forumstats.local/tools/bench"
	"forumstats.local/tools/stack"
)

// benchEnv is stats-svc serving a filled database.
type benchEnv struct {
	svc    *stack.Service
	dbURL  string           // the bench database, where the dashboard's loads bump the generation
	others []*stack.Service // the -compare builds, on the same database
	redis  bool
	today  reports.Day // the last day of the data
	rows   int64       // daily channel rows
	live   int64       // live_counts rows
	loaded time.Duration
	bench.Cleanups
}

// setup builds stats-svc, creates the database, migrates it with `stats-svc migrate`, fills it
// with plain SQL and starts `stats-svc serve` on it.
func setup(ctx context.Context, o options) (_ *benchEnv, err error) {
	e := &benchEnv{today: reports.DayOf(time.Now()), redis: o.redis}
	defer e.CloseOnError(&err)
	bin, dbURL, env, err := e.Prepare(ctx, stack.Stats, o.Flags)
	if err != nil {
		return nil, err
	}
	e.dbURL = dbURL
	start := time.Now()
	if e.rows, e.live, err = fill(ctx, dbURL, o, e.today); err != nil {
		return nil, fmt.Errorf("fill: %w", err)
	}
	e.loaded = time.Since(start)

	redisURL := func(int) string { return "" }
	if o.redis {
		// A private server: the service's cache keys depend only on the database URL and the
		// data generation, which repeat from one run to the next, so a shared Redis would serve
		// the cold requests from an earlier run. A -compare build has a database of its own in
		// it: the builds' keys are the same.
		rs, err := stack.NewRedis(ctx)
		if err != nil {
			return nil, err
		}
		e.Add(rs.Close)
		redisURL = func(i int) string { return strings.TrimSuffix(rs.URL(), "/0") + "/" + strconv.Itoa(i) }
	}
	// Request logs (Info) are off, as a log shipper would take them off the service's hands;
	// writing them into the bench's pipe would measure the bench's reading. The per-client rate
	// limit is lifted: every request of the bench comes from one address, and it measures serving.
	env = append(env, "RATE_LIMIT_PER_MINUTE=100000000", "RATE_LIMIT_BURST=1000000")
	e.svc, err = e.StartService(stack.Stats, bin, append(env, "LOG_LEVEL=warn", "REDIS_URL="+redisURL(0)))
	if err != nil {
		return nil, err
	}
	for i, path := range o.compare {
		// Another build serves the schema as this one migrated it.
		svc, err := e.StartService(path, path, append(env, "LOG_LEVEL=warn", "REDIS_URL="+redisURL(i+1), "MIGRATE_ON_START=false"))
		if err != nil {
			return nil, err
		}
		e.others = append(e.others, svc)
	}
	return e, nil
}

// fill loads the data in SQL (generate_series), never row by row from Go, and returns the number
// of daily channel rows and of live_counts rows. Counts are deterministic: messages(g, c, d) =
// (g*31 + c*17 + d*7) % 100, and the same of the hour for live counts.
func fill(ctx context.Context, dbURL string, o options, today reports.Day) (rows, live int64, err error) {
	pool, err := sql.Open("pgx", dbURL)
	if err != nil {
		return 0, 0, err
	}
	defer pool.Close()
	// One session: the SET statements below hold for the whole load.
	conn, err := pool.Conn(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	restore, err := dropKeys(ctx, conn, "daily_channel_counts", "monthly_channel_counts", "live_counts")
	if err != nil {
		return 0, 0, err
	}
	stmts := liveStatements(o, today)
	if !o.activityOnly {
		stmts = append(fillStatements(o, today), stmts...)
	} else {
		stmts = append(fillStatements(o, today)[:4], stmts...) // the catalog and the guilds
	}
	stmts = append(stmts, restore...)
	stmts = append(stmts,
		"UPDATE collector_state SET generation = generation + 1, pass_finished_at = now(), last_good_pass_at = now() WHERE id = 1",
		// As autovacuum would: statistics, and the visibility map for index-only scans.
		"VACUUM ANALYZE",
	)
	for _, s := range stmts {
		var args []any
		if strings.Contains(s, "$1") {
			args = append(args, reports.Timezone)
		}
		if _, err := conn.ExecContext(ctx, s, args...); err != nil {
			return 0, 0, fmt.Errorf("%.60s...: %w", strings.TrimSpace(s), err)
		}
	}
	if err = conn.QueryRowContext(ctx, "SELECT count(*) FROM daily_channel_counts").Scan(&rows); err != nil {
		return 0, 0, err
	}
	err = conn.QueryRowContext(ctx, "SELECT count(*) FROM live_counts").Scan(&live)
	return rows, live, err
}

// activityDays is how many days of live counts are loaded, ending tomorrow: the cold windows of
// 31 days, each ending a day earlier, and a day on either side for zones behind or ahead of UTC.
func activityDays(o options) int { return activityRange + o.cold + 2 }

// liveStatements write every server's live counting since before the loaded hours, the names of
// its channels, its total and every channel's count in every hour (the worst case: counts of 0 are
// never written) and an unfilled gap of an hour for every tenth server.
func liveStatements(o options, today reports.Day) []string {
	first := reports.LiveHour(today.AddDays(-(activityDays(o) - 2)).Start())
	end := reports.LiveHour(today.AddDays(2).Start())
	since := reports.HourFirstID(first - 24)
	gap := reports.HourFirstID(first + 24*10 + 5)
	return []string{
		fmt.Sprintf(`INSERT INTO live_guilds (guild_id, since_id)
			SELECT (100000000000000000 + g)::text, %d FROM generate_series(1, %d) g`, since, o.servers),
		fmt.Sprintf(`INSERT INTO live_channels (guild_id, channel_id, name, thread, deleted)
			SELECT (100000000000000000 + g)::text, (200000000000000000 + g * 1000 + c)::text, 'channel-' || c, false, false
			FROM generate_series(1, %d) g, generate_series(1, %d) c`, o.servers, o.channels),
		fmt.Sprintf(`INSERT INTO live_gaps (guild_id, min_id, max_id, filled, recorded_at)
			SELECT (100000000000000000 + g)::text, %d, %d, false, now() FROM generate_series(10, %d, 10) g`, gap, gap+(3600000<<22), o.servers),
		fmt.Sprintf(`INSERT INTO live_counts (guild_id, hour, channel_id, messages)
			SELECT (100000000000000000 + g)::text, h,
			       CASE WHEN c = 0 THEN '' ELSE (200000000000000000 + g * 1000 + c)::text END,
			       CASE WHEN c = 0 THEN 50 * %d ELSE (g * 31 + c * 17 + h * 7) %% 100 END
			FROM generate_series(1, %d) g, generate_series(%d, %d) h, generate_series(0, %d) c`,
			o.channels, o.servers, first, end-1, o.channels),
	}
}

// fillStatements write the catalog, the guilds, the daily reports of the o.days days ending today
// and the monthly reports of their months. $1 is the reports' time zone: a finished day's report
// was generated at its end, Moscow midnight.
func fillStatements(o options, today reports.Day) []string {
	first := today.AddDays(-(o.days - 1))
	firstMonth := first.MonthOf()
	months := 0
	for m := firstMonth; m != today.MonthOf().AddMonths(1); m = m.AddMonths(1) {
		months++
	}
	return []string{
		"SET synchronous_commit = off",
		"SET maintenance_work_mem = '256MB'",
		fmt.Sprintf(`INSERT INTO catalog_servers (number, name, guild_id)
			SELECT g, 'Server ' || g, (100000000000000000 + g)::text FROM generate_series(1, %d) g`, o.servers),
		fmt.Sprintf(`INSERT INTO guilds (guild_id, icon, banner, banner_known, metadata_at)
			SELECT (100000000000000000 + g)::text, CASE WHEN g %% 2 = 0 THEN 'a_' ELSE '' END || md5(g::text),
			       CASE WHEN g %% 3 = 0 THEN NULL ELSE md5('b' || g) END, g %% 5 <> 0, now()
			FROM generate_series(1, %d) g`, o.servers),
		fmt.Sprintf(`INSERT INTO daily_reports (guild_id, day, generated_at, status, total_messages)
			SELECT (100000000000000000 + g)::text, to_char(DATE '%s' + d, 'YYYY-MM-DD'),
			       LEAST(now(), (DATE '%s' + d + 1)::timestamp AT TIME ZONE $1::text), 'ok',
			       (SELECT sum((g * 31 + c * 17 + d * 7) %% 100) FROM generate_series(1, %d) c)
			FROM generate_series(1, %d) g, generate_series(0, %d) d`, first, first, o.channels, o.servers, o.days-1),
		fmt.Sprintf(`INSERT INTO daily_channel_counts (guild_id, day, channel_id, name, messages)
			SELECT (100000000000000000 + g)::text, to_char(DATE '%s' + d, 'YYYY-MM-DD'), (200000000000000000 + g * 1000 + c)::text,
			       'channel-' || c, (g * 31 + c * 17 + d * 7) %% 100
			FROM generate_series(1, %d) g, generate_series(0, %d) d, generate_series(1, %d) c`, first, o.servers, o.days-1, o.channels),
		fmt.Sprintf(`INSERT INTO monthly_reports (guild_id, month, generated_at, status, total_messages)
			SELECT (100000000000000000 + g)::text, to_char(DATE '%s' + make_interval(months => m), 'YYYY-MM'), now(), 'ok', g * 1000 + m
			FROM generate_series(1, %d) g, generate_series(0, %d) m`, firstMonth.First(), o.servers, months-1),
		fmt.Sprintf(`INSERT INTO monthly_channel_counts (guild_id, month, channel_id, name, messages)
			SELECT (100000000000000000 + g)::text, to_char(DATE '%s' + make_interval(months => m), 'YYYY-MM'),
			       (200000000000000000 + g * 1000 + c)::text, 'channel-' || c, g + c + m
			FROM generate_series(1, %d) g, generate_series(0, %d) m, generate_series(1, %d) c`, firstMonth.First(), o.servers, months-1, o.channels),
	}
}

// dropKeys takes the tables' keys and indexes off, for bulk loading is far faster without
// per-row index and foreign key upkeep, and returns the statements that put them back. Their
// definitions are read back from the catalog, so they stay exactly the migrations'.
func dropKeys(ctx context.Context, conn *sql.Conn, tables ...string) ([]string, error) {
	var drop, restore []string
	for _, table := range tables {
		// Constraints: p(rimary) before f(oreign), restored in this order, dropped in the reverse.
		cons, err := queryPairs(ctx, conn, `SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
			WHERE conrelid = $1::regclass ORDER BY contype DESC`, table)
		if err != nil {
			return nil, err
		}
		for i := range cons {
			c := cons[len(cons)-1-i]
			drop = append(drop, fmt.Sprintf(`ALTER TABLE %s DROP CONSTRAINT %q`, table, c[0]))
			restore = append(restore, fmt.Sprintf(`ALTER TABLE %s ADD CONSTRAINT %q %s`, table, cons[i][0], cons[i][1]))
		}
		indexes, err := queryPairs(ctx, conn, `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = $1 AND indexname NOT IN
			(SELECT conname FROM pg_constraint WHERE conrelid = $2::regclass)`, table, table)
		if err != nil {
			return nil, err
		}
		for _, ix := range indexes {
			drop = append(drop, fmt.Sprintf(`DROP INDEX %q`, ix[0]))
			restore = append(restore, ix[1])
		}
	}
	for _, s := range drop {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return nil, fmt.Errorf("%s: %w", s, err)
		}
	}
	return restore, nil
}

// queryPairs returns the rows of a query of two text columns.
func queryPairs(ctx context.Context, conn *sql.Conn, query string, args ...any) ([][2]string, error) {
	rows, err := conn.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var p [2]string
		if err := rows.Scan(&p[0], &p[1]); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}
