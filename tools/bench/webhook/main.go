// Command webhook measures forum-svc's webhook deliveries against their targets
// (forum-svc/README.md, "Webhooks" and "Tests and benchmark"):
//
//  1. Latency: -replies replies through the API, paced at -rate a second over the conversations
//     of the seeded user, each a message.created delivery to a local receiver: p99 from the
//     delivery's creation (in the reply's transaction, so before its commit: the figure is an
//     upper bound) to its receipt under 1 s. p50, p99 and max are printed.
//  2. Throughput: -replies more replies as fast as -clients clients go; deliveries a second from
//     the first reply to the last receipt, beside a ceiling measured in the same run: a plain Go
//     client POSTing the same signed bodies to the same receiver, WEBHOOK_CONCURRENCY at once.
//  3. Outage: the receiver's port refuses connections for -outage while replies go on at
//     -outage-rate a second, then it comes back: every delivery arrives within 60 s of its return,
//     none lost, none made twice, each conversation's in order; duplicate receipts of a webhook-id
//     (at-least-once) are counted and printed.
//
// Every phase checks what arrived against the replies' answers: nothing lost, nothing twice under
// two webhook-ids, each conversation in order. forum-svc runs with the retry settings production
// has (WEBHOOK_RETRY_MIN 5 s, WEBHOOK_RETRY_MAX 1 h: the defaults) and WEBHOOK_ALLOW_PRIVATE=true
// (the receiver is on 127.0.0.1).
//
// It builds forum-svc, creates a database on PostgreSQL (-db), migrates and seeds it with the
// service's own commands, registers the webhook with `forum-svc webhook add`, starts
// `forum-svc serve`, prints the figures beside the targets and exits 1 if one is missed.
//
//	go run ./tools/bench/webhook [-admin-url postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable]
package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"forumstats.local/tools/bench"
)

// options are the command's flags.
type options struct {
	bench.Flags
	replies    int
	rate       float64
	clients    int
	outage     time.Duration
	outageRate float64
	recovery   time.Duration // the target: all delivered within this of the receiver's return
}

func main() {
	o, err := parseFlags()
	if err == nil {
		err = bench.Run(
			func(ctx context.Context) (*benchEnv, error) { return setup(ctx, o) },
			func(ctx context.Context, e *benchEnv) (results, error) { return measure(ctx, e, o) },
			func(_ *benchEnv, r results) *bench.Report { return report(r, o) })
	}
	bench.Exit("webhook-bench", err)
}

func parseFlags() (options, error) {
	var o options
	o.Define("webhook_bench")
	flag.IntVar(&o.replies, "replies", 1000, "replies (deliveries) of the latency phase, and of the throughput phase")
	flag.Float64Var(&o.rate, "rate", 100, "replies a second in the latency phase")
	flag.IntVar(&o.clients, "clients", 8, "clients posting replies (and the ceiling's senders)")
	flag.DurationVar(&o.outage, "outage", 60*time.Second, "how long the receiver refuses connections in the outage phase")
	flag.Float64Var(&o.outageRate, "outage-rate", 10, "replies a second during the outage")
	flag.Parse()
	o.recovery = 60 * time.Second
	if o.replies < 100 || o.rate <= 0 || o.clients < 1 || o.outage <= 0 || o.outageRate <= 0 {
		return o, fmt.Errorf("-replies at least 100; -rate, -clients, -outage and -outage-rate above 0")
	}
	return o, o.Check()
}
