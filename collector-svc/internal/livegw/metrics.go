package livegw

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"forumstats.local/shared/metrics"
)

// Every per-shard metric has the label shard, bounded by the bot's shard count.
var (
	metricEvents = metrics.CounterVec("collector_live_events_total",
		"Gateway dispatches applied to live counts, by shard and type (other: a type counting does not read).", "shard", "type")
	metricFlushLag = metrics.GaugeVec("collector_live_flush_lag_seconds",
		"Seconds since the shard's last successful flush (or since this replica took the shard), for the shards this replica holds.", "shard")
	metricFlushDuration = metrics.HistogramVec("collector_live_flush_duration_seconds",
		"Duration of one flush of a shard's counts with its checkpoint.", []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}, "shard")
	metricFlushFailures = metrics.CounterVec("collector_live_flush_failures_total",
		"Flushes that failed (kept for the next), by shard.", "shard")
	metricReconnects = metrics.CounterVec("collector_live_reconnects_total",
		"Sessions of a held shard started again (READY or RESUMED after the first), by shard.", "shard")
	metricResumes = metrics.CounterVec("collector_live_resumes_total",
		"RESUMED dispatches (a session resumed), by shard.", "shard")
	metricIdentifies = metrics.CounterVec("collector_live_identifies_total",
		"READY dispatches (a new session), by shard.", "shard")
	metricGapHours = metrics.GaugeVec("collector_live_gap_hours",
		"Hours of the unfilled gaps of the servers of a shard this replica holds.", "shard")
	metricOldestGap = metrics.GaugeVec("collector_live_oldest_unfilled_gap_seconds",
		"Age of the oldest unfilled gap of a shard this replica holds (since it was recorded); 0 when none.", "shard")
	metricShardsTotal = metrics.Gauge("collector_live_shards_total",
		"The bot's gateway shard count, as this replica read it (0 while it has not).")
	metricShardsHeld = metrics.Gauge("collector_live_shards_held",
		"Gateway shards this replica holds and counts live.")
	metricStopped = metrics.Gauge("collector_live_stopped",
		"1 when live counting stopped on this replica for a close code after which Discord forbids reconnecting.")
)

// shardMetrics are one shard's metrics, looked up once.
type shardMetrics struct {
	label                                     string
	reconnects, resumes, identifies, failures prometheus.Counter
	lag, gapHours, oldestGap                  prometheus.Gauge
	flush                                     prometheus.Observer
	events                                    map[string]prometheus.Counter
}

func newShardMetrics(shard int) *shardMetrics {
	l := strconv.Itoa(shard)
	m := &shardMetrics{
		label:      l,
		reconnects: metricReconnects.WithLabelValues(l),
		resumes:    metricResumes.WithLabelValues(l),
		identifies: metricIdentifies.WithLabelValues(l),
		failures:   metricFlushFailures.WithLabelValues(l),
		lag:        metricFlushLag.WithLabelValues(l),
		gapHours:   metricGapHours.WithLabelValues(l),
		oldestGap:  metricOldestGap.WithLabelValues(l),
		flush:      metricFlushDuration.WithLabelValues(l),
		events:     map[string]prometheus.Counter{},
	}
	for _, t := range eventTypes {
		m.events[t] = metricEvents.WithLabelValues(l, t)
	}
	return m
}

// forget removes the gauges of a shard this replica no longer holds, so that they do not show a
// held shard's values from a replica that let it go.
func (m *shardMetrics) forget() {
	metricFlushLag.DeleteLabelValues(m.label)
	metricGapHours.DeleteLabelValues(m.label)
	metricOldestGap.DeleteLabelValues(m.label)
}

// eventTypes are the type labels of collector_live_events_total.
var eventTypes = []string{"READY", "RESUMED", "GUILD_CREATE", "CHANNEL_CREATE", "CHANNEL_UPDATE", "CHANNEL_DELETE",
	"THREAD_CREATE", "MESSAGE_CREATE", "MESSAGE_DELETE", "MESSAGE_DELETE_BULK", "other"}

func (m *shardMetrics) event(typ string) {
	c, ok := m.events[typ]
	if !ok {
		c = m.events["other"]
	}
	c.Inc()
}
