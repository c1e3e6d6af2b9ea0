package server

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

	"github.com/labstack/echo/v4"
)

// serve runs New behind the real http.Server of Serve on a loopback port.
func serve(t *testing.T, errorHandler echo.HTTPErrorHandler) string {
	t.Helper()
	e := New(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ErrorHandler: errorHandler})
	e.GET("/ok", func(c echo.Context) error { return c.String(http.StatusOK, "ok") })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, e, ln, nil) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// rawRequest writes a request by hand (the client would refuse some of these) and reads the
// status line, the headers and the body.
func rawRequest(t *testing.T, addr, target string, extra string) (int, http.Header, string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	go fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n%sConnection: close\r\n\r\n", target, addr, extra)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

// headers builds a header block of about n bytes in fields of 8 KiB.
func headers(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "X-Fill-%d: %s\r\n", i, strings.Repeat("a", 8<<10))
	}
	return b.String()
}

func TestOversizedHeadReachesTheErrorHandler(t *testing.T) {
	handler := func(err error, c echo.Context) {
		he, _ := err.(*echo.HTTPError)
		code := map[int]string{414: "uri_too_long", 431: "request_header_fields_too_large"}[he.Code]
		c.Blob(he.Code, echo.MIMEApplicationJSON, []byte(`{"error":"`+code+`"}`))
	}
	addr := serve(t, handler)
	tests := []struct {
		name   string
		target string
		extra  string
		status int
		body   string
	}{
		{"small", "/ok?q=1", "", 200, "ok"},
		{"target at the limit", "/ok?q=" + strings.Repeat("x", MaxRequestTarget-len("/ok?q=")), "", 200, "ok"},
		{"target one past", "/ok?q=" + strings.Repeat("x", MaxRequestTarget-len("/ok?q=")+1), "", 414, `{"error":"uri_too_long"}`},
		{"60 KB query string", "/ok?q=" + strings.Repeat("x", 60<<10), "", 414, `{"error":"uri_too_long"}`},
		{"1 MiB request line", "/ok?q=" + strings.Repeat("x", 1<<20-32), "", 414, `{"error":"uri_too_long"}`},
		{"unknown route too", "/nowhere?q=" + strings.Repeat("x", 60<<10), "", 414, `{"error":"uri_too_long"}`},
		{"headers under the limit", "/ok", headers(MaxHeaderBlock - 9<<10), 200, "ok"},
		{"headers 40 KB", "/ok", headers(40 << 10), 431, `{"error":"request_header_fields_too_large"}`},
		{"1 MiB header block", "/ok", headers(1<<20 - 8<<10), 431, `{"error":"request_header_fields_too_large"}`},
		{"one 100 KB header", "/ok", "X-Big: " + strings.Repeat("b", 100<<10) + "\r\n", 431, `{"error":"request_header_fields_too_large"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, h, body := rawRequest(t, addr, tt.target, tt.extra)
			if status != tt.status || body != tt.body {
				t.Fatalf("%d %q, want %d %q", status, body, tt.status, tt.body)
			}
			if status != 200 && !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
				t.Fatalf("Content-Type %q", h.Get("Content-Type"))
			}
		})
	}
}
