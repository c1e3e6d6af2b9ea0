package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"forumstats.local/collector-svc/internal/fakediscord"
	"forumstats.local/shared/config"
	"forumstats.local/shared/logging"
)

// FakeDiscord is what `collector-svc fake-discord` serves.
type FakeDiscord struct {
	Addr string
	// Catalog, when set, is where the fake's servers are written as a CATALOG_FILE (JSON) before
	// it listens.
	Catalog string
	Options fakediscord.Options
}

// ServeFakeDiscord runs `collector-svc fake-discord` until ctx ends. It logs to logOut by
// LOG_LEVEL and LOG_FORMAT; the fake reads no other configuration.
func ServeFakeDiscord(ctx context.Context, f FakeDiscord, logOut io.Writer) error {
	fake := fakediscord.New(f.Options)
	if f.Catalog != "" {
		data, err := json.MarshalIndent(fake.Catalog(), "", "  ")
		if err != nil {
			return err
		}
		if err := writeFileAtomic(f.Catalog, append(data, '\n')); err != nil {
			return fmt.Errorf("fake-discord: --catalog: %w", err)
		}
	}
	log, err := logging.New(logOut, config.String("LOG_LEVEL", "info"), config.String("LOG_FORMAT", "json"))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.Addr)
	if err != nil {
		return fmt.Errorf("fake-discord: %w", err)
	}
	srv := &http.Server{Handler: fake.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Info("fake Discord listening", "addr", ln.Addr().String(), "guilds", f.Options.Guilds, "seed", f.Options.Seed)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("fake-discord: %w", err)
	}
	return nil
}
