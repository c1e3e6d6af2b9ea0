package event

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// DeliveryMetric is the histogram of how fresh live events are: the seconds from the commit of a
// write in this process to its events written to a stream (handed over; events a stream reads
// from the log, another replica's, and an inline write the client could not take at once are not
// in it). One observation a stream and write.
const DeliveryMetric = "event_stream_delivery_seconds"

// deliveryBuckets are fine below a few milliseconds, where a stream's delivery normally falls,
// so that a quantile read from them is close to the exact one.
var deliveryBuckets = []float64{
	.0001, .0002, .0003, .0004, .0005, .0006, .0007, .0008, .0009, .001, .00125, .0015, .00175, .002,
	.0025, .003, .004, .005, .0075, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10,
}

var (
	deliveryOnce sync.Once
	deliveryHist prometheus.Histogram
)

// observeDelivery records one stream's delivery of a write committed at committed.
func observeDelivery(committed time.Time) {
	deliveryOnce.Do(func() {
		deliveryHist = promauto.NewHistogram(prometheus.HistogramOpts{
			Name:    DeliveryMetric,
			Help:    "Seconds from the commit of a write in this process to its events written to a stream (events handed over at the commit; one observation a stream and write).",
			Buckets: deliveryBuckets,
		})
	})
	deliveryHist.Observe(time.Since(committed).Seconds())
}
