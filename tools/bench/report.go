// Package bench is what the three service benchmarks (tools/bench/forum, stats, collector) share:
// the report of their figures, each beside the ceiling or target it is measured against. The
// benchmarks drive the built service binaries (tools/stack) on databases made by
// testutil.CreateDatabase, so that they measure what ships.
package bench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Figure is one measured number and what it is held to.
type Figure struct {
	Name    string // what was measured
	Value   string // the measurement, formatted with its unit
	Against string // the ceiling or target, formatted ("≥ 0.50", "≤ 100 ms", "pgbench 15,600 tps")
	OK      bool   // whether Value meets Against
}

// Report is a benchmark's figures, printed as one table.
type Report struct {
	Title   string
	Figures []Figure
}

// Add appends a figure.
func (r *Report) Add(name, value, against string, ok bool) {
	r.Figures = append(r.Figures, Figure{Name: name, Value: value, Against: against, OK: ok})
}

// Failed lists the names of the figures that missed their target.
func (r *Report) Failed() []string {
	var out []string
	for _, f := range r.Figures {
		if !f.OK {
			out = append(out, f.Name)
		}
	}
	return out
}

// Print writes the table: figure, value, target, verdict.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "\n== %s\n", r.Title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tmeasured\tagainst\t")
	for _, f := range r.Figures {
		verdict := "ok"
		if !f.OK {
			verdict = "MISSED"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Name, f.Value, f.Against, verdict)
	}
	tw.Flush()
}

// Err is nil when every figure met its target, else an error naming those that did not; a
// benchmark's main exits non-zero on it, so that `make bench` fails on a missed target.
func (r *Report) Err() error {
	if failed := r.Failed(); len(failed) > 0 {
		return fmt.Errorf("%s: missed: %s", r.Title, strings.Join(failed, "; "))
	}
	return nil
}
