package livereport

import "forumstats.local/shared/metrics"

var (
	metricGapFills = metrics.CounterVec("collector_live_gap_fills_total",
		"Gap searches: filled (handed to the shard's next flush), failed (searched again later), refused (the gap is not one this process counts).", "result")
	metricReports = metrics.CounterVec("collector_live_reports_written_total",
		"Reports written from live counts, by kind (daily, monthly) and status (ok, stale: a gap not filled yet or a failed search).", "kind", "status")
	metricClosedDays = metrics.CounterVec("collector_live_closed_days_total",
		"Days checked at their close: equal (one search agreed with the live total), differs (searched per channel), searched (counting began during the day).", "result")
	metricClosedDiff = metrics.Histogram("collector_live_closed_day_difference_messages",
		"How far a closed day's live total was from its search total, in messages, when they differed.", 1, 2, 5, 10, 50, 100, 1000, 10000)
	metricFinishedRewrites = metrics.CounterVec("collector_live_finished_rewrites_total",
		"Finished closed reports (yesterday's, the previous month's) written again from live counts after their hours changed (a deletion), by kind.", "kind")
)
