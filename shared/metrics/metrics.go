// Package metrics declares the services' Prometheus metrics on the default registry (the one
// shared/server's /metrics serves), one line a metric.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// CounterVec registers a counter with the given label names.
func CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return promauto.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
}

// Gauge registers a gauge without labels.
func Gauge(name, help string) prometheus.Gauge {
	return promauto.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}

// Histogram registers a histogram without labels, with the given bucket upper bounds.
func Histogram(name, help string, buckets ...float64) prometheus.Histogram {
	return promauto.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
}

// GaugeVec registers a gauge with the given label names.
func GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return promauto.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
}

// HistogramVec registers a histogram with the given label names and bucket upper bounds.
func HistogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return promauto.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
}
