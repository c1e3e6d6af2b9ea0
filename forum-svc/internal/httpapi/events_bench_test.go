package httpapi_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// idleClientsEnv names the server's address for the idle clients' process; IDLE_CLIENTS is how
// many streams it opens and IDLE_KEY the key.
const idleClientsEnv = "EVENTS_IDLE_SERVER"

// idleClients opens IDLE_CLIENTS streams to addr, each read up to its first event, prints
// "ready", and holds them until its stdin closes. The clients live in a process of their own, so
// that the server's process holds only the server's side of each stream (and its file
// descriptors).
func idleClients(addr string) {
	n, _ := strconv.Atoi(os.Getenv("IDLE_CLIENTS"))
	key := os.Getenv("IDLE_KEY")
	conns := make([]net.Conn, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			conns[i] = c
			fmt.Fprintf(c, "GET /api/events HTTP/1.1\r\nHost: x\r\nForum-Api-Key: %s\r\n\r\n", key)
			buf := make([]byte, 1024)
			var got []byte
			_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
			for !bytes.Contains(got, []byte("event: unread_count")) {
				k, err := c.Read(buf)
				if err != nil {
					errs <- fmt.Errorf("stream %d: %w after %q", i, err, got)
					return
				}
				got = append(got, buf[:k]...)
			}
			_ = c.SetReadDeadline(time.Time{})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// BenchmarkIdleStreams opens 10,000 idle streams (a process of their own holds the clients) and
// reports the server's memory per stream: heap and goroutine stacks in use after a collection,
// against the level before. It fails above 16 KiB a stream:
// go test -run '^$' -bench BenchmarkIdleStreams -benchtime 1x ./forum-svc/internal/httpapi/
func BenchmarkIdleStreams(b *testing.B) {
	const streams = 10_000
	e := newEnv(b, envOptions{databaseURL: "sqlite:" + b.TempDir() + "/forum.db"})
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	var heap, stack uint64
	inUse := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		heap, stack = m.HeapInuse-heap, m.StackInuse-stack
		return m.HeapInuse + m.StackInuse
	}
	for b.Loop() {
		before := inUse()
		cmd := exec.Command(os.Args[0], "-test.run", "^$")
		cmd.Env = append(os.Environ(), idleClientsEnv+"="+strings.TrimPrefix(srv.URL, "http://"),
			"IDLE_CLIENTS="+strconv.Itoa(streams), "IDLE_KEY="+keyBob)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		if strings.TrimSpace(line) != "ready" {
			stdin.Close()
			_ = cmd.Wait()
			b.Fatalf("the idle clients: %q", line)
		}
		after := inUse()
		per := float64(after-before) / streams
		b.ReportMetric(per, "B/stream")
		b.ReportMetric(float64(heap)/streams, "heap-B/stream")
		b.ReportMetric(float64(stack)/streams, "stack-B/stream")
		stdin.Close()
		_ = cmd.Wait()
		b.Logf("per stream: %.0f B (heap %.0f B, goroutine stacks %.0f B)", per, float64(heap)/streams, float64(stack)/streams)
		if os.Getenv("IDLE_PROFILE") != "" {
			f, _ := os.Create(os.Getenv("IDLE_PROFILE"))
			_ = pprof.WriteHeapProfile(f)
			f.Close()
		}
		if per > 16<<10 {
			b.Fatalf("%.0f bytes a stream, want at most 16 KiB", per)
		}
	}
}
