package app

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/reports"
)

// collectorEnv are the variables LoadConfig reads beyond the common ones; every case starts
// from all of them unset.
var collectorEnv = []string{"DISCORD_TOKEN", "DISCORD_API_BASE", "CATALOG_FILE", "DISCORD_MAX_RPS", "REFRESH_MINUTES", "REFRESH_INTERVAL",
	"LIVE_FLUSH_INTERVAL", "LIVE_GAP_DELAY", "DISCORD_GATEWAY", "LIVE_SHARD_LOCK_RETRY"}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	good, broken := filepath.Join(dir, "catalog.json"), filepath.Join(dir, "broken.json")
	if err := os.WriteFile(good, []byte(`[{"number": 1, "name": "Alpha", "guildId": "1"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(broken, []byte(`[{"number": 1, "name": "Alpha", "guildId": "x"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  map[string]string
		want Collector // when err is ""
		err  string
	}{
		{"defaults", nil,
			Collector{APIBase: "https://discord.com/api/v10", MaxRPS: 50, RefreshMinutes: 10, Interval: 10 * time.Minute,
				LiveFlushInterval: 5 * time.Second, LiveGapDelay: 2 * time.Minute, Gateway: true, ShardLockRetry: 5 * time.Second}, ""},
		{"all set", map[string]string{"DISCORD_TOKEN": "t", "DISCORD_API_BASE": "http://127.0.0.1:8090/api/v10", "CATALOG_FILE": good,
			"DISCORD_MAX_RPS": "200", "REFRESH_MINUTES": "7", "REFRESH_INTERVAL": "2s",
			"LIVE_FLUSH_INTERVAL": "1s", "LIVE_GAP_DELAY": "30s", "DISCORD_GATEWAY": "on", "LIVE_SHARD_LOCK_RETRY": "3s"},
			Collector{Token: "t", APIBase: "http://127.0.0.1:8090/api/v10", CatalogFile: good, MaxRPS: 200, RefreshMinutes: 7, Interval: 2 * time.Second,
				LiveFlushInterval: time.Second, LiveGapDelay: 30 * time.Second, Gateway: true, ShardLockRetry: 3 * time.Second}, ""},
		{"gateway off", map[string]string{"DISCORD_GATEWAY": "off"},
			Collector{APIBase: "https://discord.com/api/v10", MaxRPS: 50, RefreshMinutes: 10, Interval: 10 * time.Minute,
				LiveFlushInterval: 5 * time.Second, LiveGapDelay: 2 * time.Minute, ShardLockRetry: 5 * time.Second}, ""},
		{"gateway neither on nor off", map[string]string{"DISCORD_GATEWAY": "true"}, Collector{}, `DISCORD_GATEWAY: must be on or off, got "true"`},
		{"gateway in capitals", map[string]string{"DISCORD_GATEWAY": "ON"}, Collector{}, "DISCORD_GATEWAY"},
		{"shard lock retry zero", map[string]string{"LIVE_SHARD_LOCK_RETRY": "0s"}, Collector{}, "LIVE_SHARD_LOCK_RETRY: must be positive"},
		{"interval follows the minutes", map[string]string{"REFRESH_MINUTES": "3"},
			Collector{APIBase: "https://discord.com/api/v10", MaxRPS: 50, RefreshMinutes: 3, Interval: 3 * time.Minute,
				LiveFlushInterval: 5 * time.Second, LiveGapDelay: 2 * time.Minute, Gateway: true, ShardLockRetry: 5 * time.Second}, ""},
		{"api base not http", map[string]string{"DISCORD_API_BASE": "ftp://x"}, Collector{}, `DISCORD_API_BASE: "ftp://x" is not an http(s) URL`},
		{"api base without host", map[string]string{"DISCORD_API_BASE": "http://"}, Collector{}, "DISCORD_API_BASE"},
		{"rate not a number", map[string]string{"DISCORD_MAX_RPS": "fast"}, Collector{}, `DISCORD_MAX_RPS: "fast" is not an integer`},
		{"rate zero", map[string]string{"DISCORD_MAX_RPS": "0"}, Collector{}, "DISCORD_MAX_RPS: must be a positive"},
		{"minutes zero", map[string]string{"REFRESH_MINUTES": "0"}, Collector{}, "REFRESH_MINUTES: must be a positive number of minutes, got 0"},
		{"interval negative", map[string]string{"REFRESH_INTERVAL": "-1s"}, Collector{}, "REFRESH_INTERVAL: must be positive, got -1s"},
		{"live flush interval zero", map[string]string{"LIVE_FLUSH_INTERVAL": "0s"}, Collector{}, "LIVE_FLUSH_INTERVAL: must be positive, got 0s"},
		{"live flush interval not a duration", map[string]string{"LIVE_FLUSH_INTERVAL": "5"}, Collector{}, "LIVE_FLUSH_INTERVAL"},
		{"live gap delay zero", map[string]string{"LIVE_GAP_DELAY": "0s"}, Collector{}, "LIVE_GAP_DELAY: must be positive, got 0s"},
		{"live gap delay not a duration", map[string]string{"LIVE_GAP_DELAY": "2"}, Collector{}, "LIVE_GAP_DELAY"},
		{"catalog broken", map[string]string{"CATALOG_FILE": broken}, Collector{}, "CATALOG_FILE: "},
		{"catalog absent", map[string]string{"CATALOG_FILE": filepath.Join(dir, "none.json")}, Collector{}, "CATALOG_FILE: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range collectorEnv {
				t.Setenv(k, tt.env[k])
			}
			cfg, err := LoadConfig()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want one containing %q", err, tt.err)
				}
				// import and export do not read the collector's variables.
				if _, err := LoadCommonConfig(); err != nil {
					t.Fatalf("LoadCommonConfig: %v", err)
				}
				return
			}
			if err != nil || cfg.Collector != tt.want {
				t.Fatalf("config %+v, err %v; want %+v", cfg.Collector, err, tt.want)
			}
		})
	}
}

