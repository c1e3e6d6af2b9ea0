package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"forumstats.local/tools/bench"
)

// maxRatio is the target's bound on pass time ÷ (requests ÷ limit).
const maxRatio = 1.1

func printSetup(e *benchEnv, o options) {
	bucketNote := "none"
	if o.bucketLimit > 0 {
		bucketNote = fmt.Sprintf("%d per server and second", o.bucketLimit)
	}
	fmt.Printf("collector-bench: the built `collector-svc run-once` against `collector-svc fake-discord`, through a recording proxy\n")
	fmt.Printf("  %d servers × %d listed channels (%s message-bearing), fake limit %d req/s = the collector's DISCORD_MAX_RPS,\n",
		o.guilds, o.channels, e.plan.bearingSummary(), o.rate)
	fmt.Printf("  per-route bucket %s, fake latency %s, database %s, load average %s\n", bucketNote, o.latency, o.dbName, loadAvg())
}

func (p *plan) bearingSummary() string {
	lo, hi := math.MaxInt, 0
	for _, g := range p.guilds {
		lo, hi = min(lo, len(g.bearing)), max(hi, len(g.bearing))
	}
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}

// report prints each pass's details and returns the figures, each beside its target.
func report(passes []passResult, v verification, o options) *bench.Report {
	rep := &bench.Report{Title: fmt.Sprintf("collector-svc: one real pass, %d servers × %d channels, fake Discord enforcing %d req/s",
		o.guilds, o.channels, o.rate)}
	for i, p := range passes {
		printPass(p, o)
		n := fmt.Sprintf("pass %d ", i+1)
		requests := len(p.traffic.arrivals)
		ideal := time.Duration(float64(requests) / float64(o.rate) * float64(time.Second))
		ratio := p.passTime.Seconds() / ideal.Seconds()
		rep.Add(n+"exit", exitNote(p.err), "0", p.err == nil)
		rep.Add(n+"reports written", fmt.Sprint(p.written), fmt.Sprintf("= %d (%d servers)", p.reports, o.guilds),
			p.written == p.reports && p.servers == o.guilds)
		rep.Add(n+"requests", fmt.Sprint(requests), fmt.Sprintf("= minimum %d", p.minimum), requests == p.minimum)
		rep.Add(n+"429s received", fmt.Sprintf("%d (global %d)", p.traffic.limited, p.traffic.global), "0", p.traffic.limited == 0)
		rep.Add(n+"time ÷ (requests ÷ limit)", fmt.Sprintf("%.3f (%.3fs ÷ %.3fs)", ratio, p.passTime.Seconds(), ideal.Seconds()),
			fmt.Sprintf("≤ %.1f", maxRatio), ratio <= maxRatio)
	}
	fmt.Printf("verification: %d stored reports and %d channel counts (from `collector-svc export`) compared with the fake's /_fake/count\n",
		v.reports, v.channels)
	for i, b := range v.bad {
		if i == 10 {
			fmt.Printf("  … and %d more\n", len(v.bad)-10)
			break
		}
		fmt.Println("  FAIL:", b)
	}
	rep.Add("stored values that differ from the fake's", fmt.Sprint(len(v.bad)), "0", len(v.bad) == 0)
	fmt.Printf("load average %s\n", loadAvg())
	return rep
}

func printPass(p passResult, o options) {
	t := p.traffic
	requests := len(t.arrivals)
	fmt.Println(p.title)
	fmt.Printf("  requests sent %d, minimum the windows need %d; 429s received %d (global %d)\n",
		requests, p.minimum, t.limited, t.global)
	fmt.Printf("  pass %.3fs as run-once reports it (the whole command %.3fs: start, database, lock, pass, exit)\n",
		p.passTime.Seconds(), p.wall.Seconds())
	if requests == 0 || p.passTime <= 0 {
		return
	}
	interval := time.Duration(float64(time.Second) / float64(o.rate))
	behindMax, behindLast := t.behind(interval)
	fmt.Printf("  %.1f req/s achieved (%.1f%% of the limit); busiest second %d requests; the fake had %.2f in flight on average (max %d)\n",
		float64(requests)/p.passTime.Seconds(), 100*float64(requests)/p.passTime.Seconds()/float64(o.rate),
		t.busiestSecond(), t.busy.Seconds()/p.passTime.Seconds(), t.maxInflight)
	fmt.Printf("  arrivals behind the ideal schedule (first arrival + i ÷ limit): at most %.0f ms, %.0f ms at the last; %d new TCP connections\n",
		1000*behindMax.Seconds(), 1000*behindLast.Seconds(), t.conns)
}

func exitNote(err error) string {
	if err == nil {
		return "0"
	}
	return err.Error()
}

func loadAvg() string {
	f, err := os.Open("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 128))
	fields := strings.Fields(string(b))
	if len(fields) < 3 {
		return "unknown"
	}
	return strings.Join(fields[:3], " ")
}
