package xfclient_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The committed clients are what their //go:generate line writes today: the test runs the line of
// each package's generate.go again, into a temporary file (its -o), and compares. So a change of
// either document, of a configuration or of the generator's version that was not followed by
// `go generate` fails here instead of leaving a stale client behind.
func TestGeneratedClientsAreCurrent(t *testing.T) {
	for _, pkg := range []string{"xenforo", "forum"} {
		t.Run(pkg, func(t *testing.T) {
			args := generateLine(t, filepath.Join(pkg, "generate.go"))
			out := filepath.Join(t.TempDir(), "client.gen.go")
			committed := ""
			for i, a := range args {
				if a == "-o" && i+1 < len(args) {
					committed = filepath.Join(pkg, args[i+1])
					args[i+1] = out
				}
			}
			if committed == "" {
				t.Fatalf("%s/generate.go: the //go:generate line names no output (-o FILE): %q", pkg, args)
			}
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Dir = pkg
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
			}
			want, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(committed)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s is not what the generator writes (%s): run `go generate ./internal/httpapi/xfclient/...` from forum-svc/ and commit the result",
					committed, firstDifference(got, want))
			}
		})
	}
}

// generateLine is the command of the one //go:generate line of the file at path, split on blanks
// (the lines hold no quoted argument).
func generateLine(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines [][]string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if rest, ok := strings.CutPrefix(sc.Text(), "//go:generate "); ok {
			lines = append(lines, strings.Fields(rest))
		}
	}
	if len(lines) != 1 || len(lines[0]) == 0 {
		t.Fatalf("%s: want one //go:generate line, found %d", path, len(lines))
	}
	return lines[0]
}

// firstDifference names the first line where got and want differ.
func firstDifference(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d: committed %q, generated %q", i+1, gl, wl)
		}
	}
	return "same lines, other bytes"
}
