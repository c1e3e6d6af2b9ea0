// Package doctest reads what a service's tests hold its README against: the text of a section
// and the rows of an error list. A README is checked against the code's error table rather than
// trusted, so that a code added, removed or moved to another status fails a test until the
// README says so too.
package doctest

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Section is the text of the Markdown file at path under the first heading that starts with
// heading (for example "## Errors" or "### stats-svc"), up to the next heading of the same or a
// higher level. Lines inside fenced code blocks are never headings: a shell comment in an example
// does not end the section. It fails t when the file or the heading is missing.
func Section(t testing.TB, path, heading string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text, ok := SectionOf(string(b), heading)
	if !ok {
		t.Fatalf("%s has no heading %q", path, heading)
	}
	return text
}

// SectionOf is Section over text: the lines after the heading line, and whether there is one.
func SectionOf(text, heading string) (string, bool) {
	want := level(heading)
	if want == 0 {
		return "", false
	}
	lines := strings.SplitAfter(text, "\n")
	start, fenced := -1, false
	for i, line := range lines {
		trimmed := strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if start < 0 {
			if trimmed == heading || strings.HasPrefix(trimmed, heading+" ") {
				start = i + 1
			}
			continue
		}
		if l := level(trimmed); l > 0 && l <= want {
			return strings.Join(lines[start:i], ""), true
		}
	}
	if start < 0 {
		return "", false
	}
	return strings.Join(lines[start:], ""), true
}

// level is the level of a Markdown heading line ("## x": 2), 0 for any other line.
func level(line string) int {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n == len(line) || line[n] != ' ' {
		return 0
	}
	return n
}

// errorRow is a row of an error list: | status | `code` | when |.
var errorRow = regexp.MustCompile("(?m)^\\| (\\d{3}) \\| `([a-z_]+)` \\|")

// ErrorRows is every answer an error list in text names, as "status code", sorted and without
// repeats.
func ErrorRows(text string) []string {
	var out []string
	for _, m := range errorRow.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1]+" "+m[2])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Diff fails t for each answer of got that table lacks and each of table that got lacks; where
// names what got was read from.
func Diff(t testing.TB, where string, got, table []string) {
	t.Helper()
	for _, a := range got {
		if !slices.Contains(table, a) {
			t.Errorf("%s has %q, which the error table does not answer", where, a)
		}
	}
	for _, a := range table {
		if !slices.Contains(got, a) {
			t.Errorf("%s lacks %q, which the error table answers", where, a)
		}
	}
}

// NamesEveryCode fails t for each code that text does not name in backticks; where names the
// text.
func NamesEveryCode(t testing.TB, where, text string, codes []string) {
	t.Helper()
	for _, c := range codes {
		if !strings.Contains(text, "`"+c+"`") {
			t.Errorf("%s does not name the error code `%s`", where, c)
		}
	}
}
