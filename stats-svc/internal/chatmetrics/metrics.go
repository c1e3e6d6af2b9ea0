// Package chatmetrics exports the stored message counts as Prometheus series, read at scrape time:
// chat_messages by id (guild, channel, period), the names in info series (a rename changes a
// label of an info series, never splits a count), and the age and status of each server's
// current reports. A scrape reads through a short cache keyed by the data generation, so that
// it costs at most one cheap query (the generation) per TTL, and a re-read only when the
// collector wrote.
package chatmetrics

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"forumstats.local/shared/reports"
)

// Period label values of chat_messages.
const (
	PeriodToday     = "today"
	PeriodYesterday = "yesterday"
	PeriodMonth     = "month"
)

// DefaultTTL is how long a read serves scrapes before the generation is checked again: shorter
// than any sensible scrape interval's multiple, long enough that several Prometheus replicas
// scraping at once cost one query.
const DefaultTTL = 10 * time.Second

// scrapeTimeout bounds a read at scrape time: a slow database makes the chat_* families absent
// rather than the whole /metrics late.
const scrapeTimeout = 5 * time.Second

// Source reads the reports database (consumer-declared; DB implements it).
type Source interface {
	Generation(ctx context.Context) (int64, error)
	Read(ctx context.Context, p Periods) (Snapshot, error)
}

// Options tune a Collector; the zero value is the default.
type Options struct {
	TTL    time.Duration    // 0: DefaultTTL
	Now    func() time.Time // nil: time.Now
	Logger *slog.Logger     // nil: no logging
}

// Collector is the prometheus.Collector of the chat_* families.
type Collector struct {
	src  Source
	ttl  time.Duration
	now  func() time.Time
	log  *slog.Logger
	errs prometheus.Counter

	mu      sync.Mutex
	snap    *Snapshot // nil: nothing read yet, or the last read failed
	built   *built    // snap's series, built once per read
	checked time.Time // when snap (or the failure) was last confirmed
	failed  bool
}

var (
	messagesDesc = prometheus.NewDesc("chat_messages",
		"Messages counted by the stored report of the period (today, yesterday: Moscow days; month: the current Moscow month); channel_id=\"\" is the server total. Absent when the report is missing.",
		[]string{"guild_id", "channel_id", "period"}, nil)
	serverInfoDesc = prometheus.NewDesc("chat_server_info",
		"Catalog servers: number and name of each guild_id (value 1).",
		[]string{"guild_id", "number", "name"}, nil)
	channelInfoDesc = prometheus.NewDesc("chat_channel_info",
		"Newest known name of each exported channel (value 1).",
		[]string{"guild_id", "channel_id", "name"}, nil)
	ageDesc = prometheus.NewDesc("chat_report_age_seconds",
		"Seconds since the current report of the kind (daily: today, monthly: this month) was generated.",
		[]string{"guild_id", "kind"}, nil)
	statusDesc = prometheus.NewDesc("chat_report_status",
		"Status of the current report of the kind: 1 for the status it has (ok, stale, or missing), 0 for the others.",
		[]string{"guild_id", "kind", "status"}, nil)
)

// statuses are the values of chat_report_status's status label.
var statuses = [...]string{reports.StatusOK, reports.StatusStale, reports.StatusMissing}

// New returns a collector over src. Register it once.
func New(src Source, opts Options) *Collector {
	c := &Collector{src: src, ttl: opts.TTL, now: opts.Now, log: opts.Logger,
		errs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "chat_metrics_read_errors_total",
			Help: "Scrapes whose read of the reports failed; they exported no chat_* count series.",
		})}
	if c.ttl <= 0 {
		c.ttl = DefaultTTL
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{messagesDesc, serverInfoDesc, channelInfoDesc, ageDesc, statusDesc} {
		ch <- d
	}
	c.errs.Describe(ch)
}

// Collect implements prometheus.Collector. A failed read exports none of the chat_* families
// (never zeros, never the whole /metrics failing) and counts chat_metrics_read_errors_total.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	if b := c.series(now); b != nil {
		b.emit(ch, now)
	}
	c.errs.Collect(ch)
}

// series returns the series of the cached snapshot (see snapshot).
func (c *Collector) series(now time.Time) *built {
	s := c.snapshot(now)
	c.mu.Lock()
	defer c.mu.Unlock()
	if s == nil {
		return nil
	}
	if c.built == nil || c.built.snap != s {
		c.built = build(s)
	}
	return c.built
}

