package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"forumstats.local/shared/ratelimit"
	"forumstats.local/stats-svc/internal/answers"
	"forumstats.local/stats-svc/internal/cache"
	"forumstats.local/stats-svc/internal/httpapi"
	"forumstats.local/stats-svc/internal/query"
)

// fixedReports answers every operation with one body, or fails with err.
type fixedReports struct{ err error }

func (f fixedReports) answer() (answers.Answer, error) {
	if f.err != nil {
		return answers.Answer{}, f.err
	}
	return answers.Answer{Body: []byte(`{}`)}, nil
}

func (f fixedReports) Statistics(context.Context, query.Query, time.Time) (answers.Answer, error) {
	return f.answer()
}

func (f fixedReports) Icons(context.Context, string) (answers.Answer, error) { return f.answer() }

func (f fixedReports) Series(context.Context, query.Series, time.Time) (answers.Answer, error) {
	return f.answer()
}

func (f fixedReports) Activity(context.Context, query.Activity, time.Time) (answers.Answer, error) {
	return f.answer()
}

// Each client address has its bucket (here 2 requests, then one a second); past it every route
// but the probes answers 429 too_many_requests with Retry-After in the envelope.
func TestRateLimitPerClient(t *testing.T) {
	now := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	limiter := ratelimit.NewLocal(ratelimit.Config{PerMinute: 60, Burst: 2}, func() time.Time { return now })
	e := httpapi.New(fixedReports{}, httpapi.Options{Now: func() time.Time { return testNow }, Limiter: limiter,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for i, tt := range []struct {
		client, method, path string
		status               int
		body, retryAfter     string
	}{
		{"192.0.2.1", "GET", statsPath, 200, `{}`, ""},
		{"192.0.2.1", "GET", "/api/openapi.json", 200, `"openapi"`, ""},
		{"192.0.2.1", "GET", iconsPath, 429, `{"error":"too_many_requests"}`, "1"},
		{"192.0.2.1", "HEAD", seriesPath, 429, ``, "1"},
		{"192.0.2.1", "POST", statsPath, 429, `{"error":"too_many_requests"}`, "1"},
		{"192.0.2.1", "GET", "/nowhere", 429, `{"error":"too_many_requests"}`, "1"},
		// The probes are never limited.
		{"192.0.2.1", "GET", "/healthz", 200, `"ok"`, ""},
		{"192.0.2.1", "GET", "/readyz", 200, ``, ""},
		{"192.0.2.1", "GET", "/metrics", 200, `go_goroutines`, ""},
		// Another address has its own bucket.
		{"192.0.2.2", "GET", statsPath, 200, `{}`, ""},
		{"192.0.2.2", "GET", "/nowhere", 404, `{"error":"not_found"}`, ""},
		{"192.0.2.2", "GET", statsPath, 429, `{"error":"too_many_requests"}`, "1"},
	} {
		req := httptest.NewRequest(tt.method, tt.path, nil)
		req.RemoteAddr = tt.client + ":40000"
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		body := rec.Body.String()
		if rec.Code != tt.status || rec.Header().Get("Retry-After") != tt.retryAfter || !strings.Contains(body, tt.body) {
			t.Errorf("%d: %s %s from %s: %d %q Retry-After %q, want %d %q %q", i, tt.method, tt.path, tt.client,
				rec.Code, body, rec.Header().Get("Retry-After"), tt.status, tt.body, tt.retryAfter)
		}
		if tt.status == 429 && rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%d: 429 as %q", i, rec.Header().Get("Content-Type"))
		}
	}
	// A second later the client has a token again.
	now = now.Add(time.Second)
	req := httptest.NewRequest("GET", statsPath, nil)
	req.RemoteAddr = "192.0.2.1:40000"
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Errorf("after the refill: %d %q", rec.Code, rec.Body)
	}
}

// An uncached answer refused by the bound on cold reads is 503 service_busy with Retry-After.
func TestBusyIsServiceUnavailable(t *testing.T) {
	e := httpapi.New(fixedReports{err: cache.ErrBusy}, httpapi.Options{Now: func() time.Time { return testNow },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for _, path := range []string{statsPath, iconsPath, seriesPath + "?from=2026-11-01&to=2026-11-02"} {
		for _, method := range []string{"GET", "HEAD"} {
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
			want := `{"error":"service_busy"}`
			if method == "HEAD" {
				want = ""
			}
			if rec.Code != http.StatusServiceUnavailable || rec.Body.String() != want || rec.Header().Get("Retry-After") != "1" {
				t.Errorf("%s %s: %d %q Retry-After %q", method, path, rec.Code, rec.Body, rec.Header().Get("Retry-After"))
			}
		}
	}
}
