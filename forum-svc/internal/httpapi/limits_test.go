package httpapi_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"forumstats.local/shared/server"
)

// A request line or header block of up to 1 MiB reaches the service's error handling: 414
// uri_too_long and 431 request_header_fields_too_large in the errors envelope, over the real
// http.Server of shared/server (net/http would otherwise answer plain text first).
func TestOversizedRequestHead(t *testing.T) {
	e := newEnv(t, envOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Serve(ctx, e.h.(*echo.Echo), ln, nil) }()
	t.Cleanup(func() { cancel(); <-done })
	var block strings.Builder
	for i := 0; block.Len() < 1<<20-8<<10; i++ {
		fmt.Fprintf(&block, "X-Fill-%d: %s\r\n", i, strings.Repeat("a", 8<<10))
	}
	for _, tt := range []struct {
		name, target, headers string
		status                int
		code                  string
	}{
		{"60 KB query string", "/api/conversations/1/messages?page=" + strings.Repeat("1", 60<<10), "", 414, "uri_too_long"},
		{"60 KB query string, unknown route", "/nowhere?x=" + strings.Repeat("1", 60<<10), "", 414, "uri_too_long"},
		{"1 MiB header block", "/api/conversations/1", block.String(), 431, "request_header_fields_too_large"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(20 * time.Second))
			go fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: forum\r\n%sConnection: close\r\n\r\n", tt.target, tt.headers)
			res, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			wantError(t, response{status: res.StatusCode, header: res.Header, body: body}, tt.status, tt.code, nil)
		})
	}
}
