package server_test

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"forumstats.local/shared/config"
	"forumstats.local/shared/server"
	"forumstats.local/shared/server/servertest"
	"forumstats.local/shared/testutil"
)

// envelope answers every error as {"error":"<status>"} and records the statuses, as a service's
// error handler would.
func envelope(err error, c echo.Context) {
	code := http.StatusInternalServerError
	if he, ok := err.(*echo.HTTPError); ok {
		code = he.Code
	}
	_ = c.JSONBlob(code, []byte(fmt.Sprintf(`{"error":"%d"}`, code)))
}

// served is an Echo of shared/server with a form route that reads its body, behind Serve.
func served(t *testing.T, httpCfg config.HTTP) (addr string, logs *testutil.Buffer) {
	logs = &testutil.Buffer{}
	e := server.New(server.Options{
		Logger:       slog.New(slog.NewJSONHandler(logs, nil)),
		ErrorHandler: envelope,
		HTTP:         httpCfg,
	})
	e.POST("/form", func(c echo.Context) error {
		b, err := io.ReadAll(c.Request().Body)
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		return c.String(http.StatusOK, "got "+string(b))
	})
	e.GET("/ok", func(c echo.Context) error { return c.String(http.StatusOK, "ok") })
	addr, _ = servertest.Serve(t, e, httpCfg)
	return addr, logs
}

// exchange writes raw on a new connection and reads every answer until the server closes it
// (or 5 s pass): the statuses and bodies in order, and whether the server closed.
func exchange(t *testing.T, addr, raw string) (answers []string, closed bool) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(conn)
	for {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			var ne net.Error
			return answers, !(errorsAs(err, &ne) && ne.Timeout())
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		answers = append(answers, fmt.Sprintf("%d %s", res.StatusCode, b))
	}
}

func errorsAs(err error, ne *net.Error) bool {
	e, ok := err.(net.Error)
	if ok {
		*ne = e
	}
	return ok
}

// A request framed two ways is refused 400 and its connection closed: the request hidden in
// its body is never answered. Both framings alone are served, pipelined, on one connection.
func TestAmbiguousFramingRefused(t *testing.T) {
	addr, _ := served(t, config.HTTP{})
	const hidden = "GET /ok HTTP/1.1\r\nHost: a\r\n\r\n"
	chunk := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(hidden), hidden)
	tests := []struct {
		name    string
		raw     string
		answers []string
		closed  bool
	}{
		{"chunked and Content-Length", "POST /form HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + hidden,
			[]string{`400 {"error":"400"}`}, true},
		{"Content-Length first, smuggled head after the chunks", "POST /form HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 48\r\n\r\n0\r\n\r\n" + hidden,
			[]string{`400 {"error":"400"}`}, true},
		{"chunked on HTTP/1.0 keep-alive", "POST /form HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk,
			[]string{`400 {"error":"400"}`}, true},
		{"chunked alone, pipelined", "POST /form HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + hidden + "GET /ok HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
			[]string{"200 got " + hidden, "200 ok", "200 ok"}, true},
		{"Content-Length alone, pipelined", "POST /form HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nhi" + hidden,
			[]string{"200 got hi", "200 ok"}, false},
		{"OPTIONS * keeps the verdicts in step", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\nPOST /form HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
			[]string{`404 {"error":"404"}`, `400 {"error":"400"}`}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			answers, closed := exchange(t, addr, tt.raw)
			if strings.Join(answers, "|") != strings.Join(tt.answers, "|") || closed != tt.closed {
				t.Fatalf("answers %q closed %v, want %q %v", answers, closed, tt.answers, tt.closed)
			}
		})
	}
}

// A body's reading errors are the client's: 400 for malformed chunked framing and for a body cut
// short, 408 for one slower than the read timeout; logged at info, never as an error.
func TestClientBodyErrors(t *testing.T) {
	addr, logs := served(t, config.HTTP{ReadTimeout: 300 * time.Millisecond})
	tests := []struct {
		name   string
		head   string
		body   string
		hangUp bool
		status int
	}{
		{"chunk size past 64 bits", "Transfer-Encoding: chunked", "FFFFFFFFFFFFFFFFF1\r\nx\r\n0\r\n\r\n", false, 400},
		{"chunk data without its CRLF", "Transfer-Encoding: chunked", "1\r\nxy\r\n0\r\n\r\n", false, 400},
		{"trickled past the read timeout", "Content-Length: 10", "abc", false, 408},
		{"hang-up mid-body", "Content-Length: 10", "abc", true, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			id := fmt.Sprintf("body-%d", rand.Uint32())
			fmt.Fprintf(conn, "POST /form HTTP/1.1\r\nHost: a\r\nX-Request-ID: %s\r\n%s\r\n\r\n%s", id, tt.head, tt.body)
			if tt.hangUp {
				conn.(*net.TCPConn).CloseWrite()
			} else {
				conn.SetReadDeadline(time.Now().Add(5 * time.Second))
				res, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(res.Body)
				if want := fmt.Sprintf(`{"error":"%d"}`, tt.status); res.StatusCode != tt.status || string(b) != want {
					t.Fatalf("%d %s, want %d %s", res.StatusCode, b, tt.status, want)
				}
			}
			line := waitLog(t, logs, `"msg":"request"`, id)
			if !strings.Contains(line, fmt.Sprintf(`"status":%d`, tt.status)) || !strings.Contains(line, `"level":"INFO"`) {
				t.Fatalf("access line %s, want status %d at INFO", line, tt.status)
			}
			if strings.Contains(logs.String(), `"level":"ERROR"`) {
				t.Fatalf("an error was logged: %s", logs)
			}
		})
	}
}

