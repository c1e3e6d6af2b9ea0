// Command forum-svc serves the private conversations API and manages its data.
//
//	forum-svc [serve]
//	forum-svc migrate
//	forum-svc seed --file F
//	forum-svc apikey create --type user|super|guest [--user-id N] --scopes a,b [--expires-at UNIX]
//	forum-svc options set NAME VALUE
//
// Every command exits 0 on success and 1 with a one-line error on stderr otherwise. Commands
// other than serve apply pending migrations first.
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"forumstats.local/forum-svc/internal/app"
	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/forum-svc/internal/seed"
	"forumstats.local/forum-svc/internal/store"
	"forumstats.local/shared/db"
	"forumstats.local/shared/logging"
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
	cfg, err := app.LoadConfig()
	if err != nil {
		return err
	}
	log, err := logging.New(stderr, cfg.LogLevel, cfg.LogFormat)
	if err != nil {
		return err
	}
	ctx, stop := server.SignalContext()
	defer stop()

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
		gdb, err := app.OpenDB(ctx, cfg.DatabaseURL, log)
		if err != nil {
			return err
		}
		db.Close(gdb)
		fmt.Fprintln(stdout, "migrations are up to date")
		return nil
	case "seed":
		return seedCmd(ctx, cfg, args, stdout)
	case "apikey":
		if len(args) == 0 || args[0] != "create" {
			return errors.New(usage)
		}
		return apikeyCreate(ctx, cfg, args[1:], stdout, stderr)
	case "options":
		if len(args) != 3 || args[0] != "set" {
			return errors.New(usage)
		}
		return optionsSet(ctx, cfg, args[1], args[2], stdout)
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

func seedCmd(ctx context.Context, cfg app.Config, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("seed", flag.ContinueOnError)
	file := fs.String("file", "", "seed file (JSON)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *file == "" {
		return errors.New("seed: --file is required")
	}
	fh, err := os.Open(*file)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	defer fh.Close()
	f, err := seed.Parse(fh)
	if err != nil {
		return fmt.Errorf("seed: %s: refused, nothing written: %w", *file, err)
	}
	gdb, err := app.OpenDB(ctx, cfg.DatabaseURL, nil)
	if err != nil {
		return err
	}
	defer db.Close(gdb)
	sum, err := seed.Load(ctx, gdb, f, time.Now())
	if seed.IsRefusal(err) {
		return fmt.Errorf("seed: %s: refused, nothing written: %w", *file, err)
	}
	if err != nil {
		return fmt.Errorf("seed: nothing written: %w", err)
	}
	fmt.Fprintf(stdout, "seeded %s: %s\n", *file, sum)
	return nil
}

func apikeyCreate(ctx context.Context, cfg app.Config, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("apikey create", flag.ContinueOnError)
	keyType := fs.String("type", "", "user, super or guest")
	userID := fs.Int64("user-id", 0, "the key's user (user keys only)")
	scopes := fs.String("scopes", "", "comma-separated scopes")
	expiresAt := fs.Int64("expires-at", 0, "expiry, Unix seconds (0: never)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var scopeList []string
	for _, s := range strings.Split(*scopes, ",") {
		if s = strings.TrimSpace(s); s != "" {
			scopeList = append(scopeList, s)
		}
	}
	if len(scopeList) == 0 {
		return errors.New("apikey create: --scopes is required")
	}
	if *userID < 0 {
		return errors.New("apikey create: --user-id must be positive")
	}
	if err := seed.CheckKey(*keyType, *userID, scopeList); err != nil {
		return fmt.Errorf("apikey create: %w", err)
	}
	now := time.Now()
	if *expiresAt < 0 || (*expiresAt > 0 && *expiresAt <= now.Unix()) {
		return errors.New("apikey create: --expires-at must be a future Unix time")
	}
	gdb, err := app.OpenDB(ctx, cfg.DatabaseURL, nil)
	if err != nil {
		return err
	}
	defer db.Close(gdb)
	st, err := store.New(gdb, store.Options{})
	if err != nil {
		return err
	}
	if *userID != 0 {
		ok, err := st.UserExists(ctx, *userID)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("apikey create: user %d does not exist", *userID)
		}
	}
	key, err := newKey()
	if err != nil {
		return err
	}
	k := store.NewKey{Hash: auth.Hash(key), Type: *keyType, UserID: *userID, Scopes: scopeList, Active: true, ExpiresAt: *expiresAt}
	if err := store.UpsertKey(ctx, gdb, k, now); err != nil {
		return fmt.Errorf("apikey create: %w", err)
	}
	fmt.Fprintln(stdout, key)
	fmt.Fprintln(stderr, "API key created; it is shown only this once (only its hash is stored).")
	return nil
}

// newKey returns a random key: 32 random bytes, base64url, prefixed so that it is recognisable in
// a secret scanner (47 characters).
func newKey() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "fsk_" + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

func optionsSet(ctx context.Context, cfg app.Config, name, value string, stdout io.Writer) error {
	if name != store.OptionMessagesPerPage {
		return fmt.Errorf("options set: unknown option %q (known: %s)", name, store.OptionMessagesPerPage)
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return fmt.Errorf("options set: %s: %q is not an integer", name, value)
	}
	if err := store.CheckMessagesPerPage(n); err != nil {
		return fmt.Errorf("options set: %w", err)
	}
	gdb, err := app.OpenDB(ctx, cfg.DatabaseURL, nil)
	if err != nil {
		return err
	}
	defer db.Close(gdb)
	if err := store.SetMessagesPerPage(ctx, gdb, n); err != nil {
		return fmt.Errorf("options set: %w", err)
	}
	fmt.Fprintf(stdout, "%s = %d\n", name, n)
	return nil
}
