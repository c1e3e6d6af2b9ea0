// Command loadgen drives HTTP targets at a fixed concurrency for a bounded time and prints
// requests/s, latency percentiles and errors. It exits 1 when any request failed (a transport
// error, a 5xx, or a status outside -expect), 2 on bad usage.
//
//	loadgen -c 64 -d 60s -url http://127.0.0.1:8082/api/chat-icons -url 'HEAD http://127.0.0.1:8082/api/chat-statistics'
//	loadgen -c 64 -d 60s -targets forum.txt -H 'Forum-Api-Key: <KEY>' -expect 200
//
// See loadgen.ParseTargets for the targets file.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"forumstats.local/tools/loadgen"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ", ") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	code, err := run(os.Args[1:], os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen: "+err.Error())
	}
	os.Exit(code)
}

func run(args []string, stdout io.Writer) (int, error) {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	var urls, headers multi
	fs.Var(&urls, "url", "target \"[METHOD] URL\" (repeatable)")
	fs.Var(&headers, "H", "header \"Name: value\" added to every request (repeatable)")
	targetsFile := fs.String("targets", "", "file of targets (see loadgen.ParseTargets)")
	conc := fs.Int("c", 64, "concurrent connections")
	dur := fs.Duration("d", 60*time.Second, "duration of the run")
	timeout := fs.Duration("timeout", 10*time.Second, "timeout of one request")
	expect := fs.String("expect", "", "statuses that count as success, e.g. 200,404 (default: any below 500)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := fs.Parse(args); err != nil {
		return 2, err
	}
	if fs.NArg() > 0 {
		return 2, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *conc < 1 || *dur <= 0 || *timeout <= 0 {
		return 2, errors.New("-c, -d and -timeout must be positive")
	}

	var targets []loadgen.Target
	for _, u := range urls {
		t, err := loadgen.ParseTarget(u)
		if err != nil {
			return 2, fmt.Errorf("-url: %w", err)
		}
		targets = append(targets, t)
	}
	if *targetsFile != "" {
		f, err := os.Open(*targetsFile)
		if err != nil {
			return 2, err
		}
		ts, err := loadgen.ParseTargets(f)
		f.Close()
		if err != nil {
			return 2, fmt.Errorf("%s: %w", *targetsFile, err)
		}
		targets = append(targets, ts...)
	}
	if len(targets) == 0 {
		return 2, errors.New("no target: give -url or -targets")
	}
	extra := http.Header{}
	for _, h := range headers {
		name, value, err := loadgen.ParseHeader(h)
		if err != nil {
			return 2, fmt.Errorf("-H: %w", err)
		}
		extra.Add(name, value)
	}
	if *expect != "" {
		codes, err := loadgen.ParseStatuses(*expect)
		if err != nil {
			return 2, fmt.Errorf("-expect: %w", err)
		}
		for i := range targets {
			if len(targets[i].Expect) == 0 {
				targets[i].Expect = codes
			}
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := loadgen.Run(ctx, loadgen.Config{
		Targets: targets, Concurrency: *conc, Duration: *dur, Timeout: *timeout, Header: extra,
	})
	if err != nil {
		return 2, err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(jsonResult(res)); err != nil {
			return 2, err
		}
	} else {
		res.Format(stdout)
	}
	if res.Errors > 0 {
		return 1, fmt.Errorf("%d of %d requests failed", res.Errors, res.Requests)
	}
	return 0, nil
}

func jsonResult(r loadgen.Result) map[string]any {
	statuses := map[string]int64{}
	for c, n := range r.Statuses {
		statuses[fmt.Sprint(c)] = n
	}
	return map[string]any{
		"targets": r.Targets, "concurrency": r.Concurrency, "elapsed_s": r.Elapsed.Seconds(),
		"requests": r.Requests, "rps": r.RPS(),
		"p50_ms": msf(r.P50), "p90_ms": msf(r.P90), "p99_ms": msf(r.P99), "max_ms": msf(r.Max),
		"errors": r.Errors, "transport_errors": r.Transport, "refused": r.Refused,
		"status_5xx": r.Status5xx, "unexpected_status": r.Unexpected, "statuses": statuses,
	}
}

func msf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