const exchangeFile = `{
  "refreshMinutes": 15,
  "catalog": [{"number": 1, "name": "Alpha", "guildId": "81384788765712384"}],
  "guilds": [{"guildId": "81384788765712384", "icon": "a_1f2e", "banner": null, "metadataAt": "2026-11-20T10:00:00Z"}],
  "daily": [{"guildId": "81384788765712384", "date": "2026-11-19", "generatedAt": "2026-11-19T20:59:00Z", "status": "ok",
             "error": null, "totalMessages": 3, "channels": [{"id": "5", "name": "general", "messages": 3}]}],
  "monthly": [{"guildId": "81384788765712384", "month": "2026-11", "generatedAt": "2026-11-19T20:59:00Z", "status": "stale",
               "error": {"code": "timeout", "message": "slow"}, "totalMessages": 9, "channels": []}]
}`

// sqliteConfig is a configuration over a SQLite reports database not created yet, in a
// directory of its own; it returns the directory and the database's file too.
func sqliteConfig(t *testing.T) (cfg Config, dir, dbFile string) {
	dir = t.TempDir()
	dbFile = filepath.Join(dir, "stats.db")
	cfg.DatabaseURL, cfg.MigrateOnStart = "sqlite:"+dbFile, true
	return cfg, dir, dbFile
}

// writeFile writes text to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestImportRefused: a file the import refuses writes nothing and does not even create the
// database: one with a bad entry, named; a pipe, before anything is read, since the import reads
// its file twice (validated, then written).
func TestImportRefused(t *testing.T) {
	for _, tt := range []struct {
		name string
		file func(t *testing.T, dir string) string
		want []string
	}{
		{"bad entry", func(t *testing.T, dir string) string {
			return writeFile(t, dir, "bad.json", strings.Replace(exchangeFile, `"messages": 3`, `"messages": -3`, 1))
		}, []string{"daily[0].channels[0].messages: must be >= 0 (nothing was written)"}},
		{"pipe", func(t *testing.T, dir string) string {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			go func() {
				_, _ = w.WriteString(exchangeFile)
				w.Close()
			}()
			return fmt.Sprintf("/dev/fd/%d", r.Fd())
		}, []string{": the file is read twice (validated, then written), and this one cannot be", "(nothing was written)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, dir, dbFile := sqliteConfig(t)
			file := tt.file(t, dir)
			_, err := Import(context.Background(), cfg, nil, file)
			for _, want := range tt.want {
				if err == nil || !strings.Contains(err.Error(), "import "+file) || !strings.Contains(err.Error(), want) {
					t.Fatalf("import: %v, want an error naming %s and saying %q", err, file, want)
				}
			}
			if _, err := os.Stat(dbFile); !os.IsNotExist(err) {
				t.Fatalf("a refused import opened the database: %v", err)
			}
		})
	}
}

