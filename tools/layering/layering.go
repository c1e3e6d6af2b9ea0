// Package layering states which packages of the workspace may import which libraries, and checks
// it over `go list`. The one rule so far: the HTTP router (Echo) is known only to the HTTP layers,
// each service's internal/httpapi and shared/server (their tests included), so that moving to
// another major version of it touches those packages and nothing else.
package layering

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
)

// Echo is the import path prefix of the HTTP router.
const Echo = "github.com/labstack/echo"

// Package is what the rule reads of a package: its path and its imports, the test files' apart.
type Package struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// HTTPLayer reports whether the package at path may import Echo: a service's internal/httpapi or
// shared/server, and the packages under them.
func HTTPLayer(path string) bool {
	for _, layer := range []string{"forumstats.local/shared/server"} {
		if path == layer || strings.HasPrefix(path, layer+"/") {
			return true
		}
	}
	i := strings.Index(path, "/internal/httpapi")
	return i >= 0 && (len(path) == i+len("/internal/httpapi") || path[i+len("/internal/httpapi")] == '/')
}

// Violations lists, sorted, each package outside the HTTP layers that imports Echo (in its code
// or its tests), with the import.
func Violations(pkgs []Package) []string {
	var out []string
	for _, p := range pkgs {
		if HTTPLayer(p.ImportPath) {
			continue
		}
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			if imp == Echo || strings.HasPrefix(imp, Echo+"/") {
				out = append(out, p.ImportPath+" imports "+imp)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// List runs `go list` in the workspace at root over every package of the modules named
// forumstats.local/..., built with tags (comma-separated; "" for none).
func List(root, tags string) ([]Package, error) {
	cmd := exec.Command("go", "list", "-e", "-tags", tags, "-json=ImportPath,Imports,TestImports,XTestImports", "forumstats.local/...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, stderr.Bytes())
	}
	var pkgs []Package
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p Package
		if err := dec.Decode(&p); err == io.EOF {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
}
