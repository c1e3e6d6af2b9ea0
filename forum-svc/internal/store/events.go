package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/event"
	"forumstats.local/shared/db"
)

// The per-user event log (event_log, event_counters) and the stream tickets (event_tickets).

// EventLog is the Recorder that writes each change, once for every user who may see it, into the
// event log, in the write's transaction.
type EventLog struct{ s *Store }

// EventLog returns the store's event log recorder: add it with AddRecorder.
func (s *Store) EventLog() EventLog { return EventLog{s} }

// EventRow is a row of event_log.
type EventRow struct {
	UserID         int64  `gorm:"column:user_id;primaryKey;autoIncrement:false"`
	EventID        int64  `gorm:"column:event_id;primaryKey;autoIncrement:false"`
	EventType      string `gorm:"column:event_type"`
	ConversationID int64  `gorm:"column:conversation_id"`
	MessageID      int64  `gorm:"column:message_id"`
	ActorID        int64  `gorm:"column:actor_id"`
	CreatedAt      int64  `gorm:"column:created_at"`
}

// TableName implements GORM's tabler.
func (EventRow) TableName() string { return "event_log" }

// Record implements Recorder. Each user's counter row moves forward by the number of events the
// write gives them, in one statement over the users in ascending order (two writes lock their
// common users' rows in the same order, so they never deadlock); the row stays locked until the
// write commits, so a user's events commit in the order of their ids. Then the events go in, in
// the order of the changes, and each change gets its ids (EventIDs) for the hub's hand-over.
func (l EventLog) Record(tx *gorm.DB, changes []event.Change) error {
	count := map[int64]int64{}
	for _, c := range changes {
		for _, u := range c.UserIDs {
			count[u]++
		}
	}
	if len(count) == 0 {
		return nil
	}
	users := make([]int64, 0, len(count))
	for u := range count {
		users = append(users, u)
	}
	slices.Sort(users)
	next := make(map[int64]int64, len(users))
	for chunk := range slices.Chunk(users, InsertBatch) {
		var values strings.Builder
		args := make([]any, 0, 2*len(chunk))
		for i, u := range chunk {
			if i > 0 {
				values.WriteString(", ")
			}
			values.WriteString("(?, ?)")
			args = append(args, u, count[u])
		}
		rows, err := tx.Raw(`INSERT INTO event_counters (user_id, last_event_id) VALUES `+values.String()+`
ON CONFLICT (user_id) DO UPDATE SET last_event_id = event_counters.last_event_id + excluded.last_event_id
RETURNING user_id, last_event_id`, args...).Rows()
		if err != nil {
			return fmt.Errorf("count events: %w", err)
		}
		for rows.Next() {
			var u, last int64
			if err := rows.Scan(&u, &last); err != nil {
				rows.Close()
				return fmt.Errorf("count events: %w", err)
			}
			next[u] = last - count[u] + 1
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("count events: %w", err)
		}
	}
	var out []EventRow
	for i := range changes {
		c := &changes[i]
		c.EventIDs = make([]int64, len(c.UserIDs))
		for j, u := range c.UserIDs {
			out = append(out, EventRow{UserID: u, EventID: next[u], EventType: c.Type, ConversationID: c.ConversationID,
				MessageID: c.MessageID, ActorID: c.ActorID, CreatedAt: c.At})
			c.EventIDs[j] = next[u]
			next[u]++
		}
	}
	if err := tx.CreateInBatches(out, InsertBatch).Error; err != nil {
		return fmt.Errorf("log events: %w", err)
	}
	return nil
}

// EventsAfter implements event.Log: the user's events after id, oldest first, at most limit, on
// the primary (a replica's lag would show a later event before an earlier one is replayed).
func (s *Store) EventsAfter(ctx context.Context, userID, after int64, limit int) ([]event.Entry, error) {
	var rows []EventRow
	err := s.db.WithContext(ctx).Raw(`SELECT user_id, event_id, event_type, conversation_id, message_id, actor_id, created_at
FROM event_log WHERE user_id = ? AND event_id > ? ORDER BY event_id LIMIT ?`, userID, after, limit).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	out := make([]event.Entry, len(rows))
	for i, r := range rows {
		out[i] = event.Entry{ID: r.EventID, Type: r.EventType, ConversationID: r.ConversationID, MessageID: r.MessageID,
			ActorID: r.ActorID, At: r.CreatedAt}
	}
	return out, nil
}

