package store

import (
	"fmt"
	"time"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/event"
)

// Recorder takes the changes of a write inside the write's transaction, after the change: what it
// writes commits with the write, and its error rolls the write back (the write then answers that
// error). The event log and the webhooks' outbox are recorders.
type Recorder interface {
	Record(tx *gorm.DB, changes []event.Change) error
}

// AddRecorder makes r take the changes of every later write, after the recorders added before
// it. Call it before serving: the list is not guarded against concurrent writes.
func (s *Store) AddRecorder(r Recorder) { s.recorders = append(s.recorders, r) }

// record hands the write's changes to every recorder, in tx.
func (s *Store) record(tx *gorm.DB, changes ...event.Change) error {
	if len(s.recorders) == 0 || len(changes) == 0 {
		return nil
	}
	for _, r := range s.recorders {
		if err := r.Record(tx, changes); err != nil {
			return fmt.Errorf("record changes: %w", err)
		}
	}
	return nil
}

// recording reports whether a write needs to build its changes (some recorder takes them): the
// participants' query costs a statement.
func (s *Store) recording() bool { return len(s.recorders) > 0 }

// nowUnix is the date of a write whose input carries none.
func (s *Store) nowUnix() int64 {
	if s.now != nil {
		return s.now().Unix()
	}
	return time.Now().Unix()
}

// SetClock makes the writes without a date of their own date their changes by now (tests).
func (s *Store) SetClock(now func() time.Time) { s.now = now }

// activeParticipants lists, in ascending order, the users in the conversation who have not left
// it: those who see its changes.
func activeParticipants(tx *gorm.DB, conversationID int64) ([]int64, error) {
	var ids []int64
	err := tx.Raw(`SELECT user_id FROM conversation_participants WHERE conversation_id = ? AND left_state = 0 ORDER BY user_id`,
		conversationID).Scan(&ids).Error
	if err != nil {
		return nil, fmt.Errorf("read participants: %w", err)
	}
	return ids, nil
}

// recordForParticipants records one change of the conversation for its active participants.
func (s *Store) recordForParticipants(tx *gorm.DB, c event.Change) error {
	if !s.recording() {
		return nil
	}
	users, err := activeParticipants(tx, c.ConversationID)
	if err != nil {
		return err
	}
	c.UserIDs = users
	return s.record(tx, c)
}
