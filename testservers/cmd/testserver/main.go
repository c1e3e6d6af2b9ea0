// Command testserver starts a throwaway server in a container for tests and keeps it while its
// caller lives.
//
//	testserver postgres|redis
//
// It prints the server's URL as its first line of standard output, then waits until its standard
// input closes (the test process ended or let it go) or it receives SIGINT/SIGTERM, and
// terminates the container. testcontainers' reaper removes the container too if this process is
// killed. Any failure is one line on standard error and exit status 1.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: testserver postgres|redis")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(1)
	}
}

func run(kind string) (err error) {
	// Older testcontainers versions panic when they find no Docker host.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		c   testcontainers.Container
		url string
	)
	switch kind {
	case "postgres":
		pc, err := tcpostgres.Run(ctx, "postgres:16-alpine",
			tcpostgres.WithDatabase("postgres"),
			tcpostgres.WithUsername("postgres"),
			tcpostgres.WithPassword("postgres"),
			tcpostgres.BasicWaitStrategies(),
		)
		if err != nil {
			return err
		}
		c = pc
		url, err = pc.ConnectionString(ctx, "sslmode=disable")
		if err != nil {
			_ = testcontainers.TerminateContainer(c)
			return err
		}
	case "redis":
		rc, err := tcredis.Run(ctx, "redis:7-alpine")
		if err != nil {
			return err
		}
		c = rc
		url, err = rc.ConnectionString(ctx)
		if err != nil {
			_ = testcontainers.TerminateContainer(c)
			return err
		}
	default:
		return fmt.Errorf("unknown server %q (postgres or redis)", kind)
	}
	defer func() { _ = testcontainers.TerminateContainer(c) }()
	if _, err := fmt.Println(url); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(done)
	}()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-done:
	case <-sig:
	}
	return nil
}
