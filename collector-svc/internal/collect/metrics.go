package collect

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	metricPassDuration = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "collector_pass_duration_seconds",
		Help:    "Duration of collection passes.",
		Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 2400, 3600},
	})
	metricPasses = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "collector_passes_total",
		Help: "Collection passes by result (ok, failed, interrupted by shutdown).",
	}, []string{"result"})
	metricReports = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "collector_reports_written_total",
		Help: "Reports written (status ok) or marked stale after a failed refresh, by kind (daily, monthly).",
	}, []string{"kind", "status"})
	metricLastGoodPass = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "collector_last_good_pass_timestamp_seconds",
		Help: "Unix time at which the last pass without failure finished (0: none since start).",
	})
	metricPassExpected = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "collector_pass_expected_seconds",
		Help: "The least time the last pass could take at DISCORD_MAX_RPS: its requests ÷ the cap.",
	})
	metricPassActual = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "collector_pass_actual_seconds",
		Help: "How long the last pass took.",
	})
	metricPassRequests = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "collector_pass_requests",
		Help: "Discord calls the last pass made.",
	})
	metricLeader = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "collector_lock_held",
		Help: "1 while this process holds the writer lock and collects, 0 while it waits as a standby.",
	})
)
