// Command stats measures stats-svc against its performance targets (README.md, Performance) on a
// PostgreSQL database filled with 100 servers × 50 channels × 400 days of daily reports (2 M
// channel rows) plus monthly reports:
//
//  1. cold cache: the median of -cold all-servers 31-day range requests, each a different window,
//     so that each misses the in-process cache and Redis and is composed from the database, is at
//     most 100 ms;
//  2. cold series: the median of -cold all-servers 366-day series (/api/chat-series), each a
//     different window, is at most 100 ms;
//  3. cold hourly activity: the median of -cold all-servers 31-day /api/chat-activity requests
//     (31 × 24 hours of 100 servers × 50 channels of live counts, each a different window) is at
//     most 100 ms, and the same windows in America/New_York cost at most 10 % more than in
//     Moscow (the median, window by window, of the ratio; the two asked alternately);
//  4. warm cache: stats-svc's requests/s are at least 60 % of those of a bare net/http handler
//     writing the same bytes (the ceiling), measured side by side in alternating slices with the
//     same clients: identity bytes for a client that asks no coding, and for the all-servers
//     range also the gzip bytes for a client that asks gzip;
//  5. the dashboard's first load in headless Chromium (dashboard.go), five times, each in a fresh
//     browser on a cold server cache: its page, files and API answers weigh at most 150,000 bytes
//     on the wire (Chromium's encodedDataLength, asking Accept-Encoding: gzip), and its first
//     chart is drawn with data within 1 s of navigation start (the page's own "first-chart"
//     performance mark), the median of the five.
//
// It treats the service as a black box (setup.go): it builds stats-svc, creates the database
// (dropped at the end unless -keep), applies the migrations with `stats-svc migrate`, fills it
// with plain SQL and starts `stats-svc serve`, with a private redis-server as its shared cache
// unless -redis=false. It measures over HTTP (measure.go), prints the figures (report.go) and
// exits 1 when a target is missed.
//
//	go run ./tools/bench/stats [-admin-url URL] [-redis=false] [-duration 5s] [-compare BIN]... [-activity-only | -dashboard-only]
//
// With -compare, other stats-svc builds serve the same database beside this one, each window of
// the cold measurements is asked of every build in rotating order, and each build's medians are
// printed beside this one's: the machine's drift (10–40 % within a minute) hits them alike.
//
// The ceiling runs as a process of its own too: this command started again as
// `stats bare ADDR PATH FILE [ENCODING]` serves FILE's bytes at PATH with a bare net/http handler
// (announced as Content-Encoding ENCODING when given).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"forumstats.local/tools/bench"
)

// options are the command's flags.
type options struct {
	bench.Flags
	redis       bool
	servers     int
	channels    int
	days        int
	cold        int
	duration    time.Duration
	concurrency int
	compare     paths // other stats-svc builds asked the same cold windows in turn
	// activityOnly loads the live counts only and measures the hourly activity only.
	activityOnly bool
	// dashboardOnly loads all the data (the page shows all of it) and measures the dashboard only.
	dashboardOnly bool
}

// paths is a repeatable flag's values.
type paths []string

func (p *paths) String() string     { return strings.Join(*p, ",") }
func (p *paths) Set(s string) error { *p = append(*p, s); return nil }

func main() {
	var err error
	if len(os.Args) > 1 && os.Args[1] == bareCommand {
		err = serveBare(os.Args[2:])
	} else {
		var o options
		if o, err = parseFlags(); err == nil {
			err = run(o)
		}
	}
	bench.Exit("stats-bench", err)
}

func parseFlags() (options, error) {
	var o options
	o.Define("stats_bench")
	flag.BoolVar(&o.redis, "redis", true, "give the service a private redis-server as its shared cache (false: in-process cache only)")
	flag.IntVar(&o.servers, "servers", 100, "servers")
	flag.IntVar(&o.channels, "channels", 50, "channels per server")
	flag.IntVar(&o.days, "days", 400, "days of daily reports, ending today")
	flag.IntVar(&o.cold, "cold", 21, "cold requests (median reported)")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "duration of each side of a throughput run")
	flag.IntVar(&o.concurrency, "concurrency", 8, "concurrent keep-alive clients")
	flag.Var(&o.compare, "compare", "another stats-svc binary to serve the same database (with a Redis database of its own) and answer the same cold windows in turn (repeatable); measures what a change buys")
	flag.BoolVar(&o.activityOnly, "activity-only", false, "load only the hourly live counts and measure only /api/chat-activity")
	flag.BoolVar(&o.dashboardOnly, "dashboard-only", false, "measure only the dashboard's first load in headless Chromium (on all the data)")
	flag.Parse()
	if o.activityOnly && o.dashboardOnly {
		return o, fmt.Errorf("-activity-only and -dashboard-only exclude each other")
	}
	if o.activityOnly {
		o.days = seriesDays + o.cold // unused: no daily reports are loaded
	}
	if o.servers <= 0 || o.channels <= 0 || o.days < seriesDays+o.cold || o.cold <= 0 || o.concurrency <= 0 || o.duration < time.Second {
		return o, fmt.Errorf("-servers, -channels, -cold and -concurrency must be positive, -days at least 366 + cold, -duration at least 1s")
	}
	return o, o.Check()
}

func run(o options) error {
	return bench.Run(
		func(ctx context.Context) (*benchEnv, error) { return setup(ctx, o) },
		func(ctx context.Context, e *benchEnv) (results, error) { return measure(ctx, e, o) },
		func(e *benchEnv, r results) *bench.Report { return report(e, r, o) })
}
