package gateway

import "forumstats.local/shared/metrics"

var (
	metricReconnects = metrics.CounterVec("collector_gateway_reconnects_total",
		"Gateway connections ended and started again, by how (resume, identify) and why (dropped, zombie, reconnect, invalid_session, malformed, closed, dial).", "mode", "reason")
	metricStopped = metrics.CounterVec("collector_gateway_stopped_total",
		"Shards stopped for good by a close code after which Discord forbids reconnecting (4004, 4010 to 4014), by code.", "code")
	metricDispatches = metrics.CounterVec("collector_gateway_dispatches_total",
		"Dispatches received from the gateway and handed on, by type (duplicates of a replay are not counted).", "type")
)
