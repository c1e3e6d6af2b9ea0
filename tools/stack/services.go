package stack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Service is a running service binary.
type Service struct {
	*Proc
	Addr string // host:port
	URL  string // http://host:port
	Env  []string
}

// StartService runs `bin serve` on a free port with env (HTTP_ADDR is added) and waits until
// /healthz answers 200.
func StartService(name, bin string, env []string) (*Service, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	env = append([]string{"LOG_FORMAT=json", "HTTP_ADDR=" + addr}, env...)
	p, err := StartProc(name, bin, env, "serve")
	if err != nil {
		return nil, err
	}
	s := &Service{Proc: p, Addr: addr, URL: "http://" + addr, Env: env}
	if err := WaitHTTP(s.URL+"/healthz", 200, 60*time.Second, p); err != nil {
		p.Kill()
		return nil, err
	}
	return s, nil
}

// WriteTemp writes data to a new file in dir and returns its path.
func WriteTemp(dir, pattern string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return "", err
	}
	return f.Name(), nil
}

// SeedForum creates a database on pg, loads the fixture with `forum-svc seed` and returns the
// database URL.
func SeedForum(ctx context.Context, pg *Postgres, bin, dbName, dir string, fx ForumFixture) (string, error) {
	data, err := fx.SeedJSON()
	if err != nil {
		return "", err
	}
	return loadDatabase(ctx, pg, dbName, dir, data, bin, "seed")
}

// ImportStats creates a database on pg, loads the fixture with `collector-svc import` and
// returns the database URL.
func ImportStats(ctx context.Context, pg *Postgres, collectorBin, dbName, dir string, fx StatsFixture) (string, error) {
	data, err := fx.ImportJSON()
	if err != nil {
		return "", err
	}
	return loadDatabase(ctx, pg, dbName, dir, data, collectorBin, "import")
}

// loadDatabase creates database dbName on pg and loads data into it with `bin command --file F`.
func loadDatabase(ctx context.Context, pg *Postgres, dbName, dir string, data []byte, bin, command string) (string, error) {
	url, err := pg.CreateDatabase(ctx, dbName)
	if err != nil {
		return "", err
	}
	file, err := WriteTemp(dir, command+"-*.json", data)
	if err != nil {
		return "", err
	}
	if out, err := Run(ctx, 2*time.Minute, bin, []string{"DATABASE_URL=" + url}, command, "--file", file); err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s", filepath.Base(bin), command, err, out)
	}
	return url, nil
}

// Grep returns the lines of s that contain needle.
func Grep(s, needle string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, needle) {
			out = append(out, l)
		}
	}
	return out
}

// TempDir makes a directory for a run's files (service binaries are run by root, but
// PostgreSQL runs as postgres and keeps its own directory).
func TempDir(prefix string) (string, error) {
	d, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	return filepath.Abs(d)
}
