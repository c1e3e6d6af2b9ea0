package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	"gorm.io/gorm"

	"forumstats.local/shared/config"
	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/ratelimit"
	"forumstats.local/shared/reports"
	"forumstats.local/shared/testutil"
)

func TestLoadConfig(t *testing.T) {
	t.Setenv("CDN_BASE_URL", "")
	t.Setenv("DATABASE_URL", "")
	t.Setenv("HTTP_ADDR", "")
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CDN != DefaultCDN || cfg.DatabaseURL != DefaultDatabaseURL || cfg.HTTPAddr != DefaultAddr {
		t.Fatalf("defaults: %+v", cfg)
	}
	t.Setenv("CDN_BASE_URL", "ftp://cdn.example")
	if _, err := LoadConfig(); err == nil || !strings.Contains(err.Error(), "CDN_BASE_URL") {
		t.Fatalf("bad CDN accepted: %v", err)
	}
}

// The rate limit and the bound on cold reads: defaults, settings, refusals.
func TestLoadConfigLimits(t *testing.T) {
	for _, tt := range []struct {
		name                   string
		perMinute, burst, cold string
		wait                   string
		want                   ratelimit.Config
		wantCold               int
		wantWait               time.Duration
		err                    string
	}{
		{name: "defaults", want: ratelimit.Config{PerMinute: 600, Burst: 100}, wantWait: time.Second},
		{name: "rate sets the burst", perMinute: "60", want: ratelimit.Config{PerMinute: 60, Burst: 10}, wantWait: time.Second},
		{name: "tiny rate", perMinute: "1", want: ratelimit.Config{PerMinute: 1, Burst: 1}, wantWait: time.Second},
		{name: "both", perMinute: "1200", burst: "5", cold: "3", wait: "250ms", want: ratelimit.Config{PerMinute: 1200, Burst: 5}, wantCold: 3, wantWait: 250 * time.Millisecond},
		{name: "zero rate", perMinute: "0", err: "RATE_LIMIT_PER_MINUTE"},
		{name: "zero burst", burst: "0", err: "RATE_LIMIT_BURST"},
		{name: "rate not a number", perMinute: "lots", err: "RATE_LIMIT_PER_MINUTE"},
		{name: "negative bound", cold: "-1", err: "COLD_QUERY_LIMIT"},
		{name: "zero wait", wait: "0s", err: "COLD_QUERY_WAIT"},
		{name: "wait too long", wait: "2m", err: "COLD_QUERY_WAIT"},
		{name: "wait not a duration", wait: "1", err: "COLD_QUERY_WAIT"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("RATE_LIMIT_PER_MINUTE", tt.perMinute)
			t.Setenv("RATE_LIMIT_BURST", tt.burst)
			t.Setenv("COLD_QUERY_LIMIT", tt.cold)
			t.Setenv("COLD_QUERY_WAIT", tt.wait)
			cfg, err := LoadConfig()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one naming %s", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.RateLimit != tt.want || cfg.ColdLimit != tt.wantCold || cfg.ColdWait != tt.wantWait {
				t.Fatalf("got %+v, %d, %v", cfg.RateLimit, cfg.ColdLimit, cfg.ColdWait)
			}
		})
	}
}

// CACHE_MAX_TTL: ten minutes by default, 1s to 1h.
func TestLoadConfigCacheMaxTTL(t *testing.T) {
	for _, tt := range []struct {
		env  string
		want time.Duration
		err  bool
	}{
		{"", 10 * time.Minute, false},
		{"2s", 2 * time.Second, false},
		{"0s", 0, true},
		{"2h", 0, true},
	} {
		t.Setenv("CACHE_MAX_TTL", tt.env)
		cfg, err := LoadConfig()
		if tt.err != (err != nil) || (err != nil && !strings.Contains(err.Error(), "CACHE_MAX_TTL")) || cfg.CacheMaxTTL != tt.want {
			t.Errorf("%q: %v %v, want %v (error: %v)", tt.env, cfg.CacheMaxTTL, err, tt.want, tt.err)
		}
	}
}

// DATABASE_READ_TIMEOUT: ten seconds by default, 100ms to 5m.
func TestLoadConfigDatabaseReadTimeout(t *testing.T) {
	for _, tt := range []struct {
		env  string
		want time.Duration
		err  bool
	}{
		{"", 10 * time.Second, false},
		{"500ms", 500 * time.Millisecond, false},
		{"10ms", 0, true},
		{"6m", 0, true},
		{"ten", 0, true},
	} {
		t.Setenv("DATABASE_READ_TIMEOUT", tt.env)
		cfg, err := LoadConfig()
		if tt.err != (err != nil) || (err != nil && !strings.Contains(err.Error(), "DATABASE_READ_TIMEOUT")) || cfg.DatabaseReadTimeout != tt.want {
			t.Errorf("%q: %v %v, want %v (error: %v)", tt.env, cfg.DatabaseReadTimeout, err, tt.want, tt.err)
		}
	}
}

