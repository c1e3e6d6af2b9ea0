package app

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"forumstats.local/forum-svc/internal/attachment"
	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/forum-svc/internal/seed"
	"forumstats.local/forum-svc/internal/store"
	"forumstats.local/forum-svc/internal/webhook"
	"forumstats.local/shared/db"
)

// The commands other than serve, each a function of (ctx, cfg, log, its inputs) like Serve and
// like the commands of stats-svc and collector-svc. Their errors are the command's one-line
// messages, prefixed by the command's name; the database is opened only once the input has been
// checked, so a refused input never touches it.

// Migrate runs `forum-svc migrate`: it applies the pending migrations whatever MIGRATE_ON_START,
// then stores the HTML of the messages written before message_parsed existed (backfill.go), so
// that a deployment that migrates first starts its instances with nothing left to render.
func Migrate(ctx context.Context, cfg Config, log *slog.Logger) error {
	gdb, err := openDB(ctx, cfg.DatabaseURL, log, true)
	if err != nil {
		return err
	}
	defer db.Close(gdb)
	st, err := store.New(gdb)
	if err != nil {
		return err
	}
	return backfillMessageParsed(ctx, st, log)
}

// Seed runs `forum-svc seed --file path`: the whole file is checked, then written in one
// transaction, or nothing is.
func Seed(ctx context.Context, cfg Config, log *slog.Logger, path string, now time.Time) (seed.Summary, error) {
	fh, err := os.Open(path)
	if err != nil {
		return seed.Summary{}, fmt.Errorf("seed: %w", err)
	}
	defer fh.Close()
	f, err := seed.Parse(fh)
	if err != nil {
		return seed.Summary{}, fmt.Errorf("seed: %s: refused, nothing written: %w", path, err)
	}
	gdb, err := openDB(ctx, cfg.DatabaseURL, log, cfg.MigrateOnStart)
	if err != nil {
		return seed.Summary{}, err
	}
	defer db.Close(gdb)
	sum, err := seed.Load(ctx, gdb, f, now)
	if seed.IsRefusal(err) {
		return seed.Summary{}, fmt.Errorf("seed: %s: refused, nothing written: %w", path, err)
	}
	if err != nil {
		return seed.Summary{}, fmt.Errorf("seed: nothing written: %w", err)
	}
	return sum, nil
}

// NewAPIKey is what `forum-svc apikey create` asks for.
type NewAPIKey struct {
	Type      string
	UserID    int64 // 0: none
	Scopes    []string
	ExpiresAt int64 // Unix seconds; 0: never
}

// CreateAPIKey runs `forum-svc apikey create`: it checks k, stores a new random key's hash and
// returns the key, which exists nowhere else.
func CreateAPIKey(ctx context.Context, cfg Config, log *slog.Logger, k NewAPIKey, now time.Time) (string, error) {
	if len(k.Scopes) == 0 {
		return "", errors.New("apikey create: --scopes is required")
	}
	if k.UserID < 0 {
		return "", errors.New("apikey create: --user-id must be positive")
	}
	if err := seed.CheckKey(k.Type, k.UserID, k.Scopes); err != nil {
		return "", fmt.Errorf("apikey create: %w", err)
	}
	if k.ExpiresAt < 0 || (k.ExpiresAt > 0 && k.ExpiresAt <= now.Unix()) {
		return "", errors.New("apikey create: --expires-at must be a future Unix time")
	}
	gdb, err := openDB(ctx, cfg.DatabaseURL, log, cfg.MigrateOnStart)
	if err != nil {
		return "", err
	}
	defer db.Close(gdb)
	st, err := store.New(gdb)
	if err != nil {
		return "", err
	}
	if k.UserID != 0 {
		ok, err := st.UserExists(ctx, k.UserID)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fmt.Errorf("apikey create: user %d does not exist", k.UserID)
		}
	}
	key, err := randomKey()
	if err != nil {
		return "", err
	}
	stored := store.NewKey{Hash: auth.Hash(key), Type: k.Type, UserID: k.UserID, Scopes: k.Scopes, Active: true, ExpiresAt: k.ExpiresAt}
	if err := store.UpsertKey(ctx, gdb, stored, now); err != nil {
		return "", fmt.Errorf("apikey create: %w", err)
	}
	return key, nil
}

