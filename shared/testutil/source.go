package testutil

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/testcontainers/testcontainers-go"
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

// recoverContainerPanic turns the panic of an older testcontainers version that finds no Docker
// host into the error *err.
func recoverContainerPanic(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%v", r)
	}
}

// startContainer starts a container through run (a testcontainers module's Run with its image
// and options) and returns the URL connect reads from it and a cleanup that terminates it.
func startContainer[C testcontainers.Container](run func(context.Context) (C, error), connect func(context.Context, C) (string, error)) (u string, cleanup func(), err error) {
	defer recoverContainerPanic(&err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := run(ctx)
	if err != nil {
		return "", nil, err
	}
	terminate := func() { _ = testcontainers.TerminateContainer(c) }
	if u, err = connect(ctx, c); err != nil {
		terminate()
		return "", nil, err
	}
	return u, terminate, nil
}
