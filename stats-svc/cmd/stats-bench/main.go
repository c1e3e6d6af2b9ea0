// Command stats-bench measures stats-svc on a dedicated PostgreSQL database
// filled with 100 servers × 50 channels × 400 days of daily reports (2 M
// channel rows) plus monthly reports:
//
//  1. cold cache: the median of -cold all-servers 31-day range requests,
//     each a different window, so each misses L1 and Redis and is composed
//     from the database, through the real handler over loopback;
//  2. warm cache: requests/s of the real handler against a bare Echo
//     handler writing the same bytes, side by side, same clients.
//
// Usage: go run ./cmd/stats-bench [-pg URL] [-redis URL] [-duration 5s]
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/rdb"
	"forumstats.local/shared/reports"
	"forumstats.local/shared/server"
	"forumstats.local/stats-svc/internal/cache"
	"forumstats.local/stats-svc/internal/httpapi"
	"forumstats.local/stats-svc/internal/query"
	"forumstats.local/stats-svc/internal/report"
	"forumstats.local/stats-svc/internal/store"
)

type options struct {
	pgURL       string
	redisURL    string
	dbName      string
	servers     int
	channels    int
	days        int
	cold        int
	duration    time.Duration
	concurrency int
	keep        bool
	reuse       bool
	cpuProfile  string
}

