package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The service programs, by their command package in the workspace.
const (
	Forum     = "forum-svc"
	Stats     = "stats-svc"
	Collector = "collector-svc"
)

// WorkspaceRoot is the directory of the go.work file in use.
func WorkspaceRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOWORK").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOWORK: %w", err)
	}
	w := strings.TrimSpace(string(out))
	if w == "" || w == "off" {
		return "", errors.New("not inside the Go workspace (go env GOWORK is empty)")
	}
	return filepath.Dir(w), nil
}

// Build compiles the named services (forumstats.local/<name>/cmd/<name>) into dir and returns
// their paths by name. BIN_DIR, when set, holds prebuilt binaries and nothing is compiled.
func Build(ctx context.Context, dir string, names ...string) (map[string]string, error) {
	out := map[string]string{}
	if pre := os.Getenv("BIN_DIR"); pre != "" {
		for _, n := range names {
			p := filepath.Join(pre, n)
			if _, err := os.Stat(p); err != nil {
				return nil, fmt.Errorf("BIN_DIR: %w", err)
			}
			out[n] = p
		}
		return out, nil
	}
	root, err := WorkspaceRoot()
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		bin := filepath.Join(dir, n)
		ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "forumstats.local/"+n+"/cmd/"+n)
		cmd.Dir = root
		b, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("build %s: %w\n%s", n, err, b)
		}
		out[n] = bin
	}
	return out, nil
}
