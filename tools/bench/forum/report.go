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
	for _, t := range r.runs {
		if len(r.runs) > 1 {
			fmt.Printf("%s:\n", t.name)
		}
		for i := range t.rps {
			fmt.Printf("  round %d: HTTP %.0f requests/s, pgbench %.0f transactions/s: %.2f\n",
				i+1, t.rps[i], t.tps[i], t.rps[i]/t.tps[i])
		}
	}
	fmt.Printf("pgbench script (the statement each request runs, as the service sent it):\n    %s\n",
		strings.ReplaceAll(strings.TrimSpace(r.script), "\n", "\n    "))

	rep := &bench.Report{Title: "forum-svc: 1 conversation of " + fmt.Sprint(o.messages) + " messages"}
	own := r.runs[0]
	latencyRatio := float64(own.lastPage) / float64(own.firstPage)
	rep.Add("first page latency, median", us(own.firstPage), "", true)
	rep.Add(fmt.Sprintf("last page (%d) latency, median", r.lastPageNo), us(own.lastPage), "", true)
	rep.Add("last/first page latency", fmt.Sprintf("%.2f", latencyRatio),
		fmt.Sprintf("≤ %.1f", maxLatencyRatio), latencyRatio <= maxLatencyRatio)
	rep.Add("HTTP page requests/s, mean of rounds", fmt.Sprintf("%.0f", mean(own.rps)), fmt.Sprintf("pgbench %.0f tps", mean(own.tps)), true)
	rep.Add("HTTP/pgbench throughput", fmt.Sprintf("%.2f", own.ratio()),
		fmt.Sprintf("≥ %.2f", minThroughputRatio), own.ratio() >= minThroughputRatio)
	rep.Add("CPU per request: service", cpu(own.serviceCPU), "", true)
	rep.Add("CPU per request: load generator", cpu(own.loadCPU), "", true)
	// A compared binary is no target: its figures say what this build gains over it.
	for _, t := range r.runs[1:] {
		rep.Add("compared: "+t.name+": HTTP page requests/s", fmt.Sprintf("%.0f", mean(t.rps)),
			fmt.Sprintf("this build %.0f: %+.1f %%", mean(own.rps), 100*(mean(own.rps)/mean(t.rps)-1)), true)
		rep.Add("compared: "+t.name+": HTTP/pgbench", fmt.Sprintf("%.2f", t.ratio()),
			fmt.Sprintf("this build %.2f: %+.1f %%", own.ratio(), 100*(own.ratio()/t.ratio()-1)), true)
		rep.Add("compared: "+t.name+": first/last page latency, median", us(t.firstPage)+" / "+us(t.lastPage),
			fmt.Sprintf("this build %s / %s", us(own.firstPage), us(own.lastPage)), true)
		rep.Add("compared: "+t.name+": service CPU per request", cpu(t.serviceCPU),
			fmt.Sprintf("this build %s", cpu(own.serviceCPU)), true)
	}
	return rep
}

func cpu(d time.Duration) string { return d.Round(100 * time.Nanosecond).String() }

func us(d time.Duration) string { return d.Round(time.Microsecond).String() }
