// Command forum-svc serves the private conversations API and manages its data.
//
//	forum-svc [serve]
//	forum-svc migrate
//	forum-svc seed --file F
//	forum-svc apikey create --type user|super|guest [--user-id N] --scopes a,b [--expires-at UNIX]
//	forum-svc options set NAME VALUE
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
	"os"
	"strings"
	"time"

	"forumstats.local/forum-svc/internal/app"
	"forumstats.local/shared/server"
)

const usage = "usage: forum-svc [serve | migrate | seed --file F | apikey create --type T [--user-id N] --scopes a,b [--expires-at UNIX] | options set NAME VALUE]"

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