// TestImportExport: import then export to standard output on SQLite; standard input redirected
// from a file (/dev/stdin < F, here a descriptor of F) is imported as F is.
func TestImportExport(t *testing.T) {
	ctx := context.Background()
	cfg, dir, _ := sqliteConfig(t)
	good := writeFile(t, dir, "good.json", exchangeFile)
	st, err := Import(ctx, cfg, nil, good)
	if err != nil || !st.CatalogReplaced || st.Catalog != 1 || st.Guilds != 1 || st.Daily != 1 || st.Monthly != 1 {
		t.Fatalf("import: %+v, %v", st, err)
	}
	f, err := os.Open(good)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if again, err := Import(ctx, cfg, nil, fmt.Sprintf("/dev/fd/%d", f.Fd())); err != nil || again != st {
		t.Fatalf("import through a descriptor of the file: %+v, %v; want %+v", again, err, st)
	}
	var out bytes.Buffer
	est, err := Export(ctx, cfg, nil, "-", &out)
	if err != nil || est != (ExportStats{Servers: 1, Guilds: 1, Daily: 1, Monthly: 1}) {
		t.Fatalf("export: %+v, %v", est, err)
	}
	for _, want := range []string{`"refreshMinutes": 15`, `"date": "2026-11-19"`, `"code": "timeout"`, `"name": "general"`} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("export lacks %s:\n%s", want, out.String())
		}
	}
	file := filepath.Join(dir, "export.json")
	if _, err := Export(ctx, cfg, nil, file, nil); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(file); err != nil || !bytes.Equal(data, out.Bytes()) {
		t.Fatalf("the exported file differs from standard output (%v)", err)
	}
}

// TestNewWithDB: New over a database the test opened serves the probes from it, answers any
// other path in the error envelope, and Close leaves that database open.
func TestNewWithDB(t *testing.T) {
	ctx := context.Background()
	gdb, err := migrate.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "stats.db"), nil, true, reports.Migrations)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(gdb)
	cfg := Config{Collector: Collector{APIBase: "http://127.0.0.1:1/api/v10", MaxRPS: 50, RefreshMinutes: 10, Interval: time.Minute}}
	never := filepath.Join(t.TempDir(), "never-opened.db")
	cfg.DatabaseURL = "sqlite:" + never
	a, err := New(ctx, cfg, nil, WithDB(gdb))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		target string
		status int
		body   string
	}{
		{"/readyz", 200, `"database":"ok"`},
		{"/nowhere", 404, `{"error":"not_found"}`},
	} {
		rec := httptest.NewRecorder()
		a.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.target, nil))
		if rec.Code != tt.status || !strings.Contains(rec.Body.String(), tt.body) {
			t.Errorf("%s: %d %s, want %d %s", tt.target, rec.Code, rec.Body, tt.status, tt.body)
		}
	}
	a.Close()
	if err := db.Ping(gdb)(ctx); err != nil {
		t.Fatalf("Close closed the database the test opened: %v", err)
	}
	if _, err := os.Stat(never); !os.IsNotExist(err) {
		t.Fatalf("New opened DATABASE_URL beside WithDB: %v", err)
	}
}

// TestDemoImport: the demo reports go through the import into the database, every one of them,
// and the reports file written instead is the one the import reads.
func TestDemoImport(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := Config{}
	cfg.DatabaseURL, cfg.MigrateOnStart = "sqlite:"+filepath.Join(dir, "stats.db"), true
	o := DemoOptions{Now: time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC), Days: 30, CatalogFile: "../../../deploy/compose/catalog.json"}
	st, err := Demo(ctx, cfg, nil, o, nil)
	// 30 days of 3 servers but the missing one; 2026-10 and 2026-11 of each.
	if err != nil || !st.CatalogReplaced || st.Catalog != 3 || st.Guilds != 3 || st.Daily != 89 || st.Monthly != 6 {
		t.Fatalf("demo import: %+v, %v", st, err)
	}
	var out bytes.Buffer
	o.Out = "-"
	if _, err := Demo(ctx, Config{}, nil, o, &out); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "demo.json")
	if err := os.WriteFile(file, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.DatabaseURL = "sqlite:" + filepath.Join(dir, "again.db")
	if again, err := Import(ctx, cfg, nil, file); err != nil || again != st {
		t.Fatalf("the written file imports %+v, %v; the demo imported %+v", again, err, st)
	}
}
