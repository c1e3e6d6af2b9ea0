package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/forum-svc/internal/event"
	"forumstats.local/shared/db"
)

// reactTargetSQL reads and (on PostgreSQL) locks the message for a participant who has not left
// its conversation. The lock serialises the reactions to one message, so that the read of the
// user's current reaction and the change of reaction_score are never interleaved with another's
// (SQLite runs one writer at a time). The current reaction is read by a statement of its own,
// after the lock is held: a statement that waited for the lock still reads, outside the locked
// row, what was committed when it started (PostgreSQL's READ COMMITTED), so a subquery here would
// miss the reaction of the transaction it waited for.
const reactTargetSQL = `
SELECT m.user_id, m.conversation_id
FROM conversation_messages m
JOIN conversation_participants p ON p.conversation_id = m.conversation_id AND p.user_id = ? AND p.left_state = 0
WHERE m.message_id = ?`

// React implements conversation.Store: the reaction row and the message's reaction_score change
// in one transaction, under the message's row lock.
func (s *Store) React(ctx context.Context, r conversation.NewReaction, retry *conversation.Retry,
	answer func(action string) ([]byte, error)) (conversation.Answer, error) {
	defer s.pinWriter(r.UserID)()
	return s.idempotent(ctx, retry, func(tx *gorm.DB) ([]byte, int64, error) {
		q := reactTargetSQL
		if s.dialect.Name == db.Postgres.Name {
			q += " FOR UPDATE OF m"
		}
		var authorID, conversationID, current int64
		err := tx.Raw(q, r.UserID, r.MessageID).Row().Scan(&authorID, &conversationID)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil, 0, conversation.ErrMessageNotFound
		case err != nil:
			return nil, 0, fmt.Errorf("read message to react to: %w", err)
		}
		if !conversation.CanReact(authorID, r.UserID) {
			return nil, 0, conversation.ErrReactOwnContent
		}
		err = tx.Raw(`SELECT reaction_id FROM conversation_message_reactions WHERE message_id = ? AND user_id = ?`,
			r.MessageID, r.UserID).Row().Scan(&current)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, 0, fmt.Errorf("read reaction: %w", err)
		}
		change := conversation.ChangeReaction(current, r.ReactionID)
		if change.Store == 0 {
			err = tx.Exec(`DELETE FROM conversation_message_reactions WHERE message_id = ? AND user_id = ?`,
				r.MessageID, r.UserID).Error
		} else {
			err = tx.Exec(`INSERT INTO conversation_message_reactions (message_id, user_id, reaction_id, reaction_date)
VALUES (?, ?, ?, ?)
ON CONFLICT (message_id, user_id) DO UPDATE SET reaction_id = excluded.reaction_id, reaction_date = excluded.reaction_date`,
				r.MessageID, r.UserID, change.Store, r.Date).Error
		}
		if err != nil {
			return nil, 0, fmt.Errorf("store reaction: %w", err)
		}
		if change.Delta != 0 {
			if err := tx.Exec(`UPDATE conversation_messages SET reaction_score = reaction_score + ? WHERE message_id = ?`,
				change.Delta, r.MessageID).Error; err != nil {
				return nil, 0, fmt.Errorf("update reaction score: %w", err)
			}
		}
		if change.Store != current {
			if err := s.recordForParticipants(tx, event.Change{Type: event.TypeReactionChanged, ConversationID: conversationID,
				MessageID: r.MessageID, ActorID: r.UserID, At: r.Date}); err != nil {
				return nil, 0, err
			}
		}
		body, err := answer(change.Action)
		return body, conversationID, err
	})
}
