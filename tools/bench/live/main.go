// Command live measures collector-svc's live counting (DISCORD_GATEWAY=on) against its targets,
// on the built binaries (`collector-svc serve` as it ships, `collector-svc fake-discord` as
// Discord, `stats-svc serve`), each on a fresh PostgreSQL database (dropped at the end unless
// -keep) and a private redis-server that both services use, as in production:
//
//  1. throughput (throughput.go): one collector holding the only gateway shard of -guilds
//     servers, LIVE_FLUSH_INTERVAL at its default. The fake's gateway is held while -events
//     messages pile up, then pumped: the collector's session sends them all as fast as the
//     collector reads them (-rounds times, alternating with the ceiling). It must handle at least 20,000 MESSAGE_CREATE/s, at least 50 % of the
//     rate of a bare coder/websocket reader (reading and decoding the envelope of each payload,
//     nothing else: the ceiling) of the same stream in the same run, and the counts it stores
//     must equal the fake's exact counts (every server's total and every channel's count);
//  2. freshness (freshness.go): against a fake whose servers post at a steady rate (-fresh-rate),
//     stats-svc's answer for today of the first server is asked every -poll for -fresh-for; each
//     message of that server stamped during that time first appears in an answer (its count
//     reaches the message's rank in the day) at most 15 s after it was made, p99.
//
// It prints the figures (tools/bench Report) and exits 1 when a target is missed.
//
//	go run ./tools/bench/live [-admin-url URL] [-guilds 20] [-message-rate 50000] [-events 200000] [-rounds 2] [-fresh-rate 3000] [-fresh-for 60s]
//
// DISCORD_GATEWAY is set to on explicitly, whatever its default. The ceiling reads with
// coder/websocket (pinned in tools/go.mod at the collector's version), the library the collector
// reads the gateway with, so that it differs from the collector only by what it does with each
// payload.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"forumstats.local/tools/bench"
	"forumstats.local/tools/stack"
)

// Targets.
const (
	minRate      = 20000 // MESSAGE_CREATE/s the collector handles
	minRatio     = 0.50  // of the bare reader's rate
	maxFreshness = 15 * time.Second
)

type options struct {
	bench.Flags
	guilds      int
	messageRate int
	events      int64
	rounds      int
	maxPile     time.Duration
	freshRate   int
	freshFor    time.Duration
	poll        time.Duration
	verbose     bool
}

func main() {
	o, err := parseFlags()
	if err == nil {
		err = run(o)
	}
	bench.Exit("live-bench", err)
}

func parseFlags() (options, error) {
	var o options
	o.Define(fmt.Sprintf("live_bench_%d", os.Getpid()))
	flag.IntVar(&o.guilds, "guilds", 20, "servers of the throughput fake (one shard holds them all)")
	flag.IntVar(&o.messageRate, "message-rate", 50000, "the throughput fake's --message-rate (at most 50000)")
	flag.Int64Var(&o.events, "events", 200000, "messages piled up, then read at full speed")
	flag.IntVar(&o.rounds, "rounds", 2, "rounds of the throughput measurement, each -events messages read by the collector then by the bare reader")
	flag.DurationVar(&o.maxPile, "max-pile", 60*time.Second, "give up piling up messages after this long")
	flag.IntVar(&o.freshRate, "fresh-rate", 3000, "the freshness fake's --message-rate (3 servers)")
	flag.DurationVar(&o.freshFor, "fresh-for", 60*time.Second, "how long freshness is measured")
	flag.DurationVar(&o.poll, "poll", 100*time.Millisecond, "how often stats-svc is asked for today")
	flag.BoolVar(&o.verbose, "v", false, "print the steps")
	flag.Parse()
	if o.guilds <= 0 || o.messageRate <= 0 || o.messageRate > 50000 || o.events < 1000 || o.rounds < 1 || o.freshRate <= 0 || o.freshFor <= 0 || o.poll <= 0 {
		return o, fmt.Errorf("-guilds, -message-rate (≤ 50000), -rounds, -fresh-rate, -fresh-for and -poll must be positive, -events at least 1000")
	}
	return o, o.Check()
}

// env is what both measurements share: the binaries, the server the databases are made on, and
// the private Redis.
type env struct {
	bench.Cleanups
	o         options
	collector string // binary
	stats     string // binary
	dir       string
	redis     *stack.Redis
	redisDB   int
	logf      func(format string, args ...any)
}

