// Command forum measures forum-svc against its performance targets (forum-svc/README.md):
//
//  1. In a conversation of 1,000,000 messages, the median latency of the last page is at most
//     1.5 × that of the first page.
//  2. Authenticated 20-message page requests per second are at least 50% of pgbench's
//     transactions per second running the same SQL statement against the same database, measured
//     in alternating rounds.
//  3. A user in 10,000 conversations: the median latency of the last page of the conversation
//     list is at most 3 × that of the first, and both pages' statements read the list's index in
//     its order (EXPLAIN ANALYZE: conversation_participants_inbox, no sort bigger than a page).
//  4. Replies: 16 clients replying to one conversation reach at least 50% of the transactions per
//     second of pgbench running the statements the service ran for a reply; 16 clients replying to
//     16 conversations at least 70%.
//  5. Reactions: 16 clients toggling a Like on 16 messages reach at least 70% of the transactions
//     per second of pgbench running the statements the service ran for a reaction.
//  6. Attachments: a 10 MiB file uploads and downloads through the service at no less than 50%
//     of the MiB/s of a plain pgx client writing and reading the same chunks with the store's
//     statements; the service's peak resident set grows by less than 8 MiB while 8 such uploads
//     run at once.
//
// It treats the service as a black box: it builds forum-svc, creates a database, applies the
// migrations with `forum-svc migrate`, fills the conversations with plain SQL, creates the
// reader's and the replier's API keys with `forum-svc apikey create`, starts `forum-svc serve`,
// measures over HTTP beside pgbench (setup.go; measure.go; the list, inbox.go; the replies,
// replies.go, with the statements read back from PostgreSQL, capture.go; reactions.go;
// attachments.go, on a forum-svc of their own), prints the figures
// (report.go) and exits 1 if a target is missed.
//
//	go run ./tools/bench/forum [-admin-url postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable]
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
	messages      int
	conversations int // user 1's conversations
	samples       int
	rounds        int
	round         time.Duration
	clients       int
	compare       []string // other forum-svc binaries measured in the same rounds
}

func main() {
	o, err := parseFlags()
	if err == nil {
		err = run(o)
	}
	bench.Exit("forum-bench", err)
}

func parseFlags() (options, error) {
	var o options
	o.Define("forum_bench")
	flag.IntVar(&o.messages, "messages", 1_000_000, "messages in the conversation")
	flag.IntVar(&o.conversations, "conversations", 10_000, "conversations of the listing user (its inbox)")
	flag.IntVar(&o.samples, "samples", 2000, "latency samples per page")
	flag.IntVar(&o.rounds, "rounds", 5, "throughput rounds (each an HTTP run and a pgbench run), after one warm-up round")
	flag.DurationVar(&o.round, "round", 2*time.Second, "length of each side of a throughput round (whole seconds)")
	flag.IntVar(&o.clients, "clients", 16, "concurrent clients (HTTP and pgbench)")
	flag.Func("compare", "another forum-svc binary to serve the same database and take its turn in every throughput round (repeatable); measures what a change buys", func(path string) error {
		o.compare = append(o.compare, path)
		return nil
	})
	flag.Parse()
	if o.conversations < 2*perPage {
		return o, fmt.Errorf("-conversations: at least %d", 2*perPage)
	}
	return o, o.Check()
}

func run(o options) error {
	return bench.Run(
		func(ctx context.Context) (*benchEnv, error) { return setup(ctx, o) },
		func(ctx context.Context, e *benchEnv) (results, error) { return measure(ctx, e, o) },
		func(_ *benchEnv, r results) *bench.Report { return report(r, o) })
}