func main() {
	var o options
	flag.StringVar(&o.pgURL, "pg", envOr("TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"), "administrative PostgreSQL URL (a database is created beside it)")
	flag.StringVar(&o.redisURL, "redis", envOr("TEST_REDIS_URL", "redis://127.0.0.1:6379/0"), `Redis URL for L2 ("" for in-process only)`)
	flag.StringVar(&o.dbName, "db", "stats_bench", "name of the database to (re)create")
	flag.IntVar(&o.servers, "servers", 100, "servers")
	flag.IntVar(&o.channels, "channels", 50, "channels per server")
	flag.IntVar(&o.days, "days", 400, "days of daily reports, ending today")
	flag.IntVar(&o.cold, "cold", 21, "cold requests (median reported)")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "duration of each throughput run")
	flag.IntVar(&o.concurrency, "concurrency", 8, "concurrent keep-alive clients")
	flag.BoolVar(&o.keep, "keep", false, "keep the database afterwards")
	flag.BoolVar(&o.reuse, "reuse", false, "reuse the database of an earlier -keep run of today (implies -keep)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the cold phase to this file")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "stats-bench:", err)
		os.Exit(1)
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func run(o options) error {
	ctx := context.Background()
	admin, err := sql.Open("pgx", o.pgURL)
	if err != nil {
		return err
	}
	defer admin.Close()
	today := query.DateOf(time.Now())
	marker := fmt.Sprintf("stats-bench %d %d %d %s", o.servers, o.channels, o.days, today)
	var comment sql.NullString
	_ = admin.QueryRowContext(ctx, `SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1`, o.dbName).Scan(&comment)
	reuse := o.reuse && comment.String == marker
	if o.reuse {
		o.keep = true
	}
	if !reuse {
		if _, err := admin.ExecContext(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %q WITH (FORCE)`, o.dbName)); err != nil {
			return err
		}
		if _, err := admin.ExecContext(ctx, fmt.Sprintf(`CREATE DATABASE %q`, o.dbName)); err != nil {
			return err
		}
	}
	if !o.keep {
		defer admin.ExecContext(context.Background(), fmt.Sprintf(`DROP DATABASE IF EXISTS %q WITH (FORCE)`, o.dbName)) //nolint:errcheck
	}
	u, err := url.Parse(o.pgURL)
	if err != nil {
		return err
	}
	u.Path = "/" + o.dbName
	gdb, err := db.Open(ctx, u.String(), nil)
	if err != nil {
		return err
	}
	if _, err := migrate.Up(ctx, gdb, reports.Migrations); err != nil {
		return err
	}

	start := time.Now()
	if !reuse {
		if err := load(ctx, gdb, o, today); err != nil {
			return fmt.Errorf("load: %w", err)
		}
		if _, err := admin.ExecContext(ctx, fmt.Sprintf(`COMMENT ON DATABASE %q IS '%s'`, o.dbName, marker)); err != nil {
			return err
		}
	}
	var rows int64
	gdb.Raw("SELECT count(*) FROM daily_channel_counts").Scan(&rows)
	how := fmt.Sprintf("loaded in %v", time.Since(start).Round(time.Millisecond))
	if reuse {
		how = "reused from an earlier run"
	}
	fmt.Printf("data: %d servers × %d channels × %d days = %d daily channel rows, plus monthly reports; %s\n",
		o.servers, o.channels, o.days, rows, how)

	from, to := today.AddDays(-30).String(), today.String()
	if err := explain(gdb, from, today.AddDays(-15).String()); err != nil {
		return err
	}

	var redisClient *redis.Client
	if o.redisURL != "" {
		if redisClient, err = rdb.Open(ctx, o.redisURL); err != nil {
			return err
		}
		defer redisClient.Close()
	}
	prefix := fmt.Sprintf("bench:%d:%d:", os.Getpid(), time.Now().UnixNano())
	defer cleanRedis(redisClient, prefix)

	log := slog.New(slog.NewJSONHandler(io.Discard, nil)) // logs formatted, not printed
	st := store.New(gdb, report.Links{CDN: "https://cdn.discordapp.com"})
	c := cache.New(st, redisClient, cache.Options{KeyPrefix: prefix, Logger: log})
	if err := c.Refresh(ctx); err != nil {
		return err
	}
	watch, stop := context.WithCancel(ctx)
	defer stop()
	go c.Run(watch)
	e := server.New(server.Options{Name: "stats-bench", Logger: log, ErrorHandler: httpapi.ErrorHandler})
	httpapi.Register(e, c, time.Now)
	realURL, closeReal, err := serve(e)
	if err != nil {
		return err
	}
	defer closeReal()

	client := newClient(o.concurrency)

	// 1. Cold: each window is a new key, so L1 and Redis miss and the store composes it.
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	var lat []time.Duration
	var size int
	for i := 0; i < o.cold; i++ {
		end := today.AddDays(-i)
		target := fmt.Sprintf("%s/api/chat-statistics?period=range&from=%s&to=%s", realURL, end.AddDays(-30), end)
		t0 := time.Now()
		n, err := get(client, target)
		if err != nil {
			return err
		}
		lat = append(lat, time.Since(t0))
		size = n
	}
	pprof.StopCPUProfile()
	sorted := append([]time.Duration(nil), lat...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	fmt.Printf("cold cache, all servers, 31-day range (%d requests, %d-byte answer): median %v, p90 %v, min %v, max %v, first %v\n",
		len(lat), size, ms(sorted[len(sorted)/2]), ms(sorted[len(sorted)*9/10]), ms(sorted[0]), ms(sorted[len(sorted)-1]), ms(lat[0]))

	// 2. Warm: the real handler against a bare Echo handler writing the same bytes.
	for _, target := range []string{
		"/api/chat-statistics?period=range&from=" + from + "&to=" + to,
		"/api/chat-statistics?period=day&server=1",
	} {
		body, err := fetch(client, realURL+target)
		if err != nil {
			return err
		}
		bare := echo.New()
		bare.HideBanner, bare.HidePort = true, true
		path, _, _ := strings.Cut(target, "?")
		bare.GET(path, func(c echo.Context) error { return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, body) })
		bareURL, closeBare, err := serve(bare)
		if err != nil {
			return err
		}
		// Warm both, then alternate 1 s slices of each for the duration, so
		// that a burst of load from elsewhere on the machine hits both alike.
		if _, err := throughput(client, bareURL+target, o.concurrency, 300*time.Millisecond); err != nil {
			return err
		}
		if _, err := throughput(client, realURL+target, o.concurrency, 300*time.Millisecond); err != nil {
			return err
		}
		var bareN, realN float64
		slices := max(1, int(o.duration/time.Second))
		for i := 0; i < slices; i++ {
			n, err := throughput(client, bareURL+target, o.concurrency, o.duration/time.Duration(slices))
			if err != nil {
				return err
			}
			bareN += n
			if n, err = throughput(client, realURL+target, o.concurrency, o.duration/time.Duration(slices)); err != nil {
				return err
			}
			realN += n
		}
		bareRPS, realRPS := bareN/float64(slices), realN/float64(slices)
		closeBare()
		fmt.Printf("warm cache %s (%d bytes, %d clients, %v each in %d alternating slices): stats-svc %.0f req/s, bare Echo %.0f req/s, ratio %.0f%%\n",
			target, len(body), o.concurrency, o.duration, slices, realRPS, bareRPS, 100*realRPS/bareRPS)
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000) }

// load fills the database in SQL (generate_series), never row by row from Go.
// Counts are deterministic: messages(g, c, d) = (g*31 + c*17 + d*7) % 100.
func load(ctx context.Context, gdb *gorm.DB, o options, today query.Date) error {
	first := today.AddDays(-(o.days - 1))
	firstMonth := query.Month{Year: first.Year, Month: first.Month}
	months := 0
	for m := firstMonth; !query.MonthOf(time.Now()).AddMonths(1).Start().Equal(m.Start()); m = m.AddMonths(1) {
		months++
	}
	conn := gdb.WithContext(ctx)
	// Bulk loading is far faster without per-row index and foreign key upkeep:
	// take the big tables' keys and indexes off (their definitions read back
	// from the catalog, so they stay exactly the migrations'), load, put them back.
	var restore []string
	for _, table := range []string{"daily_channel_counts", "monthly_channel_counts"} {
		var defs []struct{ Name, Def string }
		err := conn.Raw(`SELECT conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint
			WHERE conrelid = ?::regclass ORDER BY contype DESC`, table).Scan(&defs).Error // p(rimary) before f(oreign)
		if err != nil {
			return err
		}
		var indexes []string
		err = conn.Raw(`SELECT indexdef FROM pg_indexes WHERE tablename = ? AND indexname NOT IN
			(SELECT conname FROM pg_constraint WHERE conrelid = ?::regclass)`, table, table).Scan(&indexes).Error
		if err != nil {
			return err
		}
		for i := len(defs) - 1; i >= 0; i-- {
			if err := conn.Exec(fmt.Sprintf(`ALTER TABLE %s DROP CONSTRAINT %q`, table, defs[i].Name)).Error; err != nil {
				return err
			}
		}
		for _, d := range defs {
			restore = append(restore, fmt.Sprintf(`ALTER TABLE %s ADD CONSTRAINT %q %s`, table, d.Name, d.Def))
		}
		for _, ix := range indexes {
			name := strings.Fields(ix)[2] // CREATE INDEX name ON ...
			if err := conn.Exec(fmt.Sprintf(`DROP INDEX %q`, name)).Error; err != nil {
				return err
			}
			restore = append(restore, ix)
		}
	}
	stmts := []string{
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
			       LEAST(now(), (DATE '%s' + d + 1)::timestamp AT TIME ZONE 'Europe/Moscow'), 'ok',
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
	stmts = append(stmts, restore...)
	stmts = append(stmts,
		"UPDATE collector_state SET generation = generation + 1, pass_finished_at = now(), last_good_pass_at = now() WHERE id = 1",
		// As autovacuum would: statistics, and the visibility map for index-only scans.
		"VACUUM ANALYZE",
	)
	for _, s := range stmts {
		if err := conn.Exec(s).Error; err != nil {
			return fmt.Errorf("%.60s...: %w", strings.TrimSpace(s), err)
		}
	}
	return nil
}

// explain prints the plan of the heaviest query a request runs: one half of
// the all-servers 31-day channel aggregate (the store runs both halves at once).
func explain(gdb *gorm.DB, from, to string) error {
	var plan []string
	err := gdb.Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("SET LOCAL work_mem = '64MB'").Error; err != nil {
			return err
		}
		return tx.Raw(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) SELECT guild_id, channel_id, MAX((day || name) COLLATE "C"),
		CAST(SUM(messages) AS BIGINT) FROM daily_channel_counts WHERE day BETWEEN ? AND ?
		GROUP BY guild_id, channel_id`, from, to).Scan(&plan).Error
	})
	if err != nil {
		return err
	}
	fmt.Printf("plan of the channel aggregate for %s..%s, all servers:\n", from, to)
	for _, l := range plan {
		fmt.Println("   ", l)
	}
	return nil
}

