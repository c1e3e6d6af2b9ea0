package main

import (
	"fmt"
	"runtime"
	"time"

	"forumstats.local/tools/bench"
)

// maxP99 is the latency target: p99 from a delivery's creation to its receipt.
const maxP99 = time.Second

func report(r results, o options) *bench.Report {
	fmt.Printf("\nmachine: %d CPUs; WEBHOOK_CONCURRENCY %d, retries from 5 s doubling up to 1 h (the defaults)\n",
		runtime.NumCPU(), concurrency)
	rep := &bench.Report{Title: fmt.Sprintf("forum-svc webhooks: %d deliveries at %.0f/s, %d unpaced, a %s outage", o.replies, o.rate, o.replies, o.outage)}
	l := r.latency
	p50, p99, mx := pct(l.latencies, 50), pct(l.latencies, 99), pct(l.latencies, 100)
	rep.Add("latency phase: deliveries", l.check.String(), "all, once, in order", l.check.OK())
	rep.Add("creation to receipt, p50 / max", ms(p50)+" / "+ms(mx), "", true)
	rep.Add("creation to receipt, p99", ms(p99), "< "+ms(maxP99), len(l.latencies) == l.replies && p99 < maxP99)
	t := r.throughput
	rep.Add("throughput phase: deliveries", t.check.String(), "all, once, in order", t.check.OK())
	rep.Add("throughput phase: replies/s (8 clients)", fmt.Sprintf("%.0f", t.repliesPerSec), "", true)
	rep.Add("deliveries/s (first reply to last receipt)", fmt.Sprintf("%.0f", t.deliveriesPerSec),
		fmt.Sprintf("ceiling %.0f/s (plain Go client, %d senders, same bodies and receiver)", r.ceilingPerSec, concurrency), true)
	rep.Add("throughput phase: creation to receipt, p50 / p99", ms(pct(t.latencies, 50))+" / "+ms(pct(t.latencies, 99)), "", true)
	u := r.outage
	rep.Add("outage phase: deliveries", u.check.String(), "all, none made twice, in order", u.check.OK())
	rep.Add("outage phase: duplicate receipts (at-least-once)", fmt.Sprint(u.check.Duplicates), "reported", true)
	rep.Add(fmt.Sprintf("outage phase: backlog of %d at the return, all delivered after", r.backlog), ms(r.recovery),
		"≤ "+ms(o.recovery), u.check.OK() && r.recovery <= o.recovery)
	rep.Add("bad signatures seen by the receiver", fmt.Sprint(r.badSignatures), "0", r.badSignatures == 0)
	return rep
}

// pct is the p-th percentile of sorted (nearest rank); 0 when empty.
func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(len(sorted)-1, i-1))]
}

func ms(d time.Duration) string { return d.Round(time.Millisecond).String() }
