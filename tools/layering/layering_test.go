package layering

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestHTTPLayer(t *testing.T) {
	for _, tt := range []struct {
		path string
		want bool
	}{
		{"forumstats.local/forum-svc/internal/httpapi", true},
		{"forumstats.local/stats-svc/internal/httpapi", true},
		{"forumstats.local/collector-svc/internal/httpapi", true},
		{"forumstats.local/shared/server", true},
		{"forumstats.local/shared/server/servertest", true},
		{"forumstats.local/shared/serverless", false},
		{"forumstats.local/stats-svc/internal/httpapiextra", false},
		{"forumstats.local/stats-svc/internal/app", false},
		{"forumstats.local/stats-svc/internal/web", false},
		{"forumstats.local/tools/bench/stats", false},
	} {
		if got := HTTPLayer(tt.path); got != tt.want {
			t.Errorf("HTTPLayer(%s) = %v, want %v", tt.path, got, tt.want)
		}
	}
}

func TestViolations(t *testing.T) {
	pkgs := []Package{
		{ImportPath: "forumstats.local/stats-svc/internal/httpapi", Imports: []string{Echo + "/v4"}, XTestImports: []string{Echo + "/v4"}},
		{ImportPath: "forumstats.local/shared/server", Imports: []string{Echo + "/v4", Echo + "/v4/middleware"}},
		{ImportPath: "forumstats.local/stats-svc/internal/web", Imports: []string{"net/http"}, TestImports: []string{Echo + "/v5"}},
		{ImportPath: "forumstats.local/tools/bench/stats", Imports: []string{Echo + "/v4", "net/http"}},
		{ImportPath: "forumstats.local/forum-svc/internal/app", Imports: []string{"github.com/labstack/echoes"}},
	}
	want := []string{
		"forumstats.local/stats-svc/internal/web imports " + Echo + "/v5",
		"forumstats.local/tools/bench/stats imports " + Echo + "/v4",
	}
	if got := Violations(pkgs); !slices.Equal(got, want) {
		t.Fatalf("Violations = %q, want %q", got, want)
	}
}

// workspace is the directory of go.work above this package.
func workspace(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for ; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		if filepath.Dir(dir) == dir {
			t.Fatal("no go.work above the test's directory")
		}
	}
}

// TestEchoStaysInTheHTTPLayers: no package of the workspace outside the HTTP layers imports
// Echo, in any build of it (the systest's fault and load tags included).
func TestEchoStaysInTheHTTPLayers(t *testing.T) {
	root := workspace(t)
	for _, tags := range []string{"", "faults,load"} {
		pkgs, err := List(root, tags)
		if err != nil {
			t.Fatal(err)
		}
		if len(pkgs) < 40 {
			t.Fatalf("go list found only %d packages", len(pkgs))
		}
		layers := 0
		for _, p := range pkgs {
			if HTTPLayer(p.ImportPath) {
				layers++
			}
		}
		if layers < 4 {
			t.Fatalf("only %d HTTP layer packages among %d: the module paths changed?", layers, len(pkgs))
		}
		for _, v := range Violations(pkgs) {
			t.Errorf("tags %q: %s (the router belongs to */internal/httpapi and shared/server)", tags, v)
		}
	}
}
