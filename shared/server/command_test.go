package server_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"forumstats.local/shared/config"
	"forumstats.local/shared/server"
)

func TestCommand(t *testing.T) {
	loaded := func(c config.Common, err error) func() (config.Common, error) {
		return func() (config.Common, error) { return c, err }
	}
	var stderr bytes.Buffer
	ran := false
	err := server.Command(loaded(config.Common{LogLevel: "warn", LogFormat: "text", HTTPAddr: ":1"}, nil), &stderr,
		func(ctx context.Context, cfg config.Common, log *slog.Logger) error {
			ran = true
			if ctx.Err() != nil || cfg.HTTPAddr != ":1" {
				t.Errorf("ctx %v, cfg %+v", ctx.Err(), cfg)
			}
			log.Info("hidden")
			log.Warn("shown")
			return errors.New("the command's own error")
		})
	if !ran || err == nil || err.Error() != "the command's own error" {
		t.Fatalf("ran %v, err %v", ran, err)
	}
	if out := stderr.String(); strings.Contains(out, "hidden") || !strings.Contains(out, "level=WARN msg=shown") {
		t.Errorf("the logger ignores LOG_LEVEL or LOG_FORMAT: %q", out)
	}

	never := func(context.Context, config.Common, *slog.Logger) error {
		t.Error("the command ran after a failed setup")
		return nil
	}
	if err := server.Command(loaded(config.Common{}, errors.New("DATABASE_URL: bad")), &stderr, never); err == nil || !strings.Contains(err.Error(), "DATABASE_URL") {
		t.Errorf("a configuration error: %v", err)
	}
	if err := server.Command(loaded(config.Common{LogLevel: "loud"}, nil), &stderr, never); err == nil || !strings.Contains(err.Error(), "LOG_LEVEL") {
		t.Errorf("a bad LOG_LEVEL: %v", err)
	}
}
