package doctest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const readme = "# svc\n" +
	"intro\n" +
	"## Errors\n" +
	"| status | code | when |\n" +
	"| - | - | - |\n" +
	"| 400 | `bad_request` | framing |\n" +
	"| 404 | `not_found` | no route |\n" +
	"| 404 | `not_found` | listed twice |\n" +
	"```sh\n" +
	"## not a heading, a comment in an example\n" +
	"```\n" +
	"### Details\n" +
	"| 500 | `internal_error` | anything |\n" +
	"## Errors of the worker\n" +
	"| 503 | `busy` | elsewhere |\n" +
	"# Appendix\n" +
	"## Last\n" +
	"tail"

func TestSectionOf(t *testing.T) {
	for _, tt := range []struct {
		heading, want string
		ok            bool
	}{
		{"## Errors", "| status | code | when |\n| - | - | - |\n| 400 | `bad_request` | framing |\n" +
			"| 404 | `not_found` | no route |\n| 404 | `not_found` | listed twice |\n" +
			"```sh\n## not a heading, a comment in an example\n```\n### Details\n| 500 | `internal_error` | anything |\n", true},
		{"### Details", "| 500 | `internal_error` | anything |\n", true},
		{"## Errors of the worker", "| 503 | `busy` | elsewhere |\n", true}, // "## Errors" ends before it
		{"## Last", "tail", true},
		{"# Appendix", "## Last\ntail", true}, // a lower level stays inside
		{"## Missing", "", false},
		{"## not a heading", "", false}, // inside the fence
		{"Errors", "", false},           // not a heading
		{"##Errors", "", false},
	} {
		got, ok := SectionOf(readme, tt.heading)
		if got != tt.want || ok != tt.ok {
			t.Errorf("SectionOf(%q) = %q, %v; want %q, %v", tt.heading, got, ok, tt.want, tt.ok)
		}
	}
}

func TestErrorRows(t *testing.T) {
	text, _ := SectionOf(readme, "## Errors")
	want := []string{"400 bad_request", "404 not_found", "500 internal_error"}
	if got := ErrorRows(text); !slices.Equal(got, want) {
		t.Errorf("ErrorRows = %q, want %q", got, want)
	}
	if got := ErrorRows("| 40 | `short` |\n|400|`tight`|\n| 400 | code | no backticks |\n"); len(got) != 0 {
		t.Errorf("ErrorRows of no rows = %q", got)
	}
}

func TestSectionReadsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(path, []byte(readme), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := Section(t, path, "### Details"); got != "| 500 | `internal_error` | anything |\n" {
		t.Errorf("Section = %q", got)
	}
	for _, tt := range []struct{ path, heading string }{
		{path, "## Missing"},
		{filepath.Join(t.TempDir(), "absent.md"), "## Errors"},
	} {
		r := &recorder{TB: t}
		func() {
			defer func() {
				if p := recover(); p != nil && p != r {
					panic(p)
				}
			}()
			Section(r, tt.path, tt.heading)
		}()
		if len(r.failures) != 1 {
			t.Errorf("Section(%s, %q): failures %q, want one", tt.path, tt.heading, r.failures)
		}
	}
}

func TestDiffAndNamesEveryCode(t *testing.T) {
	for _, tt := range []struct {
		name       string
		got, table []string
		failures   int
	}{
		{"equal", []string{"400 a", "404 b"}, []string{"400 a", "404 b"}, 0},
		{"one extra", []string{"400 a", "404 b"}, []string{"400 a"}, 1},
		{"one lacking", []string{"400 a"}, []string{"400 a", "404 b"}, 1},
		{"moved status", []string{"400 a"}, []string{"404 a"}, 2},
		{"both empty", nil, nil, 0},
	} {
		r := &recorder{TB: t}
		Diff(r, "README", tt.got, tt.table)
		if len(r.failures) != tt.failures {
			t.Errorf("Diff %s: failures %q, want %d", tt.name, r.failures, tt.failures)
		}
	}
	for _, tt := range []struct {
		text     string
		codes    []string
		failures int
	}{
		{"`a` and `b`", []string{"a", "b"}, 0},
		{"`a` and b", []string{"a", "b"}, 1},
		{"`ab`", []string{"a", "b"}, 2},
		{"", nil, 0},
	} {
		r := &recorder{TB: t}
		NamesEveryCode(r, "README", tt.text, tt.codes)
		if len(r.failures) != tt.failures {
			t.Errorf("NamesEveryCode(%q, %q): failures %q, want %d", tt.text, tt.codes, r.failures, tt.failures)
		}
	}
}

// FuzzSectionOf: whatever the text, a section found is a part of the text that follows the
// heading line, and holds no heading of the section's level or higher outside a fence.
func FuzzSectionOf(f *testing.F) {
	f.Add(readme, "## Errors")
	f.Add("## a\n```\n## b\n", "## a")
	f.Add("#\n# \n", "# ")
	f.Fuzz(func(t *testing.T, text, heading string) {
		got, ok := SectionOf(text, heading)
		if !ok {
			if got != "" {
				t.Fatalf("not found but %q", got)
			}
			return
		}
		if level(heading) == 0 {
			t.Fatalf("found a section under %q, which is not a heading", heading)
		}
		if !strings.Contains(text, got) {
			t.Fatalf("section %q is not part of the text", got)
		}
	})
}

// recorder is a testing.TB that keeps the failures it is told of instead of failing the test;
// Fatalf stops the helper the way testing does, by leaving its goroutine's call (a panic here).
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	panic(r)
}

func (r *recorder) Fatal(args ...any) {
	r.failures = append(r.failures, fmt.Sprint(args...))
	panic(r)
}
