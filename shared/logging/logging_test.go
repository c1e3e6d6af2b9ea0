package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// LOG_LEVEL and LOG_FORMAT (README.md, Configuration): the level filters, the format shapes the
// line, and an unknown value of either is refused.
func TestNew(t *testing.T) {
	levels := []struct {
		level  string
		logged []string // of debug, info, warn, error
	}{
		{"debug", []string{"debug", "info", "warn", "error"}},
		{"", []string{"info", "warn", "error"}},
		{"info", []string{"info", "warn", "error"}},
		{"WARN", []string{"warn", "error"}},
		{"warning", []string{"warn", "error"}},
		{"error", []string{"error"}},
	}
	for _, tt := range levels {
		var buf bytes.Buffer
		log, err := New(&buf, tt.level, "json")
		if err != nil {
			t.Fatalf("level %q: %v", tt.level, err)
		}
		log.Debug("debug")
		log.Info("info")
		log.Warn("warn")
		log.Error("error")
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var rec struct{ Msg string }
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("level %q: line %q is not JSON: %v", tt.level, line, err)
			}
			got = append(got, rec.Msg)
		}
		if strings.Join(got, ",") != strings.Join(tt.logged, ",") {
			t.Errorf("level %q logged %v, want %v", tt.level, got, tt.logged)
		}
	}

	var buf bytes.Buffer
	log, err := New(&buf, "info", "text")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("hello", "k", "v")
	if line := buf.String(); !strings.Contains(line, "msg=hello") || !strings.Contains(line, "k=v") || strings.HasPrefix(line, "{") {
		t.Errorf("text format wrote %q", line)
	}

	for _, bad := range [][2]string{{"verbose", "json"}, {"info", "xml"}} {
		if _, err := New(&buf, bad[0], bad[1]); err == nil {
			t.Errorf("New(%q, %q) accepted", bad[0], bad[1])
		}
	}
}
