package main

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"forumstats.local/tools/bench"
)

// The targets (forum-svc/README.md, "Tests and benchmark").
const (
	maxLatencyRatio    = 1.5  // last page / first page, medians
	minThroughputRatio = 0.50 // HTTP requests/s / pgbench transactions/s
)

// report turns the results into the figures, each beside its target.
func report(r results, o options) *bench.Report {
	fmt.Printf("\nmachine: %d CPUs; %d latency samples per page; %d clients, %d rounds of %s each side\n",
		runtime.NumCPU(), o.samples, o.clients, o.rounds, o.round)
	for i := range r.rps {
		fmt.Printf("  round %d: HTTP %.0f requests/s, pgbench %.0f transactions/s: %.2f\n",
			i+1, r.rps[i], r.tps[i], r.rps[i]/r.tps[i])
	}
	fmt.Printf("pgbench script (the statement each request runs, as the service sent it):\n    %s\n",
		strings.ReplaceAll(strings.TrimSpace(r.script), "\n", "\n    "))

	rep := &bench.Report{Title: "forum-svc: 1 conversation of " + fmt.Sprint(o.messages) + " messages"}
	latencyRatio := float64(r.lastPage) / float64(r.firstPage)
	rep.Add("first page latency, median", us(r.firstPage), "", true)
	rep.Add(fmt.Sprintf("last page (%d) latency, median", r.lastPageNo), us(r.lastPage), "", true)
	rep.Add("last/first page latency", fmt.Sprintf("%.2f", latencyRatio),
		fmt.Sprintf("≤ %.1f", maxLatencyRatio), latencyRatio <= maxLatencyRatio)
	rps, tps := mean(r.rps), mean(r.tps)
	rep.Add("HTTP page requests/s, mean of rounds", fmt.Sprintf("%.0f", rps), fmt.Sprintf("pgbench %.0f tps", tps), true)
	rep.Add("HTTP/pgbench throughput", fmt.Sprintf("%.2f", rps/tps),
		fmt.Sprintf("≥ %.2f", minThroughputRatio), rps/tps >= minThroughputRatio)
	rep.Add("CPU per request: service", r.serviceCPU.Round(100*time.Nanosecond).String(), "", true)
	rep.Add("CPU per request: load generator", r.loadCPU.Round(100*time.Nanosecond).String(), "", true)
	if r.roundTrips > 0 {
		rep.Add("page queries per database round trip", fmt.Sprintf("%.2f over %.0f round trips", r.queries/r.roundTrips, r.roundTrips), "", true)
	}
	return rep
}

func us(d time.Duration) string { return d.Round(time.Microsecond).String() }
