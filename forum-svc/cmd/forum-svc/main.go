// Command forum-svc serves the private conversations API and manages its data.
//
//	forum-svc [serve]
//	forum-svc migrate
//	forum-svc seed --file F
//	forum-svc apikey create --type user|super|guest [--user-id N] --scopes a,b [--expires-at UNIX]
//	forum-svc options set NAME VALUE
//	forum-svc webhook add --url U --events a,b [--secret whsec_...]
//	forum-svc webhook list | disable ID | deliveries --webhook N [--limit N] | redeliver --delivery N
//	forum-svc webhook receive --addr A --secret whsec_...   (a target for local runs)
//
// Every command exits 0 on success and 1 with a one-line error on stderr otherwise. `migrate`
// applies pending migrations (then stores the HTML of messages older than message_parsed);
// every other command applies them first unless MIGRATE_ON_START=false.
// This file is flags, dispatch and signals only; internal/app runs the commands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"forumstats.local/forum-svc/internal/app"
	"forumstats.local/forum-svc/internal/webhook"
	"forumstats.local/shared/server"
)

const usage = "usage: forum-svc [serve | migrate | seed --file F | apikey create --type T [--user-id N] --scopes a,b [--expires-at UNIX] | options set NAME VALUE | webhook add --url U --events a,b [--secret S] | webhook list | webhook disable ID | webhook deliveries --webhook N [--limit N] | webhook redeliver --delivery N | webhook receive --addr A --secret S]"

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		msg := strings.ReplaceAll(err.Error(), "\n", " ")
		fmt.Fprintln(os.Stderr, "forum-svc: "+msg)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	return server.Command(app.LoadConfig, stderr, func(ctx context.Context, cfg app.Config, log *slog.Logger) error {
		return dispatch(ctx, cfg, log, args, stdout, stderr)
	})
}

func dispatch(ctx context.Context, cfg app.Config, log *slog.Logger, args []string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		if len(args) > 0 {
			return errors.New(usage)
		}
		return app.Serve(ctx, cfg, log)
	case "migrate":
		if len(args) > 0 {
			return errors.New(usage)
		}
		if err := app.Migrate(ctx, cfg, log); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "migrations are up to date")
		return nil
	case "seed":
		return seedCmd(ctx, cfg, log, args, stdout)
	case "apikey":
		if len(args) == 0 || args[0] != "create" {
			return errors.New(usage)
		}
		return apikeyCreate(ctx, cfg, log, args[1:], stdout, stderr)
	case "options":
		if len(args) != 3 || args[0] != "set" {
			return errors.New(usage)
		}
		v, err := app.SetOption(ctx, cfg, log, args[1], args[2])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s = %s\n", args[1], v)
		return nil
	case "webhook":
		if len(args) == 0 {
			return errors.New(usage)
		}
		return webhookCmd(ctx, cfg, log, args[0], args[1:], stdout, stderr)
	default:
		return fmt.Errorf("unknown command %q; %s", cmd, usage)
	}
}

func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%s: %w", fs.Name(), err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

func seedCmd(ctx context.Context, cfg app.Config, log *slog.Logger, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	file := fs.String("file", "", "seed file (JSON)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *file == "" {
		return errors.New("seed: --file is required")
	}
	sum, err := app.Seed(ctx, cfg, log, *file, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "seeded %s: %s\n", *file, sum)
	return nil
}

func apikeyCreate(ctx context.Context, cfg app.Config, log *slog.Logger, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("apikey create", flag.ContinueOnError)
	var k app.NewAPIKey
	fs.StringVar(&k.Type, "type", "", "user, super or guest")
	fs.Int64Var(&k.UserID, "user-id", 0, "the key's user (user keys only)")
	scopes := fs.String("scopes", "", "comma-separated scopes")
	fs.Int64Var(&k.ExpiresAt, "expires-at", 0, "expiry, Unix seconds (0: never)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	for _, s := range strings.Split(*scopes, ",") {
		if s = strings.TrimSpace(s); s != "" {
			k.Scopes = append(k.Scopes, s)
		}
	}
	key, err := app.CreateAPIKey(ctx, cfg, log, k, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, key)
	fmt.Fprintln(stderr, "API key created; it is shown only this once (only its hash is stored).")
	return nil
}

