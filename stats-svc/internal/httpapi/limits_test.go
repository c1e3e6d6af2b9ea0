package httpapi_test

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"forumstats.local/shared/config"
	"forumstats.local/shared/server/servertest"
	"forumstats.local/stats-svc/internal/answers"
	"forumstats.local/stats-svc/internal/httpapi"
	"forumstats.local/stats-svc/internal/store"
)

// A request head of up to net/http's cap (64 KiB) reaches the service's error handling: 414
// uri_too_long and 431 request_header_fields_too_large as JSON, over the real http.Server of
// shared/server (net/http would otherwise answer plain text before any handler).
func TestOversizedRequestHead(t *testing.T) {
	h := httpapi.New(store.New(pgDB(t), answers.Links{CDN: cdn}), httpapi.Options{Now: func() time.Time { return testNow },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	addr, _ := servertest.Serve(t, h, config.HTTP{})
	for _, tt := range []struct {
		name, method, target, headers string
		status                        int
		body                          string
	}{
		{"60 KB query string", "GET", statsPath + "?period=day&x=" + strings.Repeat("1", 60<<10), "", 414, `{"error":"uri_too_long"}`},
		{"60 KB query string, HEAD", "HEAD", seriesPath + "?x=" + strings.Repeat("1", 60<<10), "", 414, ""},
		{"60 KB query string, unknown route", "GET", "/nowhere?x=" + strings.Repeat("1", 60<<10), "", 414, `{"error":"uri_too_long"}`},
		{"header block just under net/http's cap", "GET", iconsPath, servertest.Headers(60 << 10), 431, `{"error":"request_header_fields_too_large"}`},
		{"ordinary request", "GET", iconsPath + "?server=1", "", 200, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := servertest.Raw(t, addr, tt.method, tt.target, tt.headers)
			if res.Status != tt.status || (tt.status != 200 && string(res.Body) != tt.body) {
				t.Fatalf("%d %.200s, want %d %s", res.Status, res.Body, tt.status, tt.body)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/json" || res.Header.Get("Access-Control-Allow-Origin") != "*" {
				t.Fatalf("Content-Type %q, CORS %q", ct, res.Header.Get("Access-Control-Allow-Origin"))
			}
		})
	}
}
