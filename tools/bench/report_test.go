package bench

import (
	"strings"
	"testing"
)

func TestReport(t *testing.T) {
	var r Report
	r.Title = "demo"
	r.Add("ratio", "0.61", "≥ 0.50", true)
	if err := r.Err(); err != nil {
		t.Fatalf("all figures met: %v", err)
	}
	r.Add("latency", "120 ms", "≤ 100 ms", false)
	err := r.Err()
	if err == nil || !strings.Contains(err.Error(), "latency") || strings.Contains(err.Error(), "ratio") {
		t.Fatalf("Err = %v, want one naming only latency", err)
	}
	var b strings.Builder
	r.Print(&b)
	for _, want := range []string{"== demo", "0.61", "≥ 0.50", "MISSED"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("printed table lacks %q:\n%s", want, b.String())
		}
	}
}
