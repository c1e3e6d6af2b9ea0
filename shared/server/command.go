package server

import (
	"context"
	"io"
	"log/slog"

	"forumstats.local/shared/logging"
)

// Command runs a command of a service that reads its configuration: it loads it, builds the
// logger it asks for on stderr and calls fn with a context that ends on SIGINT or SIGTERM
// (SignalContext). Each service's main dispatches its commands through it.
func Command[C interface{ Logging() (level, format string) }](load func() (C, error), stderr io.Writer, fn func(context.Context, C, *slog.Logger) error) error {
	cfg, err := load()
	if err != nil {
		return err
	}
	level, format := cfg.Logging()
	log, err := logging.New(stderr, level, format)
	if err != nil {
		return err
	}
	ctx, stop := SignalContext()
	defer stop()
	return fn(ctx, cfg, log)
}
