package discord

import "forumstats.local/shared/metrics"

// Wait reasons of collector_discord_wait_seconds_total.
const (
	waitPacing     = "pacing"       // only the global cap held the request
	waitBucket     = "bucket"       // its bucket had no permit (X-RateLimit-Remaining reached 0, or not yet learned)
	waitRetryAfter = "retry_after"  // after a 429 (route or global)
	waitIndex      = "index_warmup" // 202 code 110000
	waitBackoff    = "backoff"      // 5xx and network errors
)

var (
	metricRequests    = metrics.CounterVec("collector_discord_requests_total", "Requests sent to Discord, by templated route and HTTP status (\"error\" for transport failures).", "route", "status")
	metricRateLimited = metrics.CounterVec("collector_discord_rate_limited_total", "HTTP 429 answers received from Discord, by scope (global, user, shared).", "scope")
	metricWait        = metrics.CounterVec("collector_discord_wait_seconds_total", "Time requests spent waiting before being sent, by reason.", "reason")
)
