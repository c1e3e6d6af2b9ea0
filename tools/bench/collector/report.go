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

// The targets: pass time ÷ (requests ÷ limit) up to 250 ms of latency and beyond (1 s), and a
// second pass with nothing changed against the same pass when every channel of every window was
// searched.
const (
	maxRatio     = 1.1
	maxRatioSlow = 1.2
	maxSecond    = 0.55
)

func targetRatio(latency time.Duration) float64 {
	if latency <= 250*time.Millisecond {
		return maxRatio
	}
	return maxRatioSlow
}

func printSetup(o options) {
	search := "as the other routes"
	if o.searchBucket > 0 {
		search = fmt.Sprintf("%d per server and second", o.searchBucket)
	}
	fmt.Printf("collector-bench: the built `collector-svc run-once` against `collector-svc fake-discord`, through a recording proxy\n")
	fmt.Printf("  %d servers × %d listed channels, fake limit %d req/s = the collector's DISCORD_MAX_RPS,\n", o.guilds, o.channels, o.rate)
	fmt.Printf("  search bucket %s, guild/channels bucket %d per server and second, latencies %v, load average %s\n",
		search, o.bucketLimit, o.latencies, loadAvg())
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
func report(scenarios []scenario, o options) *bench.Report {
	rep := &bench.Report{Title: fmt.Sprintf("collector-svc: real passes, %d servers × %d channels, fake Discord enforcing %d req/s and search buckets of %d/s per server",
		o.guilds, o.channels, o.rate, o.searchBucket)}
	if len(scenarios) > 0 {
		fmt.Printf("  message-bearing channels per server: %s\n", scenarios[0].plan.bearingSummary())
	}
	for _, sc := range scenarios {
		for i, p := range sc.passes {
			printPass(p, o)
			n := fmt.Sprintf("%s pass %d ", sc.latency, i+1)
			requests := len(p.traffic.arrivals)
			ideal := time.Duration(float64(requests) / float64(o.rate) * float64(time.Second))
			ratio := p.passTime.Seconds() / ideal.Seconds()
			rep.Add(n+"exit", exitNote(p.err), "0", p.err == nil)
			rep.Add(n+"reports written", fmt.Sprint(p.written), fmt.Sprintf("= %d (%d servers)", p.reports, o.guilds),
				p.written == p.reports && p.servers == o.guilds)
			rep.Add(n+"requests", fmt.Sprint(requests), fmt.Sprintf("= needed %d", p.needed), requests == p.needed)
			rep.Add(n+"429s received", fmt.Sprintf("%d (global %d)", p.traffic.limited, p.traffic.global), "0", p.traffic.limited == 0)
			if i == 0 {
				target := targetRatio(sc.latency)
				rep.Add(n+"time ÷ (requests ÷ limit)", fmt.Sprintf("%.3f (%.3fs ÷ %.3fs)", ratio, p.passTime.Seconds(), ideal.Seconds()),
					fmt.Sprintf("≤ %.1f", target), ratio <= target)
			} else {
				second := float64(requests) / float64(p.before)
				rep.Add(n+"requests ÷ the same pass when every channel of every window was searched", fmt.Sprintf("%.3f (%d ÷ %d)", second, requests, p.before),
					fmt.Sprintf("≤ %.2f", maxSecond), second <= maxSecond)
			}
		}
		v := sc.v
		fmt.Printf("verification (latency %s): %d stored reports and %d channel counts (from `collector-svc export`) compared with the fake's /_fake/count\n",
			sc.latency, v.reports, v.channels)
		for i, b := range v.bad {
			if i == 10 {
				fmt.Printf("  … and %d more\n", len(v.bad)-10)
				break
			}
			fmt.Println("  FAIL:", b)
		}
		rep.Add(fmt.Sprintf("%s stored values that differ from the fake's", sc.latency), fmt.Sprint(len(v.bad)), "0", len(v.bad) == 0)
	}
	fmt.Printf("load average %s\n", loadAvg())
	return rep
}

func printPass(p passResult, o options) {
	t := p.traffic
	requests := len(t.arrivals)
	fmt.Println(p.title)
	fmt.Printf("  requests sent %d, the windows need %d (every channel of every window: %d); 429s received %d (global %d)\n",
		requests, p.needed, p.before, t.limited, t.global)
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
