package server_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"forumstats.local/shared/config"
	"forumstats.local/shared/server"
	"forumstats.local/shared/server/servertest"
)

func TestOversizedHeadReachesTheErrorHandler(t *testing.T) {
	handler := func(err error, c echo.Context) {
		he, _ := err.(*echo.HTTPError)
		code := map[int]string{414: "uri_too_long", 431: "request_header_fields_too_large"}[he.Code]
		c.Blob(he.Code, echo.MIMEApplicationJSON, []byte(`{"error":"`+code+`"}`))
	}
	e := server.New(server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ErrorHandler: handler})
	e.GET("/ok", func(c echo.Context) error { return c.String(http.StatusOK, "ok") })
	addr, _ := servertest.Serve(t, e, config.HTTP{})
	atLimit := "/ok?q=" + strings.Repeat("x", server.MaxRequestTarget-len("/ok?q="))
	tests := []struct {
		name   string
		target string
		extra  string
		status int
		body   string // net/http's own plain-text refusal when it starts with "431 "
	}{
		{"small", "/ok?q=1", "", 200, "ok"},
		{"target at the limit", atLimit, "", 200, "ok"},
		{"target one past", atLimit + "x", "", 414, `{"error":"uri_too_long"}`},
		{"60 KB query string", "/ok?q=" + strings.Repeat("x", 60<<10), "", 414, `{"error":"uri_too_long"}`},
		{"request line just under net/http's cap", "/ok?q=" + strings.Repeat("x", 66<<10), "", 414, `{"error":"uri_too_long"}`},
		{"1 MiB request line: net/http refuses", "/ok?q=" + strings.Repeat("x", 1<<20-32), "", 431, "431 Request Header Fields Too Large"},
		{"unknown route too", "/nowhere?q=" + strings.Repeat("x", 60<<10), "", 414, `{"error":"uri_too_long"}`},
		{"headers under the limit", "/ok", servertest.Headers(server.MaxHeaderBlock - 9<<10), 200, "ok"},
		{"headers 40 KB", "/ok", servertest.Headers(40 << 10), 431, `{"error":"request_header_fields_too_large"}`},
		{"header block just under net/http's cap", "/ok", servertest.Headers(60 << 10), 431, `{"error":"request_header_fields_too_large"}`},
		{"1 MiB header block: net/http refuses", "/ok", servertest.Headers(1<<20 - 8<<10), 431, "431 Request Header Fields Too Large"},
		{"one 60 KB header", "/ok", "X-Big: " + strings.Repeat("b", 60<<10) + "\r\n", 431, `{"error":"request_header_fields_too_large"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := servertest.Raw(t, addr, http.MethodGet, tt.target, tt.extra)
			if res.Status != tt.status || string(res.Body) != tt.body {
				t.Fatalf("%d %q, want %d %q", res.Status, res.Body, tt.status, tt.body)
			}
			if res.Status != 200 && !strings.HasPrefix(tt.body, "431 ") && !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("Content-Type %q", res.Header.Get("Content-Type"))
			}
		})
	}
}

// A service that sets no body limit takes exactly 1 MiB, and one byte more is 413.
func TestDefaultBodyLimitIsOneMiB(t *testing.T) {
	e := server.New(server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	e.POST("/echo", func(c echo.Context) error {
		n, err := io.Copy(io.Discard, c.Request().Body)
		if err != nil {
			return err
		}
		return c.String(http.StatusOK, strconv.FormatInt(n, 10))
	})
	srv := httptest.NewServer(e)
	defer srv.Close()
	for _, tt := range []struct {
		size   int
		status int
	}{
		{1 << 20, http.StatusOK},
		{1<<20 + 1, http.StatusRequestEntityTooLarge},
		{1_000_001, http.StatusOK}, // past Echo's decimal "1M"
	} {
		res, err := http.Post(srv.URL+"/echo", "application/octet-stream", strings.NewReader(strings.Repeat("x", tt.size)))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tt.status {
			t.Errorf("%d bytes: %d %s, want %d", tt.size, res.StatusCode, body, tt.status)
		}
	}
}
