// Command healthcheck is the probe of the services' docker compose healthchecks. The images are
// distroless (no shell, curl or wget), so the probe ships in the image as a small static binary.
//
//	healthcheck URL
//
// It exits 0 when GET URL answers 2xx within three seconds, and 1 with a one-line reason otherwise.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

const timeout = 3 * time.Second

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: healthcheck URL")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := check(ctx, http.DefaultClient, os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "healthcheck:", err)
		os.Exit(1)
	}
}

// check reports whether GET url answers a 2xx status.
func check(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// Drain a little so the connection closes cleanly; the body itself is not judged.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}
