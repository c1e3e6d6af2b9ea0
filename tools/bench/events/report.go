package main

import (
	"fmt"
	"runtime"
	"slices"
	"time"

	"forumstats.local/tools/bench"
)

// maxPerStream is the memory target: resident bytes an idle stream costs the service.
const maxPerStream = 16 << 10

// goBenchPerStream is the Go benchmark's figure (BenchmarkIdleStreams, forum-svc/README.md,
// "Live events": heap and stacks in use a stream), printed beside this one.
const goBenchPerStream = "9.0 KB (go test -run '^$' -bench BenchmarkIdleStreams -benchtime 1x ./forum-svc/internal/httpapi/)"

// latencyFactor: forum-svc's p99 may be at most this many times the bare server's.
const latencyFactor = 2

// deliveryMetric is forum-svc's histogram of its commit-to-stream delays (forum-svc/README.md,
// "Live events").
const deliveryMetric = "event_stream_delivery_seconds"

func report(r results, o options) *bench.Report {
	fmt.Printf("\nmachine: %d CPUs; %d streams, %d a user; %d replies at %.0f/s into %d conversations of two\n",
		runtime.NumCPU(), o.streams, o.perUser, o.replies, o.rate, conversations(o.streams/o.perUser))
	beside := ", forum-svc's replies beside the bare server's"
	if o.apart {
		beside = ", the bare server alone (-apart)"
	}
	rep := &bench.Report{Title: fmt.Sprintf("forum-svc event stream: %d streams, %d replies at %.0f/s%s", o.streams, o.replies, o.rate, beside)}
	f, b := r.forum, r.bare
	rep.Add("forum-svc: streams opened", fmt.Sprintf("%d in %s", f.streams, ms(f.openTime)), "", true)
	rep.Add("forum-svc: RSS per idle stream", fmt.Sprintf("%.1f KiB (%s → %s)", f.perStream()/1024, mib(f.rssBefore), mib(f.rssIdle)),
		fmt.Sprintf("< %d KiB; Go benchmark: %s", maxPerStream>>10, goBenchPerStream), f.perStream() < maxPerStream)
	rep.Add("bare Go SSE server: RSS per idle stream", fmt.Sprintf("%.1f KiB", b.perStream()/1024), "reference", true)
	for _, s := range []struct {
		name string
		run  serverRun
	}{{"forum-svc", f}, {"bare Go SSE server", b}} {
		rep.Add(s.name+": message_created events", s.run.check.String(), "all, each once", s.run.check.OK())
		rep.Add(s.name+": streams that ended early", endedString(s.run), "0", s.run.ended == 0)
		rep.Add(s.name+": request start to arrival, p50 / max", ms(pct(s.run.upper, 50))+" / "+ms(pct(s.run.upper, 100)), "", true)
		rep.Add(s.name+": answer to arrival (lower bound), p50 / p99", ms(pct(s.run.lower, 50))+" / "+ms(pct(s.run.lower, 99)), "", true)
		rep.Add(s.name+": reply's answer time, p50 / p99", ms(pct(s.run.answerTimes, 50))+" / "+ms(pct(s.run.answerTimes, 99)), "", true)
	}
	fd, bd := f.delivery, b.delivery
	rep.Add("forum-svc: commit to flush to a stream ("+deliveryMetric+"), p50 / p99",
		ms(fd.quantile(.50))+" / "+ms(fd.quantile(.99)), fmt.Sprintf("%.0f observations (a stream and reply each)", fd.count()), fd.count() > 0)
	rep.Add("bare Go SSE server: publication to flush to a stream, p50 / p99 (exact)",
		ms(pct(b.exact, 50))+" / "+ms(pct(b.exact, 99)), fmt.Sprintf("%d observations", len(b.exact)), len(b.exact) > 0)
	rep.Add("bare Go SSE server: the same in forum-svc's buckets, p99", ms(bd.quantile(.99)), "reference", bd.count() > 0)
	rep.Add("forum-svc: commit to the event at the stream, p99", ms(fd.quantile(.99)),
		fmt.Sprintf("≤ %d × bare = %s", latencyFactor, ms(latencyFactor*bd.quantile(.99))),
		fd.count() > 0 && bd.count() > 0 && fd.quantile(.99) <= latencyFactor*bd.quantile(.99))
	return rep
}

func endedString(r serverRun) string {
	if r.endErr != nil {
		return fmt.Sprintf("%d (%v)", r.ended, r.endErr)
	}
	return fmt.Sprint(r.ended)
}

// pct is the p-th percentile of sorted (nearest rank); 0 when empty.
func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(0, min(len(sorted)-1, i-1))]
}

func sortDurations(d []time.Duration) { slices.Sort(d) }

func ms(d time.Duration) string {
	if d < 10*time.Millisecond && d > -10*time.Millisecond {
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