// STALE_IF_ERROR: a day by default, 0 turns it off (the cache's negative), bounded to a week.
func TestLoadConfigStaleIfError(t *testing.T) {
	for _, tt := range []struct {
		env   string
		want  time.Duration
		cache time.Duration
		err   bool
	}{
		{"", 24 * time.Hour, 24 * time.Hour, false},
		{"90s", 90 * time.Second, 90 * time.Second, false},
		{"0s", 0, -1, false},
		{"-1s", 0, 0, true},
		{"200h", 0, 0, true},
		{"soon", 0, 0, true},
	} {
		t.Setenv("STALE_IF_ERROR", tt.env)
		cfg, err := LoadConfig()
		if tt.err {
			if err == nil || !strings.Contains(err.Error(), "STALE_IF_ERROR") {
				t.Errorf("%q: error %v, want one naming STALE_IF_ERROR", tt.env, err)
			}
			continue
		}
		if err != nil || cfg.StaleIfError != tt.want || staleOption(cfg.StaleIfError) != tt.cache {
			t.Errorf("%q: %v %v (cache %v), want %v (cache %v)", tt.env, cfg.StaleIfError, err, staleOption(cfg.StaleIfError), tt.want, tt.cache)
		}
	}
}

// The bound on cold reads defaults to half the database pool, at least 1.
func TestColdLimit(t *testing.T) {
	admin, err := testutil.PostgresURL()
	if err != nil {
		t.Fatal(err)
	}
	pg := testutil.OpenDB(t, admin)
	lite := testutil.OpenDB(t, "sqlite:"+filepath.Join(t.TempDir(), "s.db"))
	for _, tt := range []struct {
		name       string
		configured int
		gdb        *gorm.DB
		want       int
	}{
		{"PostgreSQL pool of 25", 0, pg, 12},
		{"SQLite's one connection", 0, lite, 1},
		{"configured", 7, pg, 7},
	} {
		if got := coldLimit(tt.configured, tt.gdb); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestCDNBase(t *testing.T) {
	for _, tt := range []struct {
		in string
		ok bool
	}{
		{"https://cdn.discordapp.com", true},
		{"http://127.0.0.1:9000/cdn/", true},
		{"ftp://cdn.example", false},
		{"https://", false},
		{"cdn.example", false},
		{"https://cdn.example/?size=1", false},
		{"https://cdn.example/%zz", false},
	} {
		got, err := cdnBase(tt.in)
		if (err == nil) != tt.ok || (tt.ok && got != tt.in) {
			t.Errorf("cdnBase(%q) = %q, %v", tt.in, got, err)
		}
	}
}

func TestCacheKeyPrefix(t *testing.T) {
	base := cacheKeyPrefix("postgres://db/a", DefaultCDN)
	if base != cacheKeyPrefix("postgres://db/a", DefaultCDN) {
		t.Fatal("prefix not stable")
	}
	if !strings.HasPrefix(base, "stats:v1:") || !strings.HasSuffix(base, ":") || len(base) != len("stats:v1:")+12+1 {
		t.Fatalf("prefix %q", base)
	}
	for _, other := range []string{cacheKeyPrefix("postgres://db/b", DefaultCDN), cacheKeyPrefix("postgres://db/a", "https://cdn.test")} {
		if other == base {
			t.Fatalf("deployments share the prefix %q", base)
		}
	}
}

// sqliteConfig is a configuration over a fresh SQLite database, without Redis.
func sqliteConfig(t *testing.T, migrateOnStart bool) Config {
	return Config{
		Common: config.Common{DatabaseURL: "sqlite:" + filepath.Join(t.TempDir(), "stats.db"), MigrateOnStart: migrateOnStart},
		CDN:    DefaultCDN,
	}
}

func get(t *testing.T, s *App, target string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	return rec.Code, rec.Body.String()
}

// TestNewMigratesByTheRule builds the service as serve does: it migrates on open unless
// MIGRATE_ON_START is false, and the migrate command always does.
func TestNewMigratesByTheRule(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	const empty = `{"servers":[],"totalServers":0}`

	migrated := sqliteConfig(t, true)
	notMigrated := sqliteConfig(t, false)
	migratedByCommand := sqliteConfig(t, false)
	if err := Migrate(ctx, migratedByCommand, log); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		cfg    Config
		status int
		body   string
	}{
		{"migrate on start", migrated, http.StatusOK, empty},
		{"no migration", notMigrated, http.StatusInternalServerError, `{"error":"internal_error"}`},
		{"migrate command", migratedByCommand, http.StatusOK, empty},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := New(ctx, tt.cfg, log)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.backend.Redis != nil {
				t.Fatal("Redis without REDIS_URL")
			}
			if code, body := get(t, s, "/api/chat-icons"); code != tt.status || body != tt.body {
				t.Fatalf("icons: %d %s", code, body)
			}
			if code, _ := get(t, s, "/readyz"); code != http.StatusOK {
				t.Fatalf("readyz: %d", code)
			}
		})
	}
}

