// Command collector-svc collects message statistics from Discord into the reports database
// that stats-svc serves.
//
//	collector-svc [serve]                 collect every REFRESH_MINUTES while holding the writer
//	                                      lock (else wait as standby); /healthz, /readyz, /metrics
//	collector-svc run-once                one pass, then exit (non-zero when it failed)
//	collector-svc import --file F         load a reports file (one transaction; nothing on error)
//	collector-svc export --file F         write the reports file ("-": standard output)
//	collector-svc demo [--days N]         import demo reports of the last N days (default 90)
//	  [--catalog F] [--out F]             for the catalog F (default deploy/compose/catalog.json),
//	                                      or write them to F ("-": standard output)
//	collector-svc fake-discord --addr A   serve a fake Discord API with synthetic servers
//
// This file is flags, dispatch and signals only; internal/app runs the commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"forumstats.local/collector-svc/internal/app"
	"forumstats.local/collector-svc/internal/fakediscord"
	"forumstats.local/shared/server"
)

const usage = `usage: collector-svc [serve | run-once | import --file F | export --file F | demo [--days N] [--catalog F] [--out F] | fake-discord --addr A]`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, usage)
			return
		}
		// One line: the error messages of this program never span lines.
		fmt.Fprintln(os.Stderr, "collector-svc:", strings.ReplaceAll(err.Error(), "\n", " "))
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve", "run-once":
		if err := noArgs(cmd, args); err != nil {
			return err
		}
		return collectCmd(cmd, stdout, stderr)
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
			return importCmd(*file, stdout, stderr)
		}
		return exportCmd(*file, stdout, stderr)
	case "demo":
		return demoCmd(args, stdout, stderr)
	case "fake-discord":
		return fakeDiscordCmd(args, stderr)
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

func collectCmd(cmd string, stdout, stderr io.Writer) error {
	return server.Command(app.LoadConfig, stderr, func(ctx context.Context, cfg app.Config, log *slog.Logger) error {
		if cmd == "serve" {
			return app.Serve(ctx, cfg, log)
		}
		res, err := app.RunOnce(ctx, cfg, log)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "pass finished: %d servers, %d reports written in %s\n",
			res.Servers, res.Written, res.Finish.Sub(res.Start).Round(time.Millisecond))
		return nil
	})
}

func importCmd(path string, stdout, stderr io.Writer) error {
	return server.Command(app.LoadCommonConfig, stderr, func(ctx context.Context, cfg app.Config, log *slog.Logger) error {
		st, err := app.Import(ctx, cfg, log, path)
		if err != nil {
			return err
		}
		catalogNote := "catalog kept"
		if st.CatalogReplaced {
			catalogNote = fmt.Sprintf("catalog replaced (%d servers)", st.Catalog)
		}
		fmt.Fprintf(stdout, "imported %s: %s, %d guilds, %d daily and %d monthly reports\n", path, catalogNote, st.Guilds, st.Daily, st.Monthly)
		return nil
	})
}

func exportCmd(path string, stdout, stderr io.Writer) error {
	return server.Command(app.LoadCommonConfig, stderr, func(ctx context.Context, cfg app.Config, log *slog.Logger) error {
		st, err := app.Export(ctx, cfg, log, path, stdout)
		if err != nil || path == "-" {
			return err
		}
		fmt.Fprintf(stdout, "exported %d servers, %d guilds, %d daily and %d monthly reports to %s\n",
			st.Servers, st.Guilds, st.Daily, st.Monthly, path)
		return nil
	})
}

// demoCmd imports (or writes) the demo reports relative to now.
func demoCmd(args []string, stdout, stderr io.Writer) error {
	o := app.DemoOptions{Now: time.Now()}
	fs := newFlags("demo")
	fs.IntVar(&o.Days, "days", 90, "days of daily reports, ending today (Moscow)")
	fs.StringVar(&o.CatalogFile, "catalog", "deploy/compose/catalog.json", "the servers (servers of the fake Discord)")
	fs.StringVar(&o.Out, "out", "", "write the reports file here (\"-\": standard output) instead of importing it")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("demo: unexpected argument %q", fs.Arg(0))
	}
	if o.Out != "" {
		_, err := app.Demo(context.Background(), app.Config{}, nil, o, stdout)
		return err
	}
	return server.Command(app.LoadCommonConfig, stderr, func(ctx context.Context, cfg app.Config, log *slog.Logger) error {
		st, err := app.Demo(ctx, cfg, log, o, stdout)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "imported the demo reports of %d days: catalog replaced (%d servers), %d guilds, %d daily and %d monthly reports\n",
			o.Days, st.Catalog, st.Guilds, st.Daily, st.Monthly)
		return nil
	})
}

