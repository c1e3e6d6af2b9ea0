package testutil

import (
	"fmt"
	"os"
	"sync"
)

// source is where tests find one kind of server, in the package's order: the environment
// variable, the local default port, a testcontainers container, else an error saying how to
// provide one. It is looked up once per test process.
type source struct {
	kind      string // "PostgreSQL"
	env       string // "TEST_POSTGRES_URL"
	local     string // the URL of the default local server
	hint      string // how to provide one, for the error
	ping      func(url string) error
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
		if err := s.ping(u); err != nil {
			return "", fmt.Errorf("%s is set but does not answer: %w", s.env, err)
		}
		return u, nil
	}
	localErr := s.ping(s.local)
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
