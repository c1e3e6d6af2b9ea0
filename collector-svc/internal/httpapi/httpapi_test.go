package httpapi

import (
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"forumstats.local/shared/server"
	"forumstats.local/shared/testutil/doctest"
)

// The probes answer; every refusal is {"error": code} in JSON, HEAD's without a body.
func TestAnswers(t *testing.T) {
	h := New(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for _, tt := range []struct {
		method, target string
		contentLength  int64
		status         int
		body, allow    string
	}{
		{"GET", "/healthz", 0, 200, `{"status":"ok"}`, ""},
		{"GET", "/readyz", 0, 200, `"status":"ok"`, ""},
		{"GET", "/nowhere", 0, 404, `{"error":"not_found"}`, ""},
		{"HEAD", "/nowhere", 0, 404, ``, ""},
		{"POST", "/healthz", 0, 405, `{"error":"method_not_allowed"}`, "GET, HEAD"},
		{"GET", "/healthz", 2_000_000, 413, `{"error":"request_entity_too_large"}`, ""},
		{"GET", "/healthz?q=" + strings.Repeat("x", server.MaxRequestTarget), 0, 414, `{"error":"uri_too_long"}`, ""},
	} {
		req := httptest.NewRequest(tt.method, tt.target, nil)
		req.ContentLength = tt.contentLength
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		name := fmt.Sprintf("%s %.40s", tt.method, tt.target)
		if rec.Code != tt.status || !strings.Contains(rec.Body.String(), tt.body) || (tt.body == "" && rec.Body.Len() > 0) {
			t.Errorf("%s: %d %q, want %d %q", name, rec.Code, rec.Body, tt.status, tt.body)
		}
		if tt.status >= 400 && rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: Content-Type %q", name, rec.Header().Get("Content-Type"))
		}
		if got := rec.Header().Get("Allow"); got != tt.allow {
			t.Errorf("%s: Allow %q, want %q", name, got, tt.allow)
		}
	}
}

// TestREADMEErrorsMatchTable: the error list of collector-svc/README.md (section "HTTP") holds
// exactly the table's answers, in both directions.
func TestREADMEErrorsMatchTable(t *testing.T) {
	table := []string{strconv.Itoa(specInternal.status) + " " + specInternal.code}
	for _, s := range statusTable {
		table = append(table, strconv.Itoa(s.status)+" "+s.code)
	}
	doctest.Diff(t, "collector-svc/README.md's error list", doctest.ErrorRows(doctest.Section(t, "../../README.md", "## HTTP")), table)
	if len(allCodes()) != len(table) {
		t.Errorf("a code with two statuses: %v", table)
	}
}