// randomKey returns a random key: 32 random bytes, base64url, prefixed so that it is recognisable
// in a secret scanner (47 characters).
func randomKey() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "fsk_" + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// SetOption runs `forum-svc options set name value` and returns the value set, as stored.
func SetOption(ctx context.Context, cfg Config, log *slog.Logger, name, value string) (string, error) {
	if name == store.OptionAttachmentExtensions {
		if _, err := attachment.ParseExtensions(value); err != nil {
			return "", fmt.Errorf("options set: %w", err)
		}
		gdb, err := openDB(ctx, cfg.DatabaseURL, log, cfg.MigrateOnStart)
		if err != nil {
			return "", err
		}
		defer db.Close(gdb)
		exts, err := store.SetAttachmentExtensions(ctx, gdb, value)
		if err != nil {
			return "", fmt.Errorf("options set: %w", err)
		}
		return strings.Join(exts, " "), nil
	}
	opt, err := store.LookupOption(name)
	if err != nil {
		return "", fmt.Errorf("options set: %w (or %s)", err, store.OptionAttachmentExtensions)
	}
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return "", fmt.Errorf("options set: %s: %q is not an integer", name, value)
	}
	if err := opt.Check(n); err != nil {
		return "", fmt.Errorf("options set: %w", err)
	}
	gdb, err := openDB(ctx, cfg.DatabaseURL, log, cfg.MigrateOnStart)
	if err != nil {
		return "", err
	}
	defer db.Close(gdb)
	if err := opt.Set(ctx, gdb, n); err != nil {
		return "", fmt.Errorf("options set: %w", err)
	}
	return strconv.FormatInt(n, 10), nil
}

// NewWebhook is what `forum-svc webhook add` asks for.
type NewWebhook struct {
	URL    string
	Events string // comma-separated
	Secret string // "": a new random one
}

// AddWebhook runs `forum-svc webhook add`: it checks w, stores the webhook and returns its id
// and secret.
func AddWebhook(ctx context.Context, cfg Config, log *slog.Logger, w NewWebhook, now time.Time) (int64, string, error) {
	if w.URL == "" {
		return 0, "", errors.New("webhook add: --url is required")
	}
	if err := webhook.CheckURL(w.URL); err != nil {
		return 0, "", fmt.Errorf("webhook add: %w", err)
	}
	events, err := webhook.ParseEvents(w.Events)
	if err != nil {
		return 0, "", fmt.Errorf("webhook add: %w", err)
	}
	secret := w.Secret
	if secret == "" {
		if secret, err = webhook.NewSecret(); err != nil {
			return 0, "", err
		}
	} else if _, err := webhook.ParseSecret(secret); err != nil {
		return 0, "", fmt.Errorf("webhook add: --secret: %w", err)
	}
	gdb, err := openDB(ctx, cfg.DatabaseURL, log, cfg.MigrateOnStart)
	if err != nil {
		return 0, "", err
	}
	defer db.Close(gdb)
	id, err := webhook.Add(ctx, gdb, w.URL, events, secret, now)
	if err != nil {
		return 0, "", fmt.Errorf("webhook add: %w", err)
	}
	return id, secret, nil
}

// ListWebhooks runs `forum-svc webhook list`.
func ListWebhooks(ctx context.Context, cfg Config, log *slog.Logger) ([]webhook.Webhook, error) {
	gdb, err := openDB(ctx, cfg.DatabaseURL, log, cfg.MigrateOnStart)
	if err != nil {
		return nil, err
	}
	defer db.Close(gdb)
	hooks, err := webhook.List(ctx, gdb)
	if err != nil {
		return nil, fmt.Errorf("webhook list: %w", err)
	}
	return hooks, nil
}

// DisableWebhook runs `forum-svc webhook disable ID`.
func DisableWebhook(ctx context.Context, cfg Config, log *slog.Logger, id int64) error {
	if id <= 0 {
		return errors.New("webhook disable: the id must be a positive integer")
	}
	gdb, err := openDB(ctx, cfg.DatabaseURL, log, cfg.MigrateOnStart)
	if err != nil {
		return err
	}
	defer db.Close(gdb)
	if err := webhook.Disable(ctx, gdb, id); err != nil {
		return fmt.Errorf("webhook disable: %w", err)
	}
	return nil
}

// WebhookDeliveries runs `forum-svc webhook deliveries --webhook N`: its newest deliveries, at
// most limit.
func WebhookDeliveries(ctx context.Context, cfg Config, log *slog.Logger, id int64, limit int) ([]webhook.Delivery, error) {
	if id <= 0 {
		return nil, errors.New("webhook deliveries: --webhook must be a positive integer")
	}
	if limit < 1 || limit > 10000 {
		return nil, errors.New("webhook deliveries: --limit must be from 1 to 10000")
	}
	gdb, err := openDB(ctx, cfg.DatabaseURL, log, cfg.MigrateOnStart)
	if err != nil {
		return nil, err
	}
	defer db.Close(gdb)
	ds, err := webhook.Deliveries(ctx, gdb, id, limit)
	if err != nil {
		return nil, fmt.Errorf("webhook deliveries: %w", err)
	}
	return ds, nil
}

// Redeliver runs `forum-svc webhook redeliver --delivery N`.
func Redeliver(ctx context.Context, cfg Config, log *slog.Logger, id int64, now time.Time) error {
	if id <= 0 {
		return errors.New("webhook redeliver: --delivery must be a positive integer")
	}
	gdb, err := openDB(ctx, cfg.DatabaseURL, log, cfg.MigrateOnStart)
	if err != nil {
		return err
	}
	defer db.Close(gdb)
	if err := webhook.Redeliver(ctx, gdb, id, now); err != nil {
		return fmt.Errorf("webhook redeliver: %w", err)
	}
	return nil
}
