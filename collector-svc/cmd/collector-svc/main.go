// Command collector-svc collects message statistics from Discord into the reports database
// that stats-svc serves.
//
//	collector-svc [serve]                 collect every REFRESH_MINUTES while holding the writer
//	                                      lock (else wait as standby); /healthz, /readyz, /metrics
//	collector-svc run-once                one pass, then exit (non-zero when it failed)
//	collector-svc import --file F         load a reports file (one transaction; nothing on error)
//	collector-svc export --file F         write the reports file ("-": standard output)
//	collector-svc fake-discord --addr A   serve a fake Discord API with synthetic servers
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/collector-svc/internal/collect"
	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/collector-svc/internal/fakediscord"
	"forumstats.local/collector-svc/internal/lock"
	"forumstats.local/collector-svc/internal/reportfile"
	"forumstats.local/collector-svc/internal/store"
	"forumstats.local/shared/config"
	"forumstats.local/shared/db"
	"forumstats.local/shared/logging"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/rdb"
	"forumstats.local/shared/reports"
	"forumstats.local/shared/server"
)

const usage = `usage: collector-svc [serve | run-once | import --file F | export --file F | fake-discord --addr A]`

func main() {
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, usage)
			return
		}
		// One line: the error messages of this program never span lines.
		fmt.Fprintln(os.Stderr, "collector-svc:", strings.ReplaceAll(err.Error(), "\n", " "))
		os.Exit(1)
	}
}

func run(args []string) error {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve", "run-once":
		if err := noArgs(cmd, args); err != nil {
			return err
		}
		return collectCommand(cmd)
	case "import", "export":
		fs := newFlags(cmd)
		file := fs.String("file", "", "the reports file")
		if err := fs.Parse(args); err != nil {
			return err
		}
		if *file == "" {
			return fmt.Errorf("%s: --file is required", cmd)
		}
		if cmd == "import" {
			return importCommand(*file)
		}
		return exportCommand(*file)
	case "fake-discord":
		return fakeDiscordCommand(args)
	case "help", "-h", "--help":
		return flag.ErrHelp
	}
	return fmt.Errorf("unknown command %q; %s", cmd, usage)
}

func newFlags(cmd string) *flag.FlagSet {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned and printed on one line
	return fs
}

func noArgs(cmd string, args []string) error {
	fs := newFlags(cmd)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q", cmd, fs.Arg(0))
	}
	return nil
}

// base is what every database command needs.
type base struct {
	cfg config.Common
	log *slog.Logger
	db  *gorm.DB
	rdb *redis.Client
}

func (b *base) close() {
	if b.rdb != nil {
		b.rdb.Close()
	}
	db.Close(b.db)
}

func open(ctx context.Context) (*base, error) {
	cfg, err := config.LoadCommon(":8083", "sqlite:./data/stats.db")
	if err != nil {
		return nil, err
	}
	log, err := logging.New(os.Stderr, cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return nil, err
	}
	gdb, err := db.Open(ctx, cfg.DatabaseURL, log)
	if err != nil {
		return nil, err
	}
	b := &base{cfg: cfg, log: log, db: gdb}
	if cfg.MigrateOnStart {
		applied, err := migrate.Up(ctx, gdb, reports.Migrations)
		if err != nil {
			b.close()
			return nil, err
		}
		if len(applied) > 0 {
			log.Info("migrations applied", "component", reports.Migrations.Component, "applied", applied)
		}
	}
	if b.rdb, err = rdb.Open(ctx, cfg.RedisURL); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// collectorConfig is the collector's own configuration.
type collectorConfig struct {
	token, apiBase, catalogFile string
	refreshMinutes              int
	interval                    time.Duration
}

func loadCollectorConfig() (collectorConfig, error) {
	c := collectorConfig{
		token:       config.String("DISCORD_TOKEN", ""),
		apiBase:     config.String("DISCORD_API_BASE", discord.DefaultBaseURL),
		catalogFile: config.String("CATALOG_FILE", ""),
	}
	if u, err := url.Parse(c.apiBase); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return c, fmt.Errorf("DISCORD_API_BASE: %q is not an http(s) URL", c.apiBase)
	}
	var err error
	if c.refreshMinutes, err = config.Int("REFRESH_MINUTES", 10); err != nil {
		return c, err
	}
	if c.refreshMinutes <= 0 {
		return c, fmt.Errorf("REFRESH_MINUTES: must be a positive number of minutes, got %d", c.refreshMinutes)
	}
	// REFRESH_INTERVAL (a Go duration) overrides the pause for tests and operations; stats-svc
	// is still told REFRESH_MINUTES.
	if c.interval, err = config.Duration("REFRESH_INTERVAL", time.Duration(c.refreshMinutes)*time.Minute); err != nil {
		return c, err
	}
	if c.interval <= 0 {
		return c, fmt.Errorf("REFRESH_INTERVAL: must be positive, got %s", c.interval)
	}
	if c.catalogFile != "" {
		// Fail at start on a broken file; every pass reads it again.
		if _, err := catalog.Load(c.catalogFile); err != nil {
			return c, fmt.Errorf("CATALOG_FILE: %w", err)
		}
	}
	return c, nil
}