// fakeDiscordCmd parses the fake's flags over its demo options (Discord's limits and latency),
// so that each option of fakediscord.Options a flag exposes is one line here.
func fakeDiscordCmd(args []string, stderr io.Writer) error {
	f := app.FakeDiscord{Options: fakediscord.DemoOptions()}
	o := &f.Options
	fs := newFlags("fake-discord")
	fs.StringVar(&f.Addr, "addr", "127.0.0.1:8090", "listen address")
	fs.StringVar(&f.Catalog, "catalog", "", "write the servers as a CATALOG_FILE (JSON) to this path")
	fs.IntVar(&o.Guilds, "guilds", 3, "number of synthetic servers")
	fs.IntVar(&o.ChannelsPerGuild, "channels", 0, "listed channels per server (0: 6 to 8 depending on the server)")
	fs.Int64Var(&o.Seed, "seed", o.Seed, "seed of the synthetic data")
	fs.StringVar(&o.Token, "token", "", "require Authorization: Bot <token> (default: none)")
	fs.Float64Var(&o.RateLimit, "rate-limit", o.RateLimit, "global limit in requests per second (0: none)")
	fs.IntVar(&o.BucketLimit, "bucket-limit", o.BucketLimit, "per-route limit per server and second (0: none)")
	fs.IntVar(&o.SearchBucketLimit, "search-bucket-limit", o.SearchBucketLimit, "the search's own limit per server and second (0: as --bucket-limit)")
	fs.DurationVar(&o.Latency, "latency", o.Latency, "latency added before every answer")
	fs.DurationVar(&o.IndexWarmup, "index-warmup", o.IndexWarmup, "the first search of each server answers 202 (index not ready) with this retry_after (0: never)")
	fs.IntVar(&o.MessageRate, "message-rate", 1, "multiply every channel's hourly message rate (the dataset's; at most 50000)")
	g := &o.Gateway
	fs.IntVar(&g.Shards, "shards", 1, "the shard count GET /gateway/bot recommends")
	fs.IntVar(&g.MaxConcurrency, "max-concurrency", 1, "session_start_limit.max_concurrency of GET /gateway/bot")
	fs.DurationVar(&g.IdentifyInterval, "identify-interval", 5*time.Second, "one identify per max_concurrency bucket per interval (else op 9)")
	fs.DurationVar(&g.HeartbeatInterval, "heartbeat-interval", 41250*time.Millisecond, "the gateway's heartbeat_interval")
	fs.DurationVar(&g.ResumeWindow, "resume-window", 3*time.Minute, "how long a gateway session stays resumable without a connection")
	fs.IntVar(&g.ReplayLimit, "replay-limit", 100000, "dispatches a gateway session keeps for a resume")
	fs.BoolVar(&g.Held, "gateway-hold", false, "start with the gateway held: no MESSAGE_CREATE until POST /_fake/gateway/pump or /_fake/gateway/hold?on=false")
	frozenAt := fs.String("frozen-at", "", "RFC 3339 instant after which no message exists (default: now, moving)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("fake-discord: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("fake-discord: unexpected argument %q", fs.Arg(0))
	}
	if *frozenAt != "" {
		at, err := time.Parse(time.RFC3339Nano, *frozenAt)
		if err != nil {
			return fmt.Errorf("fake-discord: --frozen-at: %q is not an RFC 3339 time", *frozenAt)
		}
		o.Clock = func() time.Time { return at }
	}
	ctx, stop := server.SignalContext()
	defer stop()
	return app.ServeFakeDiscord(ctx, f, stderr)
}