func webhookCmd(ctx context.Context, cfg app.Config, log *slog.Logger, sub string, args []string, stdout, stderr io.Writer) error {
	switch sub {
	case "add":
		fs := flag.NewFlagSet("webhook add", flag.ContinueOnError)
		var w app.NewWebhook
		fs.StringVar(&w.URL, "url", "", "target URL (http or https)")
		fs.StringVar(&w.Events, "events", "", "comma-separated event types, or *")
		fs.StringVar(&w.Secret, "secret", "", "whsec_ and base64 of 24 to 64 bytes (default: random)")
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		id, secret, err := app.AddWebhook(ctx, cfg, log, w, time.Now())
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, id, secret)
		fmt.Fprintln(stderr, "webhook created; its secret is shown only this once.")
		return nil
	case "list":
		if len(args) > 0 {
			return errors.New(usage)
		}
		hooks, err := app.ListWebhooks(ctx, cfg, log)
		if err != nil {
			return err
		}
		for _, h := range hooks {
			state := "active"
			if !h.Active {
				state = "disabled"
			}
			fmt.Fprintf(stdout, "%d %s %s %s\n", h.ID, state, h.URL, strings.Join(h.Events, ","))
		}
		return nil
	case "disable":
		if len(args) != 1 {
			return errors.New(usage)
		}
		id, err := strconv.ParseInt(args[0], 10, 64)
		if err != nil {
			return fmt.Errorf("webhook disable: %q is not an id", args[0])
		}
		if err := app.DisableWebhook(ctx, cfg, log, id); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "webhook %d disabled\n", id)
		return nil
	case "deliveries":
		fs := flag.NewFlagSet("webhook deliveries", flag.ContinueOnError)
		id := fs.Int64("webhook", 0, "the webhook's id")
		limit := fs.Int("limit", 50, "newest deliveries shown")
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		ds, err := app.WebhookDeliveries(ctx, cfg, log, *id, *limit)
		if err != nil {
			return err
		}
		for _, d := range ds {
			fmt.Fprintf(stdout, "%d %s %s conversation=%d message=%d attempts=%d status=%d created=%s",
				d.ID, d.State, d.EventType, d.ConversationID, d.MessageID, d.Attempts, d.LastStatus, millis(d.CreatedAt))
			if d.State == "pending" {
				fmt.Fprintf(stdout, " next=%s", millis(d.NextAttemptAt))
			}
			if d.LastError != "" {
				fmt.Fprintf(stdout, " error=%q", d.LastError)
			}
			fmt.Fprintln(stdout)
		}
		return nil
	case "redeliver":
		fs := flag.NewFlagSet("webhook redeliver", flag.ContinueOnError)
		id := fs.Int64("delivery", 0, "the delivery's id")
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		if err := app.Redeliver(ctx, cfg, log, *id, time.Now()); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "delivery %d queued again\n", *id)
		return nil
	case "receive":
		return receiveCmd(ctx, args, stdout)
	default:
		return fmt.Errorf("unknown command \"webhook %s\"; %s", sub, usage)
	}
}

// receiveCmd runs `forum-svc webhook receive --addr A --secret S`: a webhook target for local
// runs that prints a line per delivery (its id, whether the signature holds, the body) until
// interrupted.
func receiveCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("webhook receive", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8091", "listen address")
	secret := fs.String("secret", "", "the webhook's secret (whsec_...)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	key, err := webhook.ParseSecret(*secret)
	if err != nil {
		return fmt.Errorf("webhook receive: --secret: %w", err)
	}
	var mu sync.Mutex
	h := webhook.Receiver(key, time.Now, func(id string, body []byte, err error) {
		verdict := "signature ok"
		if err != nil {
			verdict = "REFUSED: " + err.Error()
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stdout, "webhook %s (%s): %s\n", id, verdict, body)
	})
	srv := &http.Server{Addr: *addr, Handler: h, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case err := <-errc:
		return fmt.Errorf("webhook receive: %w", err)
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(sctx)
	}
}

// millis formats Unix milliseconds as RFC 3339 UTC.
func millis(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }
