package migrate

import (
	"context"
	"log/slog"

	"gorm.io/gorm"

	sdb "forumstats.local/shared/db"
)

// Open is how every command of every service opens its database, so that they all migrate by one
// rule: the `migrate` command applies the pending migrations of sets always (apply true), and
// every other command applies them unless MIGRATE_ON_START=false (apply = config.Common's
// MigrateOnStart). What it applies is logged; log may be nil.
func Open(ctx context.Context, url string, log *slog.Logger, apply bool, sets ...Set) (*gorm.DB, error) {
	gdb, err := sdb.Open(ctx, url, log)
	if err != nil {
		return nil, err
	}
	if !apply {
		return gdb, nil
	}
	for _, s := range sets {
		applied, err := Up(ctx, gdb, s)
		if err != nil {
			sdb.Close(gdb)
			return nil, err
		}
		if log != nil && len(applied) > 0 {
			log.Info("migrations applied", "component", s.Component, "applied", applied)
		}
	}
	return gdb, nil
}

// Apply is the `migrate` command of every service: it opens url, applies the pending migrations
// of sets whatever MIGRATE_ON_START, and closes the database.
func Apply(ctx context.Context, url string, log *slog.Logger, sets ...Set) error {
	gdb, err := Open(ctx, url, log, true, sets...)
	if err != nil {
		return err
	}
	sdb.Close(gdb)
	return nil
}
