package testutil

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMain lets this test binary play testserver when TESTSERVER_FAKE says how; otherwise it runs
// the tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("TESTSERVER_FAKE"); mode != "" {
		fakeTestserverMain(mode)
	}
	os.Exit(m.Run())
}

func fakeTestserverMain(mode string) {
	switch mode {
	case "serve":
		fmt.Println("fake://" + os.Args[len(os.Args)-1])
		_, _ = io.Copy(io.Discard, os.Stdin)
		// Leave a mark that the container was stopped because stdin closed.
		_ = os.WriteFile(os.Getenv("TESTSERVER_STOPPED"), []byte("stopped"), 0o644)
		os.Exit(0)
	case "fail":
		fmt.Fprintln(os.Stderr, "testserver: Cannot connect to the Docker daemon")
		os.Exit(1)
	case "silent":
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	fmt.Fprintln(os.Stderr, "unknown TESTSERVER_FAKE", mode)
	os.Exit(2)
}

func fakeTestserver(t *testing.T, mode string) string {
	t.Helper()
	stopped := t.TempDir() + "/stopped"
	old := containerCommand
	t.Cleanup(func() { containerCommand = old })
	containerCommand = func(kind string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], kind)
		cmd.Env = append(os.Environ(), "TESTSERVER_FAKE="+mode, "TESTSERVER_STOPPED="+stopped)
		return cmd
	}
	return stopped
}

func TestStartContainer(t *testing.T) {
	t.Run("the URL of the first line, and stopped on cleanup", func(t *testing.T) {
		stopped := fakeTestserver(t, "serve")
		u, cleanup, err := startContainer("postgres")
		if err != nil || u != "fake://postgres" {
			t.Fatalf("startContainer = %q, %v; want fake://postgres", u, err)
		}
		if _, err := os.Stat(stopped); err == nil {
			t.Fatal("the container was stopped before cleanup")
		}
		cleanup()
		if b, err := os.ReadFile(stopped); err != nil || string(b) != "stopped" {
			t.Fatalf("after cleanup the fake was not told to stop: %q, %v", b, err)
		}
	})
	t.Run("its error when it fails", func(t *testing.T) {
		fakeTestserver(t, "fail")
		_, _, err := startContainer("redis")
		if err == nil || !strings.Contains(err.Error(), "Cannot connect to the Docker daemon") {
			t.Fatalf("startContainer error = %v; want testserver's message", err)
		}
	})
	t.Run("a bounded wait for a URL that never comes", func(t *testing.T) {
		fakeTestserver(t, "silent")
		old := containerStart
		containerStart = 200 * time.Millisecond
		t.Cleanup(func() { containerStart = old })
		_, _, err := startContainer("redis")
		if err == nil || !strings.Contains(err.Error(), "no URL within") {
			t.Fatalf("startContainer error = %v; want a timeout", err)
		}
	})
}
