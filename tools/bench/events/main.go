// Command events measures forum-svc's event stream (GET /api/events, forum-svc/README.md "Live
// events") on one instance against its targets:
//
//  1. Memory: -streams streams open and idle, spread over -streams / -per-user users (a super key
//     acting as each with Forum-Api-User); the service's resident set (VmRSS, from /proc of the
//     child) after they opened minus before, a stream: under 16 KiB.
//  2. Latency: -replies replies at -rate a second, spread over the conversations of two users
//     each, every user holding -per-user of the streams, after one second's worth of warm-up
//     replies (not measured: forum-svc's pooled database connections prepare their statements at
//     their first use). Each reply's message_created must reach every stream of both participants
//     exactly once (none lost, none twice). The target is on the p99 from the reply's commit to
//     its event at the stream: forum-svc measures it itself (event_stream_delivery_seconds: from
//     the moment the commit returned to the event's bytes flushed to the stream, one observation a
//     stream and reply, in fine buckets read from /metrics before and after), and the bare Go SSE
//     server (net/http, a hub fanning the same events out to the same number of streams, a POST
//     publishing them) measures the same from its publication, exactly; its delays are put into
//     forum-svc's buckets so that both p99 are read alike (as histogram_quantile reads them).
//     Target: forum-svc's at most 2 × the bare server's, in the same run, with the same client,
//     pacing and streams. The last hop, from the server's socket to the client, is the same kernel
//     path for both and is not in either figure. The client's own figures are printed beside: from
//     the reply's request start (an upper bound: it holds the reply's transaction) and from its
//     answer (a lower bound) to the event's arrival.
//
// Both fan-outs are measured with the same work on the machine's cores: while the bare server
// fans its replies out, the bench posts as many replies to forum-svc beside (same rate, same
// conversations; its streams are closed by then), so that forum-svc and PostgreSQL spend on the
// replies what they spend while forum-svc's own fan-out is measured. On a machine of few cores,
// that work is what a delivery waits behind when it loses its core (a write to a socket wakes the
// reader; any other runnable thread may run first). -apart measures the bare server alone on idle
// cores instead: the stricter comparison, which holds forum-svc's fan-out to a machine without its
// replies' work. The servers run one after the other: the client holds one server's streams at a
// time (the descriptor limit).
//
// forum-svc runs with REDIS_URL on a private redis-server (-redis, default true), as deployments
// do: its hub then polls the users' last event ids every 15 seconds instead of every second, and a
// private server keeps other instances' wake-ups (channel forum:events) out of the figures.
//
// The bare server is this program run again as a child process (`events bare-server ADDR`), so
// both servers are child processes with their own descriptors and resident sets. The descriptor limit (RLIMIT_NOFILE) is raised
// to its hard limit here, which the children inherit; below -streams + 1,024 the bench stops with
// a message.
//
// It builds forum-svc, creates a database on PostgreSQL (-db), migrates and seeds it with the
// service's own commands, starts `forum-svc serve`, prints the figures beside the targets and
// exits 1 if one is missed.
//
//	go run ./tools/bench/events [-streams 10000] [-per-user 2] [-replies 2000] [-rate 200] [-apart]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"forumstats.local/tools/bench"
)

// options are the command's flags.
type options struct {
	bench.Flags
	streams int
	perUser int
	replies int
	rate    float64
	opening int // streams opened at once
	redis   bool
	apart   bool // the bare server without forum-svc's replies beside
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == bareServerArg {
		bench.Exit("events-bench bare server", serveBare(os.Args[2]))
		return
	}
	o, err := parseFlags()
	if err == nil {
		err = bench.Run(
			func(ctx context.Context) (*benchEnv, error) { return setup(ctx, o) },
			func(ctx context.Context, e *benchEnv) (results, error) { return measure(ctx, e, o) },
			func(_ *benchEnv, r results) *bench.Report { return report(r, o) })
	}
	bench.Exit("events-bench", err)
}

func parseFlags() (options, error) {
	var o options
	o.Define("events_bench")
	flag.IntVar(&o.streams, "streams", 10000, "concurrent event streams (on each server)")
	flag.IntVar(&o.perUser, "per-user", 2, "streams a user holds (users: streams / per-user, two a conversation)")
	flag.IntVar(&o.replies, "replies", 2000, "replies of the latency phase (on each server)")
	flag.Float64Var(&o.rate, "rate", 200, "replies a second")
	flag.IntVar(&o.opening, "opening", 32, "streams opened at once")
	flag.BoolVar(&o.redis, "redis", true, "serve with REDIS_URL on a private redis-server, as deployments run: the hub polls the log every 15 s instead of every second")
	flag.BoolVar(&o.apart, "apart", false, "measure the bare server alone on the machine, without forum-svc's replies beside")
	flag.Parse()
	if o.perUser < 1 || o.streams < 2*o.perUser || o.streams%(2*o.perUser) != 0 {
		return o, fmt.Errorf("-streams must be a positive multiple of 2 × -per-user (two users a conversation)")
	}
	if o.replies < 100 || o.rate <= 0 || o.opening < 1 {
		return o, fmt.Errorf("-replies at least 100; -rate and -opening above 0")
	}
	return o, o.Check()
}
