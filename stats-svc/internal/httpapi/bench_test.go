package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"forumstats.local/stats-svc/internal/answers"
	"forumstats.local/stats-svc/internal/cache"
	"forumstats.local/stats-svc/internal/httpapi"
	"forumstats.local/stats-svc/internal/store"
)

// BenchmarkWarmHandler compares the CPU cost of a warm answer through the
// real handler (shared middleware, parsing, L1) with a bare net/http handler
// writing the same bytes, without the network.
func BenchmarkWarmHandler(b *testing.B) {
	t := &testing.T{}
	gdb := pgDB(t)
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	c := cache.New(store.New(gdb, answers.Links{CDN: cdn}), nil, cache.Options{Logger: log})
	if err := c.Refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
	real := httpapi.New(c, httpapi.Options{Now: func() time.Time { return testNow }, Logger: log})
	target := statsPath + "?period=day&date=2026-11-16&server=2"
	rec := httptest.NewRecorder()
	real.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	body := rec.Body.Bytes()
	bare := http.NewServeMux()
	bare.HandleFunc("GET "+statsPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
	for _, h := range []struct {
		name string
		e    http.Handler
	}{{"bare", bare}, {"real", real}} {
		b.Run(h.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, target, nil)
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.e.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatal(w.Code)
				}
			}
		})
	}
}