func collectCommand(cmd string) error {
	cc, err := loadCollectorConfig()
	if err != nil {
		return err
	}
	ctx, stop := server.SignalContext()
	defer stop()
	b, err := open(ctx)
	if err != nil {
		return err
	}
	defer b.close()
	log := b.log
	if cc.token == "" {
		log.Warn("DISCORD_TOKEN is empty: requests go without authorization (only a fake Discord accepts that)")
	}
	client := discord.New(discord.Config{BaseURL: cc.apiBase, Token: cc.token, Logger: log})
	col := collect.New(collect.Config{
		Discord:        client,
		Store:          store.New(b.db, b.rdb, log),
		CatalogFile:    cc.catalogFile,
		RefreshMinutes: cc.refreshMinutes,
		Logger:         log,
	})
	lk, err := lock.New(b.db, b.cfg.DatabaseURL, min(cc.interval, 5*time.Second), log)
	if err != nil {
		return err
	}

	if cmd == "run-once" {
		if err := lk.Acquire(ctx); err != nil {
			return fmt.Errorf("waiting for the collector lock: %w", err)
		}
		defer lk.Release()
		res, err := col.Pass(ctx)
		if err != nil {
			return err
		}
		fmt.Printf("pass finished: %d servers, %d reports written in %s\n",
			res.Servers, res.Written, res.Finish.Sub(res.Start).Round(time.Millisecond))
		return nil
	}

	e := server.New(server.Options{
		Name:   "collector-svc",
		Logger: log,
		Ready:  []server.Check{{Name: "database", Fn: db.Ping(b.db)}},
	})
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	httpErr := make(chan error, 1)
	go func() {
		err := server.Run(ctx, e, b.cfg.HTTPAddr, log)
		cancel() // a server that cannot listen stops the process
		httpErr <- err
	}()
	log.Info("collector-svc starting", "addr", b.cfg.HTTPAddr, "discord", cc.apiBase, "catalog_file", cc.catalogFile,
		"refresh_minutes", cc.refreshMinutes, "interval", cc.interval.String(), "redis", b.rdb != nil)
	serveErr := col.Serve(ctx, lk, cc.interval)
	cancel()
	if err := <-httpErr; err != nil {
		return err
	}
	return serveErr
}

func importCommand(path string) error {
	ctx, stop := server.SignalContext()
	defer stop()
	// Validate the whole file before touching the database.
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	file, err := reportfile.Decode(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("import %s: %w (nothing was written)", path, err)
	}
	b, err := open(ctx)
	if err != nil {
		return err
	}
	defer b.close()
	st, err := store.New(b.db, b.rdb, b.log).Import(ctx, file)
	if err != nil {
		return fmt.Errorf("import %s: %w (nothing was written)", path, err)
	}
	catalogNote := "catalog kept"
	if st.CatalogReplaced {
		catalogNote = fmt.Sprintf("catalog replaced (%d servers)", st.Catalog)
	}
	fmt.Printf("imported %s: %s, %d guilds, %d daily and %d monthly reports\n", path, catalogNote, st.Guilds, st.Daily, st.Monthly)
	return nil
}

func exportCommand(path string) error {
	ctx, stop := server.SignalContext()
	defer stop()
	b, err := open(ctx)
	if err != nil {
		return err
	}
	defer b.close()
	file, err := store.New(b.db, b.rdb, b.log).Export(ctx)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	var buf bytes.Buffer
	if err := reportfile.Encode(&buf, file); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if path == "-" {
		_, err := os.Stdout.Write(buf.Bytes())
		return err
	}
	if err := writeFileAtomic(path, buf.Bytes()); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	fmt.Printf("exported %d servers, %d guilds, %d daily and %d monthly reports to %s\n",
		len(file.Catalog), len(file.Guilds), len(file.Daily), len(file.Monthly), path)
	return nil
}

// writeFileAtomic writes through a temporary file and a rename, so that an interrupted export
// never leaves a truncated file where a complete one was expected.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func fakeDiscordCommand(args []string) error {
	fs := newFlags("fake-discord")
	addr := fs.String("addr", "127.0.0.1:8090", "listen address")
	guilds := fs.Int("guilds", 3, "number of synthetic servers")
	seed := fs.Int64("seed", 1, "seed of the synthetic data")
	catalogOut := fs.String("catalog", "", "write the servers as a CATALOG_FILE (JSON) to this path")
	frozenAt := fs.String("frozen-at", "", "RFC 3339 instant after which no message exists (default: now, moving)")
	token := fs.String("token", "", "require Authorization: Bot <token> (default: none)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("fake-discord: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("fake-discord: unexpected argument %q", fs.Arg(0))
	}
	opts := fakediscord.DemoOptions()
	opts.Guilds, opts.Seed, opts.Token = *guilds, *seed, *token
	if *frozenAt != "" {
		at, err := time.Parse(time.RFC3339Nano, *frozenAt)
		if err != nil {
			return fmt.Errorf("fake-discord: --frozen-at: %q is not an RFC 3339 time", *frozenAt)
		}
		opts.Clock = func() time.Time { return at }
	}
	fake := fakediscord.New(opts)
	if *catalogOut != "" {
		data, err := json.MarshalIndent(fake.Catalog(), "", "  ")
		if err != nil {
			return err
		}
		if err := writeFileAtomic(*catalogOut, append(data, '\n')); err != nil {
			return fmt.Errorf("fake-discord: --catalog: %w", err)
		}
	}
	log, err := logging.New(os.Stderr, config.String("LOG_LEVEL", "info"), config.String("LOG_FORMAT", "json"))
	if err != nil {
		return err
	}
	ctx, stop := server.SignalContext()
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("fake-discord: %w", err)
	}
	srv := &http.Server{Handler: fake.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Info("fake Discord listening", "addr", ln.Addr().String(), "guilds", *guilds, "seed", *seed)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("fake-discord: %w", err)
	}
	return nil
}
