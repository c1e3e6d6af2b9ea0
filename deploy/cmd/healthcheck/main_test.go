package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/readyz":
			w.WriteHeader(http.StatusOK)
		case "/slow":
			time.Sleep(200 * time.Millisecond)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	tests := []struct {
		name    string
		url     string
		timeout time.Duration
		ok      bool
	}{
		{"2xx", srv.URL + "/readyz", time.Second, true},
		{"503", srv.URL + "/down", time.Second, false},
		{"connection refused", closedURL + "/readyz", time.Second, false},
		{"timeout", srv.URL + "/slow", 50 * time.Millisecond, false},
		{"bad url", "://nope", time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			err := check(ctx, srv.Client(), tt.url)
			if (err == nil) != tt.ok {
				t.Fatalf("check(%q) = %v, want ok=%v", tt.url, err, tt.ok)
			}
		})
	}
}
