package testutil

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// The servers tests run against, each found once per test process.
var (
	postgresSource = &source{kind: "PostgreSQL", env: "TEST_POSTGRES_URL", local: "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		ping: pingPostgres, container: postgresContainer,
		hint: "set TEST_POSTGRES_URL=postgres://user@host:port/db, or run a server on 127.0.0.1:5432 (user postgres, trust auth), or make a Docker engine available for testcontainers"}
	redisSource = &source{kind: "Redis", env: "TEST_REDIS_URL", local: "redis://127.0.0.1:6379/0",
		ping: pingRedis, container: redisContainer,
		hint: "set TEST_REDIS_URL=redis://host:port/db, or run redis-server on 127.0.0.1:6379, or make a Docker engine available for testcontainers"}
)

// source is where tests find one kind of server, in the package's order: the environment
// variable, the local default port, a testcontainers container, else an error saying how to
// provide one. It is looked up once per test process.
type source struct {
	kind      string // "PostgreSQL"
	env       string // "TEST_POSTGRES_URL"
	local     string // the URL of the default local server
	hint      string // how to provide one, for the error
	ping      func(ctx context.Context, url string) error
	container func() (url string, cleanup func(), err error)

	once    sync.Once
	url     string
	err     error
	cleanup func()
}

// URL finds the server once and returns its URL.
func (s *source) URL() (string, error) {
	s.once.Do(func() { s.url, s.err = s.find() })
	return s.url, s.err
}

func (s *source) find() (string, error) {
	if u := os.Getenv(s.env); u != "" {
		if err := s.answers(u); err != nil {
			return "", fmt.Errorf("%s is set but does not answer: %w", s.env, err)
		}
		return u, nil
	}
	localErr := s.answers(s.local)
	if localErr == nil {
		return s.local, nil
	}
	u, cleanup, tcErr := s.container()
	if tcErr == nil {
		s.cleanup = cleanup
		return u, nil
	}
	return "", fmt.Errorf("no %s for tests: %s (local: %v; testcontainers: %v)", s.kind, s.hint, localErr, tcErr)
}

// answers pings the server at u, which has a few seconds: one slower is no server for tests.
func (s *source) answers(u string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return s.ping(ctx, u)
}

// stop terminates the container started for the server, if any.
func (s *source) stop() {
	if s.cleanup != nil {
		s.cleanup()
	}
}

// containerCommand runs forumstats.local/testservers' command testserver, the one that talks to a
// Docker engine through testcontainers-go. It runs as a child process from its own module, so
// that no module whose tests use this package carries the Docker client in its module graph.
// Tests replace it.
var containerCommand = func(kind string) *exec.Cmd {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	return exec.Command(goTool, "run", "forumstats.local/testservers/cmd/testserver", kind)
}

// containerStart bounds building testserver, pulling the image and starting the container.
var containerStart = 3 * time.Minute

// startContainer starts a container of kind ("postgres", "redis") through testserver and returns
// its URL and a cleanup that stops it. testserver prints the URL on its first line and keeps the
// container until its standard input closes, so the container also goes when this process dies.
func startContainer(kind string) (u string, cleanup func(), err error) {
	cmd := containerCommand(kind)
	var stderr Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start testserver: %w", err)
	}
	stop := func() {
		_ = stdin.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	line := make(chan string, 1)
	go func() {
		first, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- strings.TrimSpace(first)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case u = <-line:
	case <-time.After(containerStart):
	}
	if u == "" {
		stop()
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = fmt.Sprintf("no URL within %s", containerStart)
		}
		return "", nil, fmt.Errorf("testserver %s: %s", kind, msg)
	}
	return u, stop, nil
}
