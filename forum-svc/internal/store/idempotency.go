package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/shared/db"
)

// idempotent runs write in a transaction. With a retry claim, the claim, the write and the
// recorded answer commit together or not at all: a crash before the commit leaves no claim (the
// retry writes), a commit leaves both (the retry replays). Only successes are recorded; a refused
// write rolls back with its claim, and its retry is judged afresh. write returns the answer's body
// and the conversation it shows, which the recorded answer names (conversation_id), so that the
// conversation's deletion takes the answer with it (ON DELETE CASCADE).
func (s *Store) idempotent(ctx context.Context, retry *conversation.Retry, write func(tx *gorm.DB) ([]byte, int64, error)) (conversation.Answer, error) {
	var a conversation.Answer
	err := s.tx(ctx, func(tx *gorm.DB) error {
		if retry != nil {
			recorded, err := s.claim(tx, retry)
			if err != nil || recorded != nil {
				if recorded != nil {
					a = *recorded
				}
				return err
			}
		}
		body, conversationID, err := write(tx)
		if err != nil {
			return err
		}
		a = conversation.Answer{Status: http.StatusOK, Body: body}
		if retry == nil {
			return nil
		}
		return tx.Exec(`UPDATE idempotency_keys SET status = ?, body = ?, conversation_id = ?
WHERE api_key_hash = ? AND user_id = ? AND idempotency_key = ?`,
			a.Status, string(body), conversationID, retry.Owner, retry.UserID, retry.Key).Error
	})
	return a, err
}

// claim takes the retry key in tx, or returns the answer recorded for it.
//
// On PostgreSQL a transaction-scoped advisory lock on the key comes first: while a first request
// holds it, a second answers ErrRequestInProgress at once (rather than waiting on the first's
// uncommitted row); once the lock is free, any earlier claim has committed and is seen. A hash
// collision between two keys only makes one of them wait its turn as "in progress". SQLite runs
// one writing transaction at a time (BEGIN IMMEDIATE), so a second request that reaches the store
// starts after the first committed and replays it; a repeat the same process is still running is
// answered ErrRequestInProgress before the store (conversation's runningRetries).
func (s *Store) claim(tx *gorm.DB, r *conversation.Retry) (*conversation.Answer, error) {
	if s.dialect.Name == db.Postgres.Name {
		var locked bool
		if err := tx.Raw(`SELECT pg_try_advisory_xact_lock(?)`, retryLockID(r)).Row().Scan(&locked); err != nil {
			return nil, err
		}
		if !locked {
			return nil, conversation.ErrRequestInProgress
		}
	}
	// Answers older than the window no longer count; the user's expired ones go with them (the
	// sweep takes those of users who stopped writing).
	if err := tx.Exec(`DELETE FROM idempotency_keys WHERE api_key_hash = ? AND user_id = ? AND created_at <= ?`,
		r.Owner, r.UserID, expiredAt(r.Date)).Error; err != nil {
		return nil, err
	}
	res := tx.Exec(`INSERT INTO idempotency_keys (api_key_hash, user_id, idempotency_key, fingerprint, created_at, status, body)
VALUES (?, ?, ?, ?, ?, 0, '') ON CONFLICT (api_key_hash, user_id, idempotency_key) DO NOTHING`,
		r.Owner, r.UserID, r.Key, r.Fingerprint, r.Date)
	if res.Error != nil {
		return nil, res.Error
	}
	if res.RowsAffected == 1 {
		return nil, nil // claimed: the write runs
	}
	var (
		fingerprint string
		a           conversation.Answer
		body        string
	)
	err := tx.Raw(`SELECT fingerprint, status, body FROM idempotency_keys
WHERE api_key_hash = ? AND user_id = ? AND idempotency_key = ?`, r.Owner, r.UserID, r.Key).Row().Scan(&fingerprint, &a.Status, &body)
	switch {
	case errors.Is(err, sql.ErrNoRows): // deleted since the insert; cannot happen under the lock
		return nil, conversation.ErrRequestInProgress
	case err != nil:
		return nil, err
	case a.Status == 0: // claimed, no answer yet: a claim the lock does not cover (a collision)
		return nil, conversation.ErrRequestInProgress
	case fingerprint != r.Fingerprint:
		return nil, conversation.ErrIdempotencyKeyReused
	}
	a.Body, a.Replayed = []byte(body), true
	return &a, nil
}

