package server_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"forumstats.local/shared/config"
	"forumstats.local/shared/server"
	"forumstats.local/shared/server/servertest"
)

func TestHealthReadyMetrics(t *testing.T) {
	var failing bool
	e := server.New(server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Ready: []server.Check{{
		Name: "db", Fn: func(context.Context) error {
			if failing {
				return errors.New("down")
			}
			return nil
		},
	}}})
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	if rec := get("/healthz"); rec.Code != 200 {
		t.Fatalf("healthz %d", rec.Code)
	}
	if rec := get("/readyz"); rec.Code != 200 {
		t.Fatalf("readyz %d", rec.Code)
	}
	failing = true
	if rec := get("/readyz"); rec.Code != 503 || !strings.Contains(rec.Body.String(), "unavailable") {
		t.Fatalf("readyz with failing check: %d %s", rec.Code, rec.Body)
	}
	if rec := get("/metrics"); rec.Code != 200 || !strings.Contains(rec.Body.String(), "http_requests_total") {
		t.Fatalf("metrics %d", rec.Code)
	}
	if rec := get("/healthz"); rec.Header().Get(echo.HeaderXRequestID) == "" {
		t.Fatal("no request id")
	}
}

func TestGracefulShutdownFinishesInFlight(t *testing.T) {
	e := server.New(server.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	started := make(chan struct{})
	e.GET("/slow", func(c echo.Context) error {
		close(started)
		time.Sleep(300 * time.Millisecond)
		return c.String(200, "done")
	})
	addr, stop := servertest.Serve(t, e, config.HTTP{})
	result := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + addr + "/slow")
		if err != nil {
			result <- "error: " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		result <- string(b)
	}()
	<-started
	// stop returns once Serve has: after the shutdown waited for the request in flight.
	if err := stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	if got := <-result; got != "done" {
		t.Fatalf("in-flight request got %q", got)
	}
}