// EventBounds implements event.Log: the user's oldest event kept (0: none kept) and their last
// event id (0: none ever).
func (s *Store) EventBounds(ctx context.Context, userID int64) (oldest, last int64, err error) {
	err = s.db.WithContext(ctx).Raw(`SELECT COALESCE((SELECT MIN(event_id) FROM event_log WHERE user_id = ?), 0),
  COALESCE((SELECT last_event_id FROM event_counters WHERE user_id = ?), 0)`, userID, userID).Row().Scan(&oldest, &last)
	if err != nil {
		return 0, 0, fmt.Errorf("read event bounds: %w", err)
	}
	return oldest, last, nil
}

// LastEventIDs implements event.Log: the last event id of each of the users that has one, in one
// query per InsertBatch users.
func (s *Store) LastEventIDs(ctx context.Context, userIDs []int64) (map[int64]int64, error) {
	out := make(map[int64]int64, len(userIDs))
	for chunk := range slices.Chunk(userIDs, InsertBatch) {
		var rows []struct{ UserID, LastEventID int64 }
		if err := s.db.WithContext(ctx).Raw(`SELECT user_id, last_event_id FROM event_counters WHERE user_id IN ?`, chunk).
			Scan(&rows).Error; err != nil {
			return nil, fmt.Errorf("read last event ids: %w", err)
		}
		for _, r := range rows {
			out[r.UserID] = r.LastEventID
		}
	}
	return out, nil
}

// EventSweepBatch is how many rows one statement of SweepEvents deletes at most, as
// RetrySweepBatch for the same reasons.
const EventSweepBatch = 1000

// SweepEvents deletes the events created before before (Unix seconds) and the tickets expired by
// then, the oldest events first, batch rows a statement (each its own transaction), and returns
// how many events it deleted. On PostgreSQL a batch skips rows another sweep holds.
func (s *Store) SweepEvents(ctx context.Context, before int64, batch int) (int64, error) {
	if batch < 1 {
		return 0, fmt.Errorf("sweep batch %d: want at least 1", batch)
	}
	if err := s.db.WithContext(ctx).Exec(`DELETE FROM event_tickets WHERE expires_at <= ?`, before).Error; err != nil {
		return 0, fmt.Errorf("sweep event tickets: %w", err)
	}
	oldest := `SELECT user_id, event_id FROM event_log WHERE created_at < ? ORDER BY created_at LIMIT ?`
	if s.dialect.Name == db.Postgres.Name {
		oldest += ` FOR UPDATE SKIP LOCKED`
	}
	sweep := `DELETE FROM event_log WHERE (user_id, event_id) IN (` + oldest + `)`
	var total int64
	for {
		res := s.db.WithContext(ctx).Exec(sweep, before, batch)
		if res.Error != nil {
			return total, fmt.Errorf("sweep events: %w", res.Error)
		}
		total += res.RowsAffected
		if res.RowsAffected < int64(batch) {
			return total, nil
		}
	}
}

// CreateTicket stores a stream ticket (its hash) for the key and user until expiresAt.
func (s *Store) CreateTicket(ctx context.Context, ticketHash, keyHash string, userID, expiresAt int64) error {
	return s.db.WithContext(ctx).Exec(`INSERT INTO event_tickets (ticket_hash, api_key_hash, user_id, expires_at) VALUES (?, ?, ?, ?)`,
		ticketHash, keyHash, userID, expiresAt).Error
}

// UseTicket deletes the ticket and returns what it was bound to; found is false for a ticket
// unknown, used already, or expired at now (Unix seconds). One statement: two requests with the
// same ticket cannot both use it.
func (s *Store) UseTicket(ctx context.Context, ticketHash string, now int64) (keyHash string, userID int64, found bool, err error) {
	var expiresAt int64
	err = s.db.WithContext(ctx).Raw(`DELETE FROM event_tickets WHERE ticket_hash = ? RETURNING api_key_hash, user_id, expires_at`,
		ticketHash).Row().Scan(&keyHash, &userID, &expiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, fmt.Errorf("use ticket: %w", err)
	}
	if expiresAt <= now {
		return "", 0, false, nil
	}
	return keyHash, userID, true, nil
}
