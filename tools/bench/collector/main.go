// Command collector measures collector-svc's collection pass against its targets (README.md,
// Performance): the built `collector-svc run-once` against `collector-svc fake-discord`,
// which enforces a global request rate limit and per-guild route buckets (the search's own, 10 a
// second by default, as Discord's), with a recording proxy between the two. For each fake latency
// (-latencies, default 0, 250 ms and 1 s), on a fresh database:
//
//   - the first collection (4 regular windows + the 6 backfill days per server) sends exactly the
//     requests the windows need, computed here from the fake's channel lists and exact counts,
//     independently of the collector: per server 1 guild + 1 channel list + per window 1 server
//     total + (unless that total is 0) 1 per message-bearing channel created before its end;
//   - zero 429s received;
//   - pass time ÷ (requests ÷ limit) ≤ 1.1 at up to 250 ms of latency, ≤ 1.2 beyond (1 s).
//
// On the first latency's database a second pass follows, in which nothing changed (the fake's
// clock is frozen): its closed windows (yesterday, the previous month) need their server totals
// only, so it sends at most 0.55 × what the same pass sent when every channel of every window
// was searched. Every report `collector-svc export --file -` gives is then compared with the
// fake's exact counts (its fake-only /_fake/count), so that the bench cannot pass by skipping
// work. It prints the figures (report.go) and exits 1 when a target is missed.
//
//	go run ./tools/bench/collector [-rate 50] [-latencies 0s,250ms,1s] [-search-bucket 10] [-guilds 20] [-channels 30]
//
// The default, Discord's 50 a second over 20 servers × 30 channels, takes about 5 minutes. A
// shorter run raises -rate with -guilds (both the fake's limit and the collector's
// DISCORD_MAX_RPS): each guild's search bucket must leave the cap binding, so keep guilds × 5 ≥
// rate at 1 s of latency (a bucket of 10 a second yields about 10 per (1 s + latency)).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"forumstats.local/tools/bench"
	"forumstats.local/tools/stack"
)

// options are the command's flags.
type options struct {
	bench.Flags
	guilds       int
	channels     int
	seed         int64
	rate         int
	bucketLimit  int
	searchBucket int
	latencies    []time.Duration
	frozenAt     time.Time // the fake's clock, the same in every scenario
	timeout      time.Duration
	verbose      bool
}

func main() {
	o, err := parseFlags()
	if err == nil {
		err = run(o)
	}
	bench.Exit("collector-bench", err)
}

func parseFlags() (options, error) {
	var o options
	o.Define(fmt.Sprintf("collector_bench_%d", os.Getpid()))
	flag.IntVar(&o.guilds, "guilds", 20, "servers of the fake")
	flag.IntVar(&o.channels, "channels", 30, "listed channels per server (categories and forums included)")
	flag.Int64Var(&o.seed, "seed", 1, "seed of the fake's dataset")
	flag.IntVar(&o.rate, "rate", 50, "the fake's global limit in requests/s, and the collector's DISCORD_MAX_RPS (Discord: 50)")
	flag.IntVar(&o.bucketLimit, "bucket-limit", 25, "the fake's limit of the guild and channel-list bucket, per server and second (0: none)")
	flag.IntVar(&o.searchBucket, "search-bucket", 10, "the fake's search bucket, per server and second (0: as -bucket-limit)")
	lats := flag.String("latencies", "0s,250ms,1s", "the fake's latencies before every answer, one scenario each (comma-separated)")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up a pass after this long")
	flag.BoolVar(&o.verbose, "v", false, "show the collector's log at debug level (default: its warnings)")
	flag.Parse()
	for _, f := range strings.Split(*lats, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d < 0 {
			return o, fmt.Errorf("-latencies: %q is not a duration ≥ 0", f)
		}
		o.latencies = append(o.latencies, d)
	}
	if o.guilds <= 0 || o.channels <= 0 || o.rate <= 0 || o.bucketLimit < 0 || o.searchBucket < 0 {
		return o, fmt.Errorf("-guilds, -channels and -rate must be positive, the buckets not negative")
	}
	o.frozenAt = time.Now().UTC()
	return o, o.Check()
}

func run(o options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var built bench.Cleanups
	defer built.Close()
	bin, dir, err := built.Build(ctx, stack.Collector)
	if err != nil {
		return err
	}
	printSetup(o)
	var (
		p   *plan
		out []scenario
	)
	for i, lat := range o.latencies {
		sc, err := runScenario(ctx, o, bin, dir, i, lat, p)
		if err != nil {
			return err
		}
		p = sc.plan
		out = append(out, sc)
	}
	r := report(out, o)
	r.Print(os.Stdout)
	return r.Err()
}

// scenario is the passes at one latency and their verification.
type scenario struct {
	latency time.Duration
	plan    *plan
	passes  []passResult
	v       verification
}

func runScenario(ctx context.Context, o options, bin, dir string, n int, latency time.Duration, p *plan) (scenario, error) {
	e, err := setup(ctx, o, bin, dir, n, latency, p)
	if err != nil {
		return scenario{}, err
	}
	defer e.Close()
	passes, err := measurePasses(ctx, e, o, n == 0)
	if err != nil {
		return scenario{}, err
	}
	v, err := verify(ctx, e, passes)
	return scenario{latency: latency, plan: e.plan, passes: passes, v: v}, err
}
