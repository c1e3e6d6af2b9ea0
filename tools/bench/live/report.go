package main

import (
	"fmt"
	"strconv"
	"time"

	"forumstats.local/tools/bench"
)

// report holds the figures to their targets.
func report(tp throughput, fr freshness) *bench.Report {
	r := &bench.Report{Title: "collector-svc live counting (DISCORD_GATEWAY=on, PostgreSQL, LIVE_FLUSH_INTERVAL 5s)"}
	cr, br := tp.collectorRate(), tp.bareRate()
	r.Add("collector: MESSAGE_CREATE read, decoded and counted",
		fmt.Sprintf("%s/s (%s in %s)", thousands(int64(cr)), thousands(tp.collectorEvents), tp.collectorTime.Round(time.Millisecond)),
		"≥ "+thousands(minRate)+"/s", cr >= minRate)
	r.Add("bare coder/websocket reader of the same stream (ceiling)",
		fmt.Sprintf("%s/s (%s in %s)", thousands(int64(br)), thousands(tp.bareEvents), tp.bareTime.Round(time.Millisecond)), "—", true)
	ratios := ""
	for i, rd := range tp.rounds {
		if i > 0 {
			ratios += ", "
		}
		ratios += fmt.Sprintf("%.2f", (float64(rd.collectorEvents)/rd.collectorTime.Seconds())/(float64(rd.bareEvents)/rd.bareTime.Seconds()))
	}
	r.Add("collector ÷ bare reader", fmt.Sprintf("%.2f (rounds: %s)", cr/br, ratios), fmt.Sprintf("≥ %.2f", minRatio), cr/br >= minRatio)
	r.Add("stored live counts = the fake's (every server and channel)", tp.check.String(), "equal", tp.check.Exact() && tp.check.Fake > 0)
	p50, ok50 := fr.quantile(0.50)
	p99, ok99 := fr.quantile(0.99)
	var maxLag time.Duration
	if len(fr.lags) > 0 {
		maxLag = fr.lags[len(fr.lags)-1]
	}
	seen := fmt.Sprintf("%d messages, %d answers", fr.messages, fr.polls)
	if fr.unseen > 0 {
		seen += fmt.Sprintf(", %d never seen", fr.unseen)
	}
	r.Add("freshness in stats-svc's today, p50", lag(p50, ok50)+" ("+seen+")", "—", true)
	r.Add("freshness in stats-svc's today, p99", lag(p99, ok99), "≤ "+maxFreshness.String(), ok99 && p99 <= maxFreshness)
	r.Add("freshness in stats-svc's today, max", lag(maxLag, fr.unseen == 0), "—", true)
	return r
}

func lag(d time.Duration, ok bool) string {
	if !ok {
		return "never seen"
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// thousands formats n with a comma every three digits.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	out := ""
	for len(s) > 3 {
		out = "," + s[len(s)-3:] + out
		s = s[:len(s)-3]
	}
	out = s + out
	if neg {
		out = "-" + out
	}
	return out
}
