package main

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"forumstats.local/tools/bench"
)

// The targets (README.md, Performance).
const (
	maxColdMedian   = 100 * time.Millisecond // all servers, 31-day range, cold cache
	maxSeriesMedian = 100 * time.Millisecond // all servers, 366-day series, cold cache
	minWarmRatio    = 0.60                   // stats-svc requests/s ÷ the bare net/http handler's
	maxActivity     = 100 * time.Millisecond // all servers, 31 days × 24 hours of live counts, cold cache
	maxZoneRatio    = 1.10                   // the same activity in activityZone ÷ in Moscow
	maxFirstLoad    = 150_000                // bytes on the wire of the dashboard's first load
	maxFirstChart   = time.Second            // navigation start to the first chart drawn with data
)

// report turns the results into the figures, each beside its target.
func report(e *benchEnv, r results, o options) *bench.Report {
	fmt.Printf("\nmachine: %d CPUs; Redis: %v\n", runtime.NumCPU(), e.redis)
	fmt.Printf("data: %d servers × %d channels × %d days = %d daily channel rows, plus monthly reports; %d live_counts rows (%d days of hours); loaded in %.1f s\n",
		o.servers, o.channels, o.days, e.rows, e.live, activityDays(o), e.loaded.Seconds())
	fmt.Printf("activity: %d all-servers %d-day windows, each ending a day earlier, in Europe/Moscow and %s alternately; %d-byte answer\n",
		len(r.activity), activityRange, activityZone, r.activityLen)
	rep := &bench.Report{Title: "stats-svc"}
	if o.dashboardOnly {
		reportDashboard(rep, r)
		return rep
	}
	am := medianOf(r.activity)
	rep.Add("cold, all servers, 31-day activity: median", ms(am), "≤ "+ms(maxActivity), am <= maxActivity)
	rep.Add("cold activity in "+activityZone+": median", ms(medianOf(r.activityTZ)), "", true)
	zr := ratioOf(r.activityTZ, r.activity)
	rep.Add("cold activity: "+activityZone+" ÷ Moscow, window by window", fmt.Sprintf("%.2f", zr),
		fmt.Sprintf("≤ %.2f", maxZoneRatio), zr <= maxZoneRatio)
	if o.activityOnly {
		return rep
	}
	fmt.Printf("cold: %d all-servers 31-day ranges, each ending a day earlier (a new key each); %d-byte answer\n", len(r.cold), r.coldBytes)
	fmt.Printf("series: %d all-servers %d-day series, each ending a day earlier; %d-byte answer\n", len(r.series), seriesDays, r.seriesLen)
	for _, w := range r.warm {
		fmt.Printf("warm, %s: %s, %d bytes; %d clients, %d alternating slices of %v per side\n",
			w.label, w.target, w.bytes, o.concurrency, w.slices, w.sliceTime)
	}

	sorted := slices.Clone(r.cold)
	slices.Sort(sorted)
	median := sorted[len(sorted)/2]
	rep.Add("cold, all servers, 31-day range: median", ms(median), "≤ "+ms(maxColdMedian), median <= maxColdMedian)
	rep.Add("cold: p90", ms(sorted[len(sorted)*9/10]), "", true)
	rep.Add("cold: min, max", ms(sorted[0])+", "+ms(sorted[len(sorted)-1]), "", true)
	rep.Add("cold: first request", ms(r.cold[0]), "", true)
	series := slices.Clone(r.series)
	slices.Sort(series)
	sm := series[len(series)/2]
	rep.Add("cold, all servers, 366-day series: median", ms(sm), "≤ "+ms(maxSeriesMedian), sm <= maxSeriesMedian)
	rep.Add("cold series: p90, max", ms(series[len(series)*9/10])+", "+ms(series[len(series)-1]), "", true)
	// A compared build is no target: its figures say what this build gains over it.
	for _, c := range r.compared {
		rep.Add("compared: "+c.name+": cold range median", ms(medianOf(c.cold)), "this build ÷ it: "+ratio(r.cold, c.cold), true)
		rep.Add("compared: "+c.name+": cold series median", ms(medianOf(c.series)), "this build ÷ it: "+ratio(r.series, c.series), true)
	}
	for _, w := range r.warm {
		rep.Add("warm, "+w.label+": requests/s", fmt.Sprintf("stats-svc %.0f", w.real), fmt.Sprintf("bare net/http %.0f", w.bare), true)
		ratio := w.real / w.bare
		rep.Add("warm, "+w.label+": stats-svc/bare net/http", fmt.Sprintf("%.0f %%", 100*ratio),
			fmt.Sprintf("≥ %.0f %%", 100*minWarmRatio), ratio >= minWarmRatio)
	}
	reportDashboard(rep, r)
	return rep
}

// reportDashboard adds the dashboard's first loads: the heaviest load's bytes, the median and the
// slowest first chart.
func reportDashboard(rep *bench.Report, r results) {
	if len(r.dashboard) == 0 {
		return
	}
	heaviest := r.dashboard[0]
	charts := make([]time.Duration, len(r.dashboard))
	for i, l := range r.dashboard {
		charts[i] = l.firstChart
		if l.wire > heaviest.wire {
			heaviest = l
		}
	}
	var files []string
	for _, w := range heaviest.responses {
		enc := w.encoding
		if enc == "" {
			enc = "identity"
		}
		files = append(files, fmt.Sprintf("%s %d (%s; body %d, gzip %d)", w.path, w.bytes, enc, w.body, w.gzip))
	}
	fmt.Printf("dashboard: %d first loads, each in a fresh headless Chromium on a new data generation; first charts %v\n",
		len(r.dashboard), charts)
	fmt.Printf("dashboard: the heaviest first load, bytes on the wire by response: %s\n", strings.Join(files, ", "))
	rep.Add("dashboard first load: bytes on the wire, heaviest", fmt.Sprintf("%d bytes in %d responses", heaviest.wire, len(heaviest.responses)),
		fmt.Sprintf("≤ %d bytes", maxFirstLoad), heaviest.wire <= maxFirstLoad)
	// Not a target: what the same bodies would weigh if the service answered gzip (headers left
	// out), beside what it sends.
	rep.Add("dashboard first load: its bodies gzip-compressed", fmt.Sprintf("%d bytes", heaviest.gzip), "not a target", true)
	fm := medianOf(charts)
	rep.Add("dashboard first chart: median", ms(fm), "≤ "+ms(maxFirstChart), fm <= maxFirstChart)
	rep.Add("dashboard first chart: max", ms(slices.Max(charts)), "", true)
}

func medianOf(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// ratio is the median, window by window, of a's latency over b's.
func ratio(a, b []time.Duration) string { return fmt.Sprintf("%.2f", ratioOf(a, b)) }

func ratioOf(a, b []time.Duration) float64 {
	r := make([]float64, len(a))
	for i := range a {
		r[i] = float64(a[i]) / float64(b[i])
	}
	slices.Sort(r)
	return r[len(r)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