// snapshot returns the cached snapshot, confirming it by the generation once per TTL and
// re-reading it when the generation or the periods changed. A failure is cached for the TTL
// too, so that a database that is down costs one attempt per TTL, not one per scrape.
func (c *Collector) snapshot(now time.Time) *Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := PeriodsAt(now)
	if now.Sub(c.checked) < c.ttl && now.Sub(c.checked) >= 0 && (c.failed || c.snap.Periods == p) {
		return c.snap
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	if c.snap != nil && c.snap.Periods == p {
		gen, err := c.src.Generation(ctx)
		if err != nil {
			return c.fail(now, err)
		}
		if gen == c.snap.Generation {
			c.checked = now
			return c.snap
		}
	}
	s, err := c.src.Read(ctx, p)
	if err != nil {
		return c.fail(now, err)
	}
	c.snap, c.checked, c.failed = &s, now, false
	return c.snap
}

func (c *Collector) fail(now time.Time, err error) *Snapshot {
	c.errs.Inc()
	if c.log != nil {
		c.log.Warn("cannot read the reports for /metrics", "err", err)
	}
	c.snap, c.checked, c.failed = nil, now, true
	return nil
}

// Kind label values of chat_report_age_seconds and chat_report_status.
var (
	kindDaily   = reports.KindDay.String()
	kindMonthly = reports.KindMonth.String()
)

type reportKey struct{ guild, kind string }

// built is a snapshot's series: those that depend only on the snapshot are built once per read
// (up to a few hundred thousand), the ages and statuses, which depend on the time, at each scrape.
type built struct {
	snap    *Snapshot
	static  []prometheus.Metric
	current map[reportKey]Report
}

// emit writes the series at now.
func (b *built) emit(ch chan<- prometheus.Metric, now time.Time) {
	for _, m := range b.static {
		ch <- m
	}
	for _, sv := range b.snap.Servers {
		for _, kind := range []string{kindDaily, kindMonthly} {
			status := reports.StatusMissing
			if r, ok := b.current[reportKey{sv.GuildID, kind}]; ok {
				status = r.Status
				if status == reports.StatusOK && now.After(reports.TurnsStale(r.GeneratedAt, b.snap.RefreshMinutes)) {
					status = reports.StatusStale // as the API shows it: a dead collector does not look healthy
				}
				ch <- prometheus.MustNewConstMetric(ageDesc, prometheus.GaugeValue, max(now.Sub(r.GeneratedAt).Seconds(), 0), sv.GuildID, kind)
			}
			for _, st := range statuses {
				v := 0.0
				if st == status {
					v = 1
				}
				ch <- prometheus.MustNewConstMetric(statusDesc, prometheus.GaugeValue, v, sv.GuildID, kind, st)
			}
		}
	}
}

// build makes the series of s. Only catalog servers are exported: reports of a server that left
// the catalog stay in the database but are never served.
func build(s *Snapshot) *built {
	b := &built{snap: s, static: make([]prometheus.Metric, 0, len(s.Servers)+len(s.Reports)+2*len(s.Channels)), current: map[reportKey]Report{}}
	add := func(m prometheus.Metric) { b.static = append(b.static, m) }
	inCatalog := make(map[string]bool, len(s.Servers))
	for _, sv := range s.Servers {
		inCatalog[sv.GuildID] = true
		add(prometheus.MustNewConstMetric(serverInfoDesc, prometheus.GaugeValue, 1, sv.GuildID, strconv.Itoa(sv.Number), sv.Name))
	}
	// Reports by period, so that a channel's name comes from the newest report that has it.
	generated := map[[2]string]time.Time{}
	for _, r := range s.Reports {
		if !inCatalog[r.GuildID] {
			continue
		}
		generated[[2]string{r.GuildID, r.Period}] = r.GeneratedAt
		add(prometheus.MustNewConstMetric(messagesDesc, prometheus.GaugeValue, float64(r.Total), r.GuildID, "", r.Period))
		switch r.Period {
		case PeriodToday:
			b.current[reportKey{r.GuildID, kindDaily}] = r
		case PeriodMonth:
			b.current[reportKey{r.GuildID, kindMonthly}] = r
		}
	}
	type named struct {
		name string
		at   time.Time
	}
	names := map[[2]string]named{}
	for _, c := range s.Channels {
		at, ok := generated[[2]string{c.GuildID, c.Period}]
		if !ok {
			continue // not a catalog server, or a channel row without its report
		}
		add(prometheus.MustNewConstMetric(messagesDesc, prometheus.GaugeValue, float64(c.Messages), c.GuildID, c.ChannelID, c.Period))
		k := [2]string{c.GuildID, c.ChannelID}
		if n, seen := names[k]; !seen || at.After(n.at) {
			names[k] = named{c.Name, at}
		}
	}
	for k, n := range names {
		add(prometheus.MustNewConstMetric(channelInfoDesc, prometheus.GaugeValue, 1, k[0], k[1], n.name))
	}
	return b
}
