package seed

import (
	"context"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/forum-svc/internal/store"
)

func write(ctx context.Context, tx *gorm.DB, f *File, now time.Time) (Summary, error) {
	sum := Summary{Users: len(f.Users), Conversations: len(f.Conversations), ReadStates: len(f.ReadState), APIKeys: len(f.APIKeys)}
	opts, err := f.Options.set()
	if err != nil {
		return sum, err
	}
	for opt, v := range opts {
		if err := opt.Set(ctx, tx, v); err != nil {
			return sum, err
		}
	}
	if f.Options != nil && f.Options.AttachmentExtensions != nil {
		if _, err := store.SetAttachmentExtensions(ctx, tx, *f.Options.AttachmentExtensions); err != nil {
			return sum, err
		}
	}

	users := make([]store.User, len(f.Users))
	for i, u := range f.Users {
		users[i] = store.User{UserID: u.UserID, Username: u.Username}
	}
	if err := upsert(tx, users, []string{"user_id"}, "username"); err != nil {
		return sum, err
	}

	var (
		convs        []store.Conversation
		participants []store.Participant
		messages     []store.Message
		convIDs      []int64
	)
	for _, c := range f.Conversations {
		convIDs = append(convIDs, c.ConversationID)
		convs = append(convs, store.Conversation{ConversationID: c.ConversationID, Title: c.Title, UserID: c.UserID})
		members := append([]int64{c.UserID}, c.Recipients...)
		for _, u := range members {
			participants = append(participants, store.Participant{ConversationID: c.ConversationID, UserID: u})
		}
		// Participants no longer listed leave the conversation.
		if err := tx.Exec("DELETE FROM conversation_participants WHERE conversation_id = ? AND user_id NOT IN ?",
			c.ConversationID, members).Error; err != nil {
			return sum, err
		}
		for _, m := range c.Messages {
			// A temporary negative position, unique (message ids are), until positions are recomputed.
			messages = append(messages, store.Message{MessageID: m.MessageID, ConversationID: c.ConversationID,
				UserID: m.UserID, Message: m.Message, MessageParsed: conversation.RenderMessage(m.Message),
				MessageDate: *m.MessageDate, Position: -m.MessageID})
		}
	}
	sum.Messages = len(messages)
	if err := upsert(tx, convs, []string{"conversation_id"}, "title", "user_id"); err != nil {
		return sum, err
	}
	// A participant already in keeps their read state and star (renumber refreshes their copy of
	// last_message_date).
	if err := upsert(tx, participants, []string{"conversation_id", "user_id"}); err != nil {
		return sum, err
	}
	for part := range slices.Chunk(convIDs, chunk) {
		// Free every position of the touched conversations, so that the ranks below never collide
		// with old ones.
		if err := tx.Exec("UPDATE conversation_messages SET position = -message_id WHERE conversation_id IN ?", part).Error; err != nil {
			return sum, err
		}
	}
	if err := upsert(tx, messages, []string{"message_id"}, "user_id", "message", "message_parsed", "message_date", "position"); err != nil {
		return sum, err
	}
	for part := range slices.Chunk(convIDs, chunk) {
		if err := renumber(tx, part); err != nil {
			return sum, err
		}
	}

	for _, rs := range f.ReadState {
		if err := tx.Exec("UPDATE conversation_participants SET last_read_date = ? WHERE conversation_id = ? AND user_id = ?",
			*rs.LastReadDate, rs.ConversationID, rs.UserID).Error; err != nil {
			return sum, err
		}
	}
	// New conversations and messages of the API get ids above the file's.
	if err := store.SyncIDs(ctx, tx); err != nil {
		return sum, err
	}
	for _, k := range f.APIKeys {
		nk := store.NewKey{Hash: auth.Hash(k.Key), Type: k.Type, Scopes: k.Scopes, Active: k.Active == nil || *k.Active}
		if k.UserID != nil {
			nk.UserID = *k.UserID
		}
		if k.ExpiresAt != nil {
			nk.ExpiresAt = *k.ExpiresAt
		}
		if err := store.UpsertKey(ctx, tx, nk, now); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// upsert inserts rows, InsertBatch a statement; a row whose key (the columns of conflict)
// exists already gets the new values of update, or is left as it is when update is empty.
func upsert[T any](tx *gorm.DB, rows []T, conflict []string, update ...string) error {
	onConflict := clause.OnConflict{DoNothing: len(update) == 0}
	for _, c := range conflict {
		onConflict.Columns = append(onConflict.Columns, clause.Column{Name: c})
	}
	if len(update) > 0 {
		onConflict.DoUpdates = clause.AssignmentColumns(update)
	}
	return tx.Clauses(onConflict).CreateInBatches(rows, store.InsertBatch).Error
}

// renumber gives the messages of the conversations their positions, 1.. in (message_date,
// message_id) order, and refreshes the conversations' message aggregates (and their copy on the
// participant rows).
func renumber(tx *gorm.DB, convIDs []int64) error {
	if err := tx.Exec(`
UPDATE conversation_messages SET position = r.rn
FROM (SELECT message_id,
             ROW_NUMBER() OVER (PARTITION BY conversation_id ORDER BY message_date, message_id) AS rn
      FROM conversation_messages WHERE conversation_id IN ?) AS r
WHERE conversation_messages.message_id = r.message_id`, convIDs).Error; err != nil {
		return err
	}
	if err := tx.Exec(`
UPDATE conversations SET
  message_count = (SELECT COUNT(*) FROM conversation_messages m
                   WHERE m.conversation_id = conversations.conversation_id),
  first_message_id = COALESCE((SELECT m.message_id FROM conversation_messages m
                   WHERE m.conversation_id = conversations.conversation_id AND m.position = 1), 0),
  start_date = COALESCE((SELECT m.message_date FROM conversation_messages m
                   WHERE m.conversation_id = conversations.conversation_id AND m.position = 1), 0),
  last_message_id = COALESCE((SELECT m.message_id FROM conversation_messages m
                   WHERE m.conversation_id = conversations.conversation_id
                   ORDER BY m.position DESC LIMIT 1), 0),
  last_message_date = COALESCE((SELECT m.message_date FROM conversation_messages m
                   WHERE m.conversation_id = conversations.conversation_id
                   ORDER BY m.position DESC LIMIT 1), 0)
WHERE conversation_id IN ?`, convIDs).Error; err != nil {
		return err
	}
	// The participants' copy of last_message_date orders their lists.
	return tx.Exec(`
UPDATE conversation_participants SET last_message_date = (SELECT c.last_message_date FROM conversations c
                   WHERE c.conversation_id = conversation_participants.conversation_id)
WHERE conversation_id IN ?`, convIDs).Error
}
