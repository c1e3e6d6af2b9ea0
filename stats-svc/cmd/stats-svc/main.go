// Command stats-svc serves the public message statistics and icons API from
// the reports database that collector-svc writes.
//
//	stats-svc [serve]   apply pending migrations (unless MIGRATE_ON_START=false) and serve
//	stats-svc migrate   apply pending migrations and exit
//
// This file is arguments, dispatch and signals only; internal/app builds and runs the service.
package main

import (
	"fmt"
	"os"

	"forumstats.local/shared/server"
	"forumstats.local/stats-svc/internal/app"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "stats-svc:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	if len(args) > 0 {
		return fmt.Errorf("%s: unexpected argument %q", cmd, args[0])
	}
	if cmd != "serve" && cmd != "migrate" {
		return fmt.Errorf("unknown command %q (want serve or migrate)", cmd)
	}
	if cmd == "migrate" {
		return server.Command(app.LoadConfig, os.Stderr, app.Migrate)
	}
	return server.Command(app.LoadConfig, os.Stderr, app.Serve)
}