// waitLog returns the log line holding both strings, waiting up to 5 s for it.
func waitLog(t *testing.T, logs *testutil.Buffer, a, b string) string {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, a) && strings.Contains(l, b) {
				return l
			}
		}
	}
	t.Fatalf("no log line with %s and %s in %s", a, b, logs)
	return ""
}

// X-Request-ID is kept only as 1 to 64 characters of [A-Za-z0-9._-]; otherwise, and when
// absent, the id is 32 random hex digits, different each time.
func TestRequestID(t *testing.T) {
	e := server.New(server.Options{Logger: slog.New(slog.DiscardHandler)})
	get := func(id string) string {
		req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		if id != "" {
			req.Header.Set(echo.HeaderXRequestID, id)
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		return rec.Header().Get(echo.HeaderXRequestID)
	}
	tests := []struct {
		name, in string
		kept     bool
	}{
		{"absent", "", false},
		{"letters, digits, dot, dash, underscore", "Ab9._-z", true},
		{"64 characters", strings.Repeat("a", 64), true},
		{"65 characters", strings.Repeat("a", 65), false},
		{"space", "a b", false},
		{"quote", `a"b`, false},
		{"slash", "a/b", false},
		{"braces", "{id}", false},
		{"non-ASCII", "é", false},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := get(tt.in)
			if tt.kept {
				if got != tt.in {
					t.Fatalf("id %q, want it kept", got)
				}
				return
			}
			if len(got) != 32 || strings.Trim(got, "0123456789abcdef") != "" || seen[got] {
				t.Fatalf("generated id %q: want 32 new hex digits", got)
			}
			seen[got] = true
		})
	}
	// Random, not a counter: two ids in a row share no long prefix.
	a, b := get(""), get("")
	if a[:16] == b[:16] {
		t.Fatalf("ids %s and %s share their first half", a, b)
	}
}

// c.RealIP() is the connection's peer unless TRUSTED_PROXIES lists it; then X-Forwarded-For is
// read from the right, skipping trusted hops.
func TestClientAddress(t *testing.T) {
	prefixes := func(s ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, p := range s {
			out = append(out, netip.MustParsePrefix(p))
		}
		return out
	}
	tests := []struct {
		name    string
		trusted []netip.Prefix
		peer    string
		xff     string
		want    string
	}{
		{"no proxies: the peer, whatever the header", nil, "10.0.0.1:5000", "1.2.3.4", "10.0.0.1"},
		{"no proxies: loopback is not trusted either", nil, "127.0.0.1:5000", "1.2.3.4", "127.0.0.1"},
		{"untrusted peer", prefixes("10.0.0.0/8"), "192.0.2.7:5000", "1.2.3.4", "192.0.2.7"},
		{"trusted peer, one hop", prefixes("10.0.0.0/8"), "10.1.2.3:5000", "1.2.3.4", "1.2.3.4"},
		{"rightmost untrusted hop, spoofed left ignored", prefixes("10.0.0.0/8"), "10.1.2.3:5000", "6.6.6.6, 1.2.3.4, 10.9.9.9", "1.2.3.4"},
		{"private address not listed is a client", prefixes("10.0.0.5/32"), "10.0.0.5:5000", "192.168.1.1", "192.168.1.1"},
		{"trusted peer, no header", prefixes("10.0.0.0/8"), "10.1.2.3:5000", "", "10.1.2.3"},
		{"IPv6 peer", prefixes("2001:db8::/32"), "[2001:db8::1]:5000", "2001:db8:ffff::1, 203.0.113.9", "203.0.113.9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := server.New(server.Options{Logger: slog.New(slog.DiscardHandler), HTTP: config.HTTP{TrustedProxies: tt.trusted}})
			e.GET("/ip", func(c echo.Context) error { return c.String(http.StatusOK, c.RealIP()) })
			req := httptest.NewRequest(http.MethodGet, "/ip", nil)
			req.RemoteAddr = tt.peer
			if tt.xff != "" {
				req.Header.Set("X-Forwarded-For", tt.xff)
			}
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, req)
			if rec.Body.String() != tt.want {
				t.Fatalf("RealIP %q, want %q", rec.Body, tt.want)
			}
		})
	}
}

// Invented methods count under one label, whatever their number: the series and /metrics stay
// bounded; a megabyte method and path give a bounded log line.
func TestRequestLabelsAndLogsBounded(t *testing.T) {
	logs := &testutil.Buffer{}
	e := server.New(server.Options{Logger: slog.New(slog.NewJSONHandler(logs, nil)), ErrorHandler: envelope})
	metrics := func() string {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return rec.Body.String()
	}
	send := func(method, path string) {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Method, req.URL.Path = method, path
		e.ServeHTTP(httptest.NewRecorder(), req)
	}
	send("BREW", "/nowhere")
	metrics() // its own series
	before := metrics()
	for i := range 500 {
		send(fmt.Sprintf("M%dX%d", i, rand.Uint64()), fmt.Sprintf("/nowhere/%d", i))
	}
	after := metrics()
	if n, m := strings.Count(before, "\nhttp_request"), strings.Count(after, "\nhttp_request"); n != m {
		t.Fatalf("500 invented methods and paths took the http_request* lines from %d to %d", n, m)
	}
	if !strings.Contains(after, `method="other"`) {
		t.Fatalf(`no method="other" series in %s`, after)
	}
	long := strings.Repeat("M", 1<<20)
	send(long, "/"+strings.Repeat("p", 1<<20))
	for _, l := range strings.Split(logs.String(), "\n") {
		if len(l) > 2<<10 {
			t.Fatalf("a log line of %d bytes", len(l))
		}
	}
	if !strings.Contains(logs.String(), "[cut ") {
		t.Fatal("the long method and path were not marked cut")
	}
}
