package httpapi_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"forumstats.local/shared/server"
	"forumstats.local/stats-svc/internal/httpapi"
	"forumstats.local/stats-svc/internal/report"
	"forumstats.local/stats-svc/internal/store"
)

// A request line or header block of up to 1 MiB reaches the service's error handling: 414
// uri_too_long and 431 request_header_fields_too_large as JSON, over the real http.Server of
// shared/server (net/http would otherwise answer plain text before any handler).
func TestOversizedRequestHead(t *testing.T) {
	e := server.New(server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ErrorHandler: httpapi.ErrorHandler})
	httpapi.Register(e, store.New(pgDB(t), report.Links{CDN: cdn}), func() time.Time { return testNow })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Serve(ctx, e, ln, nil) }()
	t.Cleanup(func() { cancel(); <-done })
	var block strings.Builder
	for i := 0; block.Len() < 1<<20-8<<10; i++ {
		fmt.Fprintf(&block, "X-Fill-%d: %s\r\n", i, strings.Repeat("a", 8<<10))
	}
	for _, tt := range []struct {
		name, method, target, headers string
		status                        int
		body                          string
	}{
		{"60 KB query string", "GET", statsPath + "?period=day&x=" + strings.Repeat("1", 60<<10), "", 414, `{"error":"uri_too_long"}`},
		{"60 KB query string, HEAD", "HEAD", seriesPath + "?x=" + strings.Repeat("1", 60<<10), "", 414, ""},
		{"60 KB query string, unknown route", "GET", "/nowhere?x=" + strings.Repeat("1", 60<<10), "", 414, `{"error":"uri_too_long"}`},
		{"1 MiB header block", "GET", iconsPath, block.String(), 431, `{"error":"request_header_fields_too_large"}`},
		{"ordinary request", "GET", iconsPath + "?server=1", "", 200, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(20 * time.Second))
			go fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: stats\r\n%sConnection: close\r\n\r\n", tt.method, tt.target, tt.headers)
			res, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: tt.method})
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.status || (tt.status != 200 && string(body) != tt.body) {
				t.Fatalf("%d %.200s, want %d %s", res.StatusCode, body, tt.status, tt.body)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/json" || res.Header.Get("Access-Control-Allow-Origin") != "*" {
				t.Fatalf("Content-Type %q, CORS %q", ct, res.Header.Get("Access-Control-Allow-Origin"))
			}
		})
	}
}
