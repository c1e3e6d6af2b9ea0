// Package servertest runs a handler built by shared/server behind the real http.Server of
// server.Serve, for the tests that need what only a real server does: the head limits (414/431
// answered through the service's error handler), graceful shutdown.
package servertest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"forumstats.local/shared/config"
	"forumstats.local/shared/server"
)

// Serve serves h through server.Serve on a loopback port, with httpCfg (the configuration h was
// built with: its read timeout), and returns its address and a stop function, which shuts the
// server down gracefully and returns what server.Serve returned. The test's cleanup stops it when
// the test did not.
func Serve(t testing.TB, h http.Handler, httpCfg config.HTTP) (addr string, stop func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- server.Serve(ctx, h, ln, httpCfg, nil) }()
	stop = sync.OnceValue(func() error { cancel(); return <-served })
	t.Cleanup(func() { _ = stop() })
	return ln.Addr().String(), stop
}

// Response is an answer read by Raw, its body read in full.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Raw writes a request by hand, as net/http's client would refuse to send some of these (a
// megabyte request line or header block): method and target, then extra, header lines each
// ending in CRLF. It reads the answer as one to method (a HEAD's has no body).
func Raw(t testing.TB, addr, method, target, extra string) Response {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	// Written beside the reading: the server answers an oversized head before it has read it all.
	go fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: %s\r\n%sConnection: close\r\n\r\n", method, target, addr, extra)
	res, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	// A reset after an early answer may cut the read short; the caller compares the body.
	body, _ := io.ReadAll(res.Body)
	return Response{Status: res.StatusCode, Header: res.Header, Body: body}
}

// Headers builds a header block of at least n bytes in fields of 8 KiB.
func Headers(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "X-Fill-%d: %s\r\n", i, strings.Repeat("a", 8<<10))
	}
	return b.String()
}