func run(o options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := &env{o: o, logf: func(string, ...any) {}}
	if o.verbose {
		e.logf = func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
		}
	}
	defer e.Close()
	var err error
	if e.collector, e.dir, err = e.Build(ctx, stack.Collector); err != nil {
		return err
	}
	if e.stats, _, err = e.Build(ctx, stack.Stats); err != nil {
		return err
	}
	if e.redis, err = stack.NewRedis(ctx); err != nil {
		return err
	}
	e.Add(e.redis.Close)
	fmt.Printf("live counting: the throughput fake has %d servers at --message-rate %d, %d messages piled up, %d rounds; "+
		"freshness: 3 servers at --message-rate %d for %s, stats-svc asked every %s\n",
		o.guilds, o.messageRate, o.events, o.rounds, o.freshRate, o.freshFor, o.poll)

	tp, err := measureThroughput(ctx, e)
	if err != nil {
		return err
	}
	fr, err := measureFreshness(ctx, e)
	if err != nil {
		return err
	}
	r := report(tp, fr)
	r.Print(os.Stdout)
	return r.Err()
}

// redisURL is a Redis database of its own for each scenario, so that one's cache and data
// generations never meet the other's.
func (e *env) redisURL() string {
	e.redisDB++
	return fmt.Sprintf("redis://%s/%d", e.redis.Addr(), e.redisDB)
}

// token is the bot token the fakes require.
const token = "live-bench-token"

// scenario is a database, a fake and a collector on them, and the fake's guilds.
type scenario struct {
	dbURL     string
	redisURL  string
	fake      *stack.FakeDiscord
	collector *stack.Service
}

// startScenario creates a database (named after -db and the scenario), starts the fake with args
// and a collector serving it with DISCORD_GATEWAY=on, and waits until the collector's first pass
// is over and every server is counted live.
func (e *env) startScenario(ctx context.Context, name string, fakeArgs []string, extraEnv ...string) (*scenario, error) {
	s := &scenario{redisURL: e.redisURL()}
	var err error
	if s.dbURL, err = e.CreateDatabase(ctx, e.o.Flags, e.o.DB+"_"+name); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(e.dir, name)
	if err != nil {
		return nil, err
	}
	if s.fake, err = stack.StartFakeDiscord(e.collector, dir, append([]string{
		// REST without limits or latency, so that the passes and the searches of reports from live
		// counts are quick; the gateway's identify limit low enough for the bare reader's session.
		"--rate-limit", "0", "--bucket-limit", "0", "--latency", "0", "--index-warmup", "0",
		"--identify-interval", "1ms", "--resume-window", "10m", "--token", token,
	}, fakeArgs...)...); err != nil {
		return nil, err
	}
	e.Add(func() { s.fake.Stop(5 * time.Second) })
	svcEnv := append([]string{
		"DATABASE_URL=" + s.dbURL, "REDIS_URL=" + s.redisURL, "LOG_LEVEL=warn", "DISCORD_TOKEN=" + token,
		"DISCORD_API_BASE=" + s.fake.APIBase(), "CATALOG_FILE=" + s.fake.Catalog,
		"DISCORD_GATEWAY=on", "DISCORD_MAX_RPS=2000",
	}, extraEnv...)
	if s.collector, err = e.StartService(stack.Collector, e.collector, svcEnv); err != nil {
		return nil, err
	}
	e.logf("%s: collector on %s, fake on %s", name, s.collector.URL, s.fake.URL)
	err = waitUntil(ctx, 2*time.Minute, "the collector's first pass and every server counted live", func() (bool, error) {
		passes, err := stack.Metric(ctx, s.collector.URL+"/metrics", "collector_passes_total")
		if err != nil || passes < 1 {
			return false, err
		}
		conn, err := connect(ctx, s.dbURL)
		if err != nil {
			return false, err
		}
		defer conn.Close(ctx)
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM live_guilds`).Scan(&n); err != nil {
			return false, err
		}
		return n == len(s.fake.Guilds), nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w\ncollector:\n%s", err, s.collector.Output())
	}
	e.logf("%s: first pass over, %d servers counted live", name, len(s.fake.Guilds))
	return s, nil
}

// waitUntil polls cond every 50 ms until it holds, fails, or timeout passes.
func waitUntil(ctx context.Context, timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: gave up after %s (last error: %v)", what, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
