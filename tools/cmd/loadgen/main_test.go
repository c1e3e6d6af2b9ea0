package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-K") != "v" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/boom" {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	targets := filepath.Join(t.TempDir(), "t.txt")
	if err := os.WriteFile(targets, []byte("HEAD "+srv.URL+"/ok\n@expect 200\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"-c", "2", "-d", "100ms", "-H", "X-K: v", "-url", srv.URL + "/ok", "-targets", targets}, 0, "errors: 0"},
		{[]string{"-c", "2", "-d", "100ms", "-H", "X-K: v", "-url", srv.URL + "/boom"}, 1, "5xx"},
		{[]string{"-c", "2", "-d", "100ms", "-url", srv.URL + "/ok"}, 0, "401="},                   // 401 is below 500
		{[]string{"-c", "2", "-d", "100ms", "-expect", "200", "-url", srv.URL + "/ok"}, 1, "401="}, // unless -expect says
		{[]string{"-c", "2", "-d", "100ms", "-json", "-H", "X-K: v", "-url", srv.URL + "/ok"}, 0, `"p99_ms"`},
		{[]string{"-d", "1s"}, 2, ""},
		{[]string{"-url", "not a url"}, 2, ""},
		{[]string{"-c", "0", "-url", srv.URL}, 2, ""},
		{[]string{"-H", "nocolon", "-url", srv.URL}, 2, ""},
	}
	for _, tt := range tests {
		var out strings.Builder
		code, _ := run(tt.args, &out)
		if code != tt.code || !strings.Contains(out.String(), tt.out) {
			t.Errorf("%v: exit %d, output %q; want %d and %q", tt.args, code, out.String(), tt.code, tt.out)
		}
	}
}