// TestChatMetricsServed: /metrics carries the chat_* families of the service's database, and a
// database without the schema exports none of them yet still answers 200 (the read error is
// counted, never the whole /metrics failing).
func TestChatMetricsServed(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tt := range []struct {
		name    string
		migrate bool
		want    string
	}{
		{"migrated", true, `chat_server_info{guild_id="81384788765712384",name="Alpha",number="1"} 1`},
		{"not migrated", false, "chat_metrics_read_errors_total"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := sqliteConfig(t, tt.migrate)
			s, err := New(ctx, cfg, log)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if tt.migrate {
				if err := s.backend.DB.Exec("INSERT INTO catalog_servers (number, name, guild_id) VALUES (1, 'Alpha', '81384788765712384')").Error; err != nil {
					t.Fatal(err)
				}
			}
			code, body := get(t, s, "/metrics")
			if code != http.StatusOK || !strings.Contains(body, tt.want) {
				t.Fatalf("/metrics: %d, want %s in\n%s", code, tt.want, body)
			}
			if !tt.migrate && strings.Contains(body, "chat_server_info") {
				t.Fatalf("chat_server_info exported without a schema")
			}
		})
	}
}

// TestReadReplica: with DATABASE_READ_URL the API and /metrics read the replica (two
// PostgreSQL databases whose catalogs differ tell which answered); when the replica goes away
// they answer from the primary, and /readyz stays 200.
func TestReadReplica(t *testing.T) {
	admin, err := testutil.PostgresURL()
	if err != nil {
		t.Fatalf("no PostgreSQL (TEST_POSTGRES_URL, 127.0.0.1:5432 or Docker): %v", err)
	}
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var urls [2]string
	var drops [2]func()
	for i, name := range []string{"Primary", "Replica"} {
		u, drop, err := testutil.CreateDatabase(ctx, admin, fmt.Sprintf("test_stats_app_%s_%d", strings.ToLower(name), os.Getpid()), "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(drop)
		urls[i], drops[i] = u, drop
		gdb := testutil.OpenDB(t, u)
		if _, err := migrate.Up(ctx, gdb, reports.Migrations); err != nil {
			t.Fatal(err)
		}
		if err := gdb.Exec("INSERT INTO catalog_servers (number, name, guild_id) VALUES (1, ?, '81384788765712384')", name).Error; err != nil {
			t.Fatal(err)
		}
		db.Close(gdb)
	}
	cfg := Config{Common: config.Common{DatabaseURL: urls[0], MigrateOnStart: true}, CDN: DefaultCDN, DatabaseReadURL: urls[1]}
	s, err := New(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	expect := func(target, want string) {
		t.Helper()
		if code, body := get(t, s, target); code != http.StatusOK || !strings.Contains(body, want) {
			t.Fatalf("%s: %d %s; want %s", target, code, body, want)
		}
	}
	expect("/api/chat-icons", `"name":"Replica"`)
	expect("/metrics", `chat_server_info{guild_id="81384788765712384",name="Replica",number="1"} 1`)

	drops[1]() // the replica goes away
	expect("/api/chat-icons?server=1", `"name":"Primary"`)
	expect("/readyz", "")
	if code, _ := get(t, s, "/readyz"); code != http.StatusOK {
		t.Fatalf("readyz with the replica down: %d", code)
	}
	if n := promtestutil.ToFloat64(db.FallbacksCounter("stats-svc")); n < 1 {
		t.Fatalf("db_replica_fallbacks_total %v", n)
	}

	// A replica down from the start (a closed port) does not stop the service starting.
	cfg.DatabaseReadURL = "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"
	s2, err := New(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if code, body := get(t, s2, "/api/chat-icons"); code != http.StatusOK || !strings.Contains(body, `"name":"Primary"`) {
		t.Fatalf("replica down from the start: %d %s", code, body)
	}
}

// TestNewWithDB: New over a database the test opened answers from it and never opens
// DATABASE_URL, and Close leaves that database open.
func TestNewWithDB(t *testing.T) {
	ctx := context.Background()
	gdb, err := migrate.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "stats.db"), nil, true, reports.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(gdb)
	never := filepath.Join(t.TempDir(), "never-opened.db")
	cfg := Config{Common: config.Common{DatabaseURL: "sqlite:" + never, MigrateOnStart: true}, CDN: DefaultCDN}
	a, err := New(ctx, cfg, nil, WithDB(gdb))
	if err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, a, "/api/chat-icons"); code != http.StatusOK || body != `{"servers":[],"totalServers":0}` {
		t.Fatalf("icons: %d %s", code, body)
	}
	a.Close()
	if err := db.Ping(gdb)(ctx); err != nil {
		t.Fatalf("Close closed the database the test opened: %v", err)
	}
	if _, err := os.Stat(never); !os.IsNotExist(err) {
		t.Fatalf("New opened DATABASE_URL beside WithDB: %v", err)
	}
}