func serve(e *echo.Echo) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck
	return "http://" + ln.Addr().String(), func() { srv.Close() }, nil
}

func newClient(conns int) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: conns * 2, MaxIdleConnsPerHost: conns * 2, IdleConnTimeout: time.Minute, DisableCompression: true,
	}}
}

func get(c *http.Client, target string) (int, error) {
	res, err := c.Get(target)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	n, err := io.Copy(io.Discard, res.Body)
	if err == nil && res.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: status %d", target, res.StatusCode)
	}
	return int(n), err
}

func fetch(c *http.Client, target string) ([]byte, error) {
	res, err := c.Get(target)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %d", target, res.StatusCode)
	}
	return io.ReadAll(res.Body)
}

// throughput runs conns keep-alive clients in a loop for d; requests/s.
func throughput(c *http.Client, target string, conns int, d time.Duration) (float64, error) {
	var n atomic.Int64
	var firstErr error
	var once sync.Once
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if _, err := get(c, target); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	if n.Load() == 0 {
		return 0, errors.New("no request completed")
	}
	return float64(n.Load()) / time.Since(start).Seconds(), nil
}

func cleanRedis(c *redis.Client, prefix string) {
	if c == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if len(keys) > 0 {
		c.Del(ctx, keys...)
	}
}
