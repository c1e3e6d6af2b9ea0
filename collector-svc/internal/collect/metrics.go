package collect

import "forumstats.local/shared/metrics"

var (
	metricPassDuration = metrics.Histogram("collector_pass_duration_seconds", "Duration of collection passes.", 1, 5, 15, 30, 60, 120, 300, 600, 1200, 2400, 3600)
	metricPasses       = metrics.CounterVec("collector_passes_total", "Collection passes by result (ok, failed, interrupted by shutdown).", "result")
	metricReports      = metrics.CounterVec("collector_reports_written_total", "Reports written (status ok) or marked stale after a failed refresh, by kind (daily, monthly).", "kind", "status")
	metricLastGoodPass = metrics.Gauge("collector_last_good_pass_timestamp_seconds", "Unix time at which the last pass without failure finished (0: none since start).")
	metricPassExpected = metrics.Gauge("collector_pass_expected_seconds", "The least time the last pass could take at DISCORD_MAX_RPS: its requests ÷ the cap.")
	metricPassActual   = metrics.Gauge("collector_pass_actual_seconds", "How long the last pass took.")
	metricPassRequests = metrics.Gauge("collector_pass_requests", "Discord calls the last pass made.")
	metricLeader       = metrics.Gauge("collector_lock_held", "1 while this process holds the writer lock and collects, 0 while it waits as a standby.")
)
