// Command collector measures collector-svc's collection pass against its targets (README.md,
// Performance): the built `collector-svc run-once` against `collector-svc fake-discord`, which
// enforces a global request rate limit, with a recording proxy between the two:
//
//   - requests sent equal the minimum the windows need, computed here from the fake's channel
//     lists, independently of the collector: per server 1 guild + 1 channel list + per window
//     (1 server total + 1 per message-bearing channel created before the window's end);
//   - zero 429s received;
//   - pass time ≤ 1.1 × requests ÷ limit.
//
// It treats the service as a black box (setup.go): it builds collector-svc, creates a PostgreSQL
// database (dropped at the end), starts the fake with its clock frozen at the bench's start and
// its servers written to a CATALOG_FILE, and the proxy. It then times two passes (measure.go):
// the first collection (4 regular windows + the 6 backfill days per server) and a second one
// (the 4 regular windows). Finally every report `collector-svc export --file -` gives is
// compared with the fake's exact counts (its fake-only /_fake/count), so that the bench cannot
// pass by skipping work. It prints the figures (report.go) and exits 1 when a target is missed.
//
//	go run ./tools/bench/collector [-rate 200] [-latency D] [-guilds 20] [-channels 30]
//
// The fake's latency defaults to 20 ms × 50 ÷ rate: the demo fake's 20 ms at Discord's 50/s,
// scaled with the rate, so that a shorter bench at a higher rate keeps the same ratio of latency
// to request interval (the requests that must be in flight to keep the collector's pacer busy).
// The collector is told the rate through DISCORD_MAX_RPS.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"syscall"
	"time"
)

// options are the command's flags.
type options struct {
	adminURL    string
	dbName      string
	keep        bool
	guilds      int
	channels    int
	seed        int64
	rate        int
	bucketLimit int
	latency     time.Duration
	timeout     time.Duration
	verbose     bool
}

func main() {
	o, err := parseFlags()
	if err == nil {
		err = run(o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "collector-bench:", err)
		os.Exit(1)
	}
}

var dbNameRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func parseFlags() (options, error) {
	var o options
	flag.StringVar(&o.adminURL, "admin-url", cmp.Or(os.Getenv("BENCH_POSTGRES_URL"), "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"),
		"PostgreSQL URL of a database from which to create the bench database (env BENCH_POSTGRES_URL)")
	flag.StringVar(&o.dbName, "db", fmt.Sprintf("collector_bench_%d", os.Getpid()), "name of the bench database (created, then dropped)")
	flag.BoolVar(&o.keep, "keep", false, "keep the bench database afterwards")
	flag.IntVar(&o.guilds, "guilds", 20, "servers of the fake")
	flag.IntVar(&o.channels, "channels", 30, "listed channels per server (categories and forums included)")
	flag.Int64Var(&o.seed, "seed", 1, "seed of the fake's dataset")
	flag.IntVar(&o.rate, "rate", 200, "the fake's global limit in requests/s, and the collector's DISCORD_MAX_RPS (Discord: 50)")
	flag.IntVar(&o.bucketLimit, "bucket-limit", 0, "the fake's per-route limit per server and second (default rate ÷ 2, as the demo fake's 25 at 50/s; negative: none)")
	flag.DurationVar(&o.latency, "latency", 0, "the fake's latency before every answer (default 20ms × 50 ÷ rate)")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up a pass after this long")
	flag.BoolVar(&o.verbose, "v", false, "show the collector's log at debug level (default: its warnings)")
	flag.Parse()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["bucket-limit"] {
		o.bucketLimit = o.rate / 2
	}
	if !set["latency"] {
		o.latency = time.Duration(float64(20*time.Millisecond) * 50 / float64(o.rate))
	}
	if o.guilds <= 0 || o.channels <= 0 || o.rate <= 0 || o.latency < 0 {
		return o, fmt.Errorf("-guilds, -channels and -rate must be positive, -latency not negative")
	}
	if !dbNameRE.MatchString(o.dbName) {
		return o, fmt.Errorf("-db %q: want lower-case letters, digits and _", o.dbName)
	}
	return o, nil
}

func run(o options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env, err := setup(ctx, o)
	if err != nil {
		return err
	}
	defer env.close()
	printSetup(env, o)
	passes, err := measurePasses(ctx, env, o)
	if err != nil {
		return err
	}
	v, err := verify(ctx, env, passes)
	if err != nil {
		return err
	}
	r := report(passes, v, o)
	r.Print(os.Stdout)
	return r.Err()
}
