package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
)

// The metrics land on the default registry, the one every service's /metrics serves.
func TestRegisteredOnDefaultRegistry(t *testing.T) {
	CounterVec("test_metrics_things_total", "Things, by kind and colour.", "kind", "colour").WithLabelValues("a", "red").Add(2)
	Gauge("test_metrics_level", "A level.").Set(7)
	Histogram("test_metrics_seconds", "Durations.", 1, 5).Observe(3)

	want := `
# HELP test_metrics_things_total Things, by kind and colour.
# TYPE test_metrics_things_total counter
test_metrics_things_total{colour="red",kind="a"} 2
# HELP test_metrics_level A level.
# TYPE test_metrics_level gauge
test_metrics_level 7
# HELP test_metrics_seconds Durations.
# TYPE test_metrics_seconds histogram
test_metrics_seconds_bucket{le="1"} 0
test_metrics_seconds_bucket{le="5"} 1
test_metrics_seconds_bucket{le="+Inf"} 1
test_metrics_seconds_sum 3
test_metrics_seconds_count 1
`
	if err := promtest.GatherAndCompare(prometheus.DefaultGatherer, strings.NewReader(want),
		"test_metrics_things_total", "test_metrics_level", "test_metrics_seconds"); err != nil {
		t.Error(err)
	}
}

func TestDuplicateNamePanics(t *testing.T) {
	Gauge("test_metrics_once", "Once.")
	defer func() {
		if recover() == nil {
			t.Error("a second metric of the same name registered without a panic")
		}
	}()
	Gauge("test_metrics_once", "Once.")
}
