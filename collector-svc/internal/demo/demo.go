// Package demo builds the demo reports relative to a moment: the daily reports of the last days
// and the monthly reports of their months, counted from the fake Discord's dataset (so that the
// collector, collecting from the same fake, refreshes them to the same numbers), for the servers
// of a catalog. It does no I/O; `collector-svc demo` writes its file through the import.
package demo

import (
	"fmt"
	"time"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/collector-svc/internal/fakediscord"
	"forumstats.local/collector-svc/internal/reportfile"
	"forumstats.local/shared/reports"
)

// Options say what to build.
type Options struct {
	// Now is the moment the reports are built at: today (Moscow) is its day, counted up to Now.
	Now time.Time
	// Days is how many days end with today (at least 2: today and yesterday).
	Days int
	// Catalog lists the servers: every guild id must be one of the fake's (seed Seed).
	Catalog []catalog.Entry
	// Seed is the fake Discord's seed (fakediscord.DemoOptions: 1).
	Seed int64
	// RefreshMinutes is the collector's interval the file states (default 10).
	RefreshMinutes int
}

// The two gaps the demo holds on purpose, so that the dashboard and the API show both: the
// second server's report of StaleDaysAgo days ago is stale (its refresh failed at 18:00 and
// kept the count so far), and the last server has no report for MissingDaysAgo days ago.
const (
	StaleDaysAgo   = 10
	MissingDaysAgo = 20
)

// StaleError is the error of the stale report.
var StaleError = reportfile.ReportError{Code: "rate_limited", Message: "Discord kept answering 429 until the pass gave up"}

// Generate builds the reports file: the catalog, each server's metadata, a daily report per
// server and day (today's counted up to Now and just refreshed, yesterday's refreshed a few
// minutes ago, older days as their last refresh left them, after their day ended) but the two
// gaps, and a monthly report per server and month touched by the days. A report's total is the
// server's count, threads included, so it is at least the sum of its listed channels.
func Generate(o Options) (*reportfile.File, error) {
	if o.Days < 2 {
		return nil, fmt.Errorf("demo: at least 2 days (today and yesterday), not %d", o.Days)
	}
	if len(o.Catalog) == 0 {
		return nil, fmt.Errorf("demo: the catalog is empty")
	}
	if o.RefreshMinutes <= 0 {
		o.RefreshMinutes = 10
	}
	now := o.Now
	maxNumber := 0
	for _, e := range o.Catalog {
		maxNumber = max(maxNumber, e.Number)
	}
	fake := fakediscord.New(fakediscord.Options{Seed: o.Seed, Guilds: max(maxNumber, len(o.Catalog)), Clock: func() time.Time { return now }})
	byID := map[string]fakediscord.Guild{}
	for _, g := range fake.Guilds() {
		byID[g.GuildID] = g
	}
	guilds := make([]fakediscord.Guild, len(o.Catalog))
	for i, e := range o.Catalog {
		g, ok := byID[e.GuildID]
		if !ok {
			return nil, fmt.Errorf("demo: catalog server %d (guild %s) is not a server of the fake Discord (seed %d)", e.Number, e.GuildID, o.Seed)
		}
		guilds[i] = g
	}

	minutes := o.RefreshMinutes
	f := &reportfile.File{RefreshMinutes: &minutes, Catalog: o.Catalog}
	metadataAt := now.Add(-3 * time.Minute)
	for _, g := range guilds {
		f.Guilds = append(f.Guilds, reportfile.Guild{GuildID: g.GuildID, Icon: g.Icon, Banner: g.Banner, BannerKnown: true, MetadataAt: &metadataAt})
	}

	today := reports.DayOf(now)
	first := today.AddDays(-(o.Days - 1))
	staleServer, missingServer := min(1, len(guilds)-1), len(guilds)-1
	for d := first; !today.Before(d); d = d.AddDays(1) {
		ago := d.DaysUntil(today)
		for i, g := range guilds {
			if i == missingServer && ago == MissingDaysAgo {
				continue
			}
			r := report(fake, g, d.String(), d.Start(), d.End(), finalRefresh(d.AddDays(2).Start(), ago, now))
			if i == staleServer && ago == StaleDaysAgo {
				// The failed refresh kept the count it had reached at 18:00 Moscow.
				failedAt := d.Start().Add(18 * time.Hour)
				r = report(fake, g, d.String(), d.Start(), failedAt, failedAt)
				r.Status, r.Error = reports.StatusStale, &StaleError
			}
			f.Daily = append(f.Daily, r)
		}
	}
	thisMonth := today.MonthOf()
	for m := first.MonthOf(); m.String() <= thisMonth.String(); m = m.AddMonths(1) {
		ago := monthsBetween(m, thisMonth)
		for _, g := range guilds {
			f.Monthly = append(f.Monthly, report(fake, g, m.String(), m.Start(), m.End(), finalRefresh(m.AddMonths(2).Start(), ago, now)))
		}
	}
	return f, nil
}

// finalRefresh is when the collector last refreshed a period ago periods before the current
// one: the current one and the one before it are refreshed on every pass (two minutes ago); an
// older one was last refreshed as the collector stopped refreshing it, a few minutes after the
// period after it ended (stop), never after now.
func finalRefresh(stop time.Time, ago int, now time.Time) time.Time {
	if ago <= 1 {
		return now.Add(-2 * time.Minute)
	}
	return minTime(stop.Add(4*time.Minute), now)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func monthsBetween(a, b reports.Month) int {
	return (b.Year-a.Year)*12 + int(b.Month-a.Month)
}

// report counts guild g's messages in [from, to) (the fake hides those after Now) as the report
// of period, generated at.
func report(fake *fakediscord.Server, g fakediscord.Guild, period string, from, to, at time.Time) reportfile.Report {
	r := reportfile.Report{GuildID: g.GuildID, Period: period, GeneratedAt: at, Status: reports.StatusOK,
		TotalMessages: fake.Count(g.GuildID, "", from, to), Channels: make([]reportfile.Channel, 0, len(g.Channels))}
	for _, c := range g.Channels {
		r.Channels = append(r.Channels, reportfile.Channel{ID: c.ID, Name: c.Name, Messages: fake.Count(g.GuildID, c.ID, from, to)})
	}
	return r
}