// expiredAt is the newest created_at of the rows that no longer count at date (Unix seconds).
func expiredAt(date int64) int64 { return date - conversation.RetryWindow }

// RetrySweepBatch is how many rows one statement of SweepRetries deletes at most: the row locks
// it holds on PostgreSQL and how long it holds SQLite's write lock. Measured on PostgreSQL 15 (2
// shared cores): a sweep of 100,000 expired rows, 101 statements, took 0.65 to 1.4 s, its longest
// batch 15 to 52 ms (121 ms once, over the not yet vacuumed rows of an earlier sweep); batches
// of 5,000 saved a quarter of the total and took up to 60 ms each. On SQLite (modernc.org/sqlite
// v1.62.0, BenchmarkSQLiteSweep, load average 5 to 16) the same sweep took 0.9 to 2.1 s, median
// 1.3 s (the driver before it, modernc v1.23.1 through glebarez, in the same alternating runs:
// 1.9 to 3.0 s, median 2.5 s), its longest batch 47 to 99 ms, during which the service's one
// connection waits.
const RetrySweepBatch = 1000

// SweepRetries deletes the rows that no longer count at now (Unix seconds), whoever they belong
// to, in statements (each its own transaction) of at most batch rows, and returns how many it
// deleted. It stops at the first statement that deletes fewer than batch rows.
//
// On PostgreSQL a batch locks its rows as it reads them, skipping those locked already: a sweep
// never waits for a row lock, so it never deadlocks with claim, whose delete locks a user's rows
// in key order while a batch's delete goes in the order of its join (PostgreSQL hashes the
// batch's keys first), nor with another instance's sweep, which takes the next rows instead. A
// skipped row is left to a later sweep. SQLite runs one write at a time and has no row locks.
func (s *Store) SweepRetries(ctx context.Context, now int64, batch int) (int64, error) {
	if batch < 1 {
		return 0, fmt.Errorf("sweep batch %d: want at least 1", batch)
	}
	sweep := sweepSQL(s.dialect)
	var total int64
	for {
		res := s.db.WithContext(ctx).Exec(sweep, expiredAt(now), batch)
		if res.Error != nil {
			return total, fmt.Errorf("sweep expired Idempotency-Key rows: %w", res.Error)
		}
		total += res.RowsAffected
		if res.RowsAffected < int64(batch) {
			return total, nil
		}
	}
}

// sweepSQL is a batch of SweepRetries: it deletes at most ? of the rows created at or before ?,
// the oldest first, which makes both databases read them through idempotency_keys_created_at
// (without the order they scan the table). The primary key, not SQLite's rowid nor PostgreSQL's
// ctid, names the rows, so that the statement is the same on both but for the lock clause.
func sweepSQL(d db.Dialect) string {
	oldest := `SELECT api_key_hash, user_id, idempotency_key FROM idempotency_keys
WHERE created_at <= ? ORDER BY created_at LIMIT ?`
	if d.Name == db.Postgres.Name {
		oldest += ` FOR UPDATE SKIP LOCKED`
	}
	return `DELETE FROM idempotency_keys WHERE (api_key_hash, user_id, idempotency_key) IN (` + oldest + `)`
}

// retryLockID is the advisory lock key of a retry key.
func retryLockID(r *conversation.Retry) int64 {
	h := fnv.New64a()
	h.Write([]byte(r.Owner))
	h.Write([]byte{0})
	h.Write([]byte(r.Key))
	return int64(h.Sum64()) ^ r.UserID
}
