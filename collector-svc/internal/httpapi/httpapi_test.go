package httpapi

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"forumstats.local/shared/server"
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

// readmeRow is a row of the error list of collector-svc/README.md: | status | `code` | when |.
var readmeRow = regexp.MustCompile("(?m)^\\| (\\d{3}) \\| `([a-z_]+)` \\|")

// TestREADMEErrorsMatchTable: the error list of collector-svc/README.md (section "HTTP") holds
// exactly the table's answers, in both directions.
func TestREADMEErrorsMatchTable(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "\n## HTTP")
	if i < 0 {
		t.Fatal(`collector-svc/README.md has no "## HTTP"`)
	}
	text = text[i+1:]
	if j := strings.Index(text, "\n## "); j >= 0 {
		text = text[:j]
	}
	listed := map[string]bool{}
	for _, m := range readmeRow.FindAllStringSubmatch(text, -1) {
		listed[m[1]+" "+m[2]] = true
	}
	table := []string{strconv.Itoa(specInternal.status) + " " + specInternal.code}
	for _, s := range statusTable {
		table = append(table, strconv.Itoa(s.status)+" "+s.code)
	}
	for _, a := range slices.Sorted(maps.Keys(listed)) {
		if !slices.Contains(table, a) {
			t.Errorf("the README lists %q, which the error table does not answer", a)
		}
	}
	for _, a := range table {
		if !listed[a] {
			t.Errorf("the README lacks %q, which the error table answers", a)
		}
	}
	if len(allCodes()) != len(table) {
		t.Errorf("a code with two statuses: %v", table)
	}
}
