package bbcode

import (
	"strings"
	"testing"
	"time"
)

// Messages built to be slow (the longest a forum allows, 65,536 characters, of one pattern)
// render in time proportional to their length: each within a generous bound.
func TestRenderWorstCases(t *testing.T) {
	const n = 65536
	fill := func(p string) string { return strings.Repeat(p, n/len(p)) }
	for _, in := range []string{
		fill("["), fill("[b]"), fill("[/b]"), fill("[code]"), fill("[url]"), fill("[img]"), fill("[*]"),
		fill("[list]"), fill("[quote=a]"), fill("[b]x[/i]"), fill("[b][i][/b]"), fill("\n"), fill("https://a.b/"),
		fill("[url=https://a.b/]"), "[list]" + fill("[*]x"), strings.Repeat("[b]", 40) + fill("[/i]"),
		fill("[color=red]"), "[code]" + fill("[code]x[/code"), "[" + strings.Repeat("x", n),
	} {
		start := time.Now()
		out := Render(in)
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%q...: %v", in[:20], d)
		}
		if len(out) > 40*len(in) {
			t.Errorf("%q...: %d bytes out of %d", in[:20], len(out), len(in))
		}
	}
}
