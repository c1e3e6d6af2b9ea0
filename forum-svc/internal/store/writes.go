package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/forum-svc/internal/event"
	"forumstats.local/shared/db"
)

// The conversations API's writes, each one GORM transaction. A write that depends on a
// conversation's state first locks its row (lockSQL: SELECT ... FOR UPDATE on PostgreSQL; SQLite
// runs one writer at a time), so that concurrent replies get positions 1..N without gaps and
// nobody replies into a conversation being closed.

// Participant states (conversation_participants.left_state).
const (
	stateIn      = 0
	stateLeft    = 1 // a reply by another participant brings the user back
	stateIgnored = 2 // gone for good
)

var _ conversation.WriteStore = (*Store)(nil)

// lockSQL reads and locks the conversation for a participant who has not left it.
const lockSQL = `
SELECT c.user_id, c.conversation_open, c.open_invite, c.last_message_date
FROM conversations c
JOIN conversation_participants p ON p.conversation_id = c.conversation_id
WHERE c.conversation_id = ? AND p.user_id = ? AND p.left_state = 0`

type lockedConversation struct {
	starterID       int64
	open, invite    bool
	lastMessageDate int64
}

// lock locks the conversation for userID, or answers ErrConversationNotFound.
func (s *Store) lock(tx *gorm.DB, conversationID, userID int64) (lockedConversation, error) {
	q := lockSQL
	if s.dialect.Name == db.Postgres.Name {
		q += " FOR UPDATE OF c"
	}
	var l lockedConversation
	err := tx.Raw(q, conversationID, userID).Row().Scan(&l.starterID, &l.open, &l.invite, &l.lastMessageDate)
	if errors.Is(err, sql.ErrNoRows) {
		return l, conversation.ErrConversationNotFound
	}
	return l, err
}

// Options implements conversation.WriteStore: on the primary, since the writes check against
// them.
func (s *Store) Options(ctx context.Context) (conversation.Options, error) {
	var o conversation.Options
	err := s.db.WithContext(ctx).Raw(`SELECT discussions_per_page, max_recipients, message_max_length, edit_own_message_time_limit
FROM forum_options`).Row().Scan(&o.DiscussionsPerPage, &o.MaxRecipients, &o.MessageMaxLength, &o.EditOwnMessageTimeLimit)
	if err != nil {
		return o, fmt.Errorf("read options: %w", err)
	}
	return o, nil
}

// checkUsers answers *conversation.UnknownUsersError for ids that name no user.
func checkUsers(tx *gorm.DB, ids []int64) error {
	unknown, err := unknownUsers(tx, ids)
	if err != nil {
		return err
	}
	if len(unknown) > 0 {
		return &conversation.UnknownUsersError{IDs: unknown}
	}
	return nil
}

// unknownUsers returns, in their order, the ids that name no user: one query, whatever their
// number (at most the forum's maxRecipients).
func unknownUsers(tx *gorm.DB, ids []int64) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	var found []int64
	if err := tx.Raw(`SELECT user_id FROM users WHERE user_id IN ?`, ids).Scan(&found).Error; err != nil {
		return nil, err
	}
	known := make(map[int64]bool, len(found))
	for _, id := range found {
		known[id] = true
	}
	var unknown []int64
	for _, id := range ids {
		if !known[id] {
			unknown = append(unknown, id)
		}
	}
	return unknown, nil
}

// addParticipants adds users to the conversation with their read date and its last_message_date.
func addParticipants(tx *gorm.DB, conversationID int64, users []int64, lastRead, lastMessageDate int64) error {
	rows := make([]Participant, len(users))
	for i, u := range users {
		rows[i] = Participant{ConversationID: conversationID, UserID: u, LastReadDate: lastRead, LastMessageDate: lastMessageDate}
	}
	return tx.CreateInBatches(rows, InsertBatch).Error
}

// StartConversation implements conversation.WriteStore.
func (s *Store) StartConversation(ctx context.Context, c conversation.NewConversation, retry *conversation.Retry,
	answer func(conversation.ConversationRow) ([]byte, error)) (conversation.Answer, error) {
	defer s.pinWriter(c.StarterID)()
	return s.idempotent(ctx, retry, func(tx *gorm.DB) ([]byte, int64, error) {
		if err := checkUsers(tx, c.Recipients); err != nil {
			return nil, 0, err
		}
		var id, messageID int64
		err := tx.Raw(`INSERT INTO conversations (title, user_id, start_date, message_count, last_message_date, conversation_open, open_invite)
VALUES (?, ?, ?, 1, ?, ?, ?) RETURNING conversation_id`, c.Title, c.StarterID, c.Date, c.Date, c.Open, c.OpenInvite).Row().Scan(&id)
		if err != nil {
			return nil, 0, fmt.Errorf("insert conversation: %w", err)
		}
		err = tx.Raw(`INSERT INTO conversation_messages (conversation_id, user_id, message, message_parsed, message_date, position)
VALUES (?, ?, ?, ?, ?, 1) RETURNING message_id`, id, c.StarterID, c.Message, c.Parsed, c.Date).Row().Scan(&messageID)
		if err != nil {
			return nil, 0, fmt.Errorf("insert message: %w", err)
		}
		if err := tx.Exec(`UPDATE conversations SET first_message_id = ?, last_message_id = ? WHERE conversation_id = ?`,
			messageID, messageID, id).Error; err != nil {
			return nil, 0, err
		}
		if err := attach(tx, c.AttachmentKey, c.StarterID, id, messageID, true); err != nil {
			return nil, 0, err
		}
		// The starter has read it; every recipient has it unread.
		if err := addParticipants(tx, id, []int64{c.StarterID}, c.Date, c.Date); err != nil {
			return nil, 0, err
		}
		if err := addParticipants(tx, id, c.Recipients, 0, c.Date); err != nil {
			return nil, 0, err
		}
		users := append([]int64{c.StarterID}, c.Recipients...)
		slices.Sort(users)
		if err := s.record(tx, event.Change{Type: event.TypeConversationCreated, ConversationID: id, MessageID: messageID,
			ActorID: c.StarterID, UserIDs: users, At: c.Date}); err != nil {
			return nil, 0, err
		}
		writeDone(tx)
		row, err := conversationOn(tx, id, c.StarterID)
		if err != nil {
			return nil, 0, err
		}
		body, err := answer(row)
		return body, id, err
	})
}

// Reply implements conversation.WriteStore. The conversation's row is locked first, so the new
// position is its message_count + 1 whatever the concurrency.
func (s *Store) Reply(ctx context.Context, r conversation.NewReply, retry *conversation.Retry,
	answer func(conversation.MessageRow, conversation.ConversationRow) ([]byte, error)) (conversation.Answer, error) {
	defer s.pinWriter(r.UserID)()
	return s.idempotent(ctx, retry, func(tx *gorm.DB) ([]byte, int64, error) {
		l, err := s.lock(tx, r.ConversationID, r.UserID)
		if err != nil {
			return nil, 0, err
		}
		if !l.open {
			return nil, 0, conversation.ErrConversationClosed
		}
		var messageID int64
		err = tx.Raw(`INSERT INTO conversation_messages (conversation_id, user_id, message, message_parsed, message_date, position)
VALUES (?, ?, ?, ?, ?, (SELECT message_count + 1 FROM conversations WHERE conversation_id = ?)) RETURNING message_id`,
			r.ConversationID, r.UserID, r.Message, r.Parsed, r.Date, r.ConversationID).Row().Scan(&messageID)
		if err != nil {
			return nil, 0, fmt.Errorf("insert message: %w", err)
		}
		if err := attach(tx, r.AttachmentKey, r.UserID, r.ConversationID, messageID, false); err != nil {
			return nil, 0, err
		}
		if err := tx.Exec(`UPDATE conversations SET message_count = message_count + 1, last_message_id = ?, last_message_date = ?
WHERE conversation_id = ?`, messageID, r.Date, r.ConversationID).Error; err != nil {
			return nil, 0, err
		}
		// The author has read up to the reply; for everyone else it is unread (a read date in the
		// same second goes back one), and it brings back those who left without ignoring it.
		// Those in the conversation after it (those it brought back too) see the reply.
		users, err := participantsIn(tx, `UPDATE conversation_participants SET last_message_date = ?,
  left_state = CASE WHEN left_state = ? THEN ? ELSE left_state END,
  last_read_date = CASE
    WHEN user_id = ? THEN CASE WHEN last_read_date < ? THEN ? ELSE last_read_date END
    WHEN last_read_date >= ? THEN CAST(? AS BIGINT) - 1
    ELSE last_read_date END
WHERE conversation_id = ?
RETURNING user_id, left_state`, r.Date, stateLeft, stateIn, r.UserID, r.Date, r.Date, r.Date, r.Date, r.ConversationID)
		if err != nil {
			return nil, 0, err
		}
		if err := s.record(tx, event.Change{Type: event.TypeMessageCreated, ConversationID: r.ConversationID,
			MessageID: messageID, ActorID: r.UserID, UserIDs: users, At: r.Date}); err != nil {
			return nil, 0, err
		}
		writeDone(tx)
		m, c, err := messageOn(tx, messageID, r.UserID)
		if err != nil {
			return nil, 0, err
		}
		body, err := answer(m, c)
		return body, r.ConversationID, err
	})
}

// editTargetSQL reads what CheckEdit judges, for a participant who has not left the message's
// conversation.
const editTargetSQL = `
SELECT m.user_id, m.message_date, c.conversation_open, m.conversation_id
FROM conversation_messages m
JOIN conversations c ON c.conversation_id = m.conversation_id
JOIN conversation_participants p ON p.conversation_id = m.conversation_id AND p.user_id = ? AND p.left_state = 0
WHERE m.message_id = ?`

// EditMessage implements conversation.WriteStore. On PostgreSQL the conversation's row is locked
// first, as every write that depends on its state locks it, so that an edit never lands in a
// conversation being closed.
func (s *Store) EditMessage(ctx context.Context, e conversation.MessageEdit) (m conversation.MessageRow, c conversation.ConversationRow, err error) {
	defer s.pinWriter(e.UserID)()
	err = s.tx(ctx, func(tx *gorm.DB) error {
		q := editTargetSQL
		if s.dialect.Name == db.Postgres.Name {
			q += " FOR UPDATE OF c"
		}
		var (
			t              conversation.EditTarget
			conversationID int64
		)
		err := tx.Raw(q, e.UserID, e.MessageID).Row().Scan(&t.AuthorID, &t.MessageDate, &t.ConversationOpen, &conversationID)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return conversation.ErrMessageNotFound
		case err != nil:
			return err
		}
		if err := conversation.CheckEdit(t, e); err != nil {
			return err
		}
		if err := tx.Exec(`UPDATE conversation_messages SET message = ?, message_parsed = ? WHERE message_id = ?`,
			e.Text, e.Parsed, e.MessageID).Error; err != nil {
			return err
		}
		if err := attach(tx, e.AttachmentKey, e.UserID, conversationID, e.MessageID, false); err != nil {
			return err
		}
		if err := s.recordForParticipants(tx, event.Change{Type: event.TypeMessageUpdated, ConversationID: conversationID,
			MessageID: e.MessageID, ActorID: e.UserID, At: e.Date}); err != nil {
			return err
		}
		writeDone(tx)
		m, c, err = messageOn(tx, e.MessageID, e.UserID)
		return err
	})
	return m, c, err
}

// UpdateConversation implements conversation.WriteStore.
func (s *Store) UpdateConversation(ctx context.Context, conversationID, userID int64, u conversation.ConversationUpdate) (c conversation.ConversationRow, err error) {
	defer s.pinWriter(userID)()
	err = s.tx(ctx, func(tx *gorm.DB) error {
		l, err := s.lock(tx, conversationID, userID)
		if err != nil {
			return err
		}
		if l.starterID != userID {
			return conversation.ErrNoPermission
		}
		set := map[string]any{}
		if u.Title != nil {
			set["title"] = *u.Title
		}
		if u.Open != nil {
			set["conversation_open"] = *u.Open
		}
		if u.OpenInvite != nil {
			set["open_invite"] = *u.OpenInvite
		}
		if len(set) > 0 {
			if err := tx.Table("conversations").Where("conversation_id = ?", conversationID).Updates(set).Error; err != nil {
				return err
			}
			if err := s.recordForParticipants(tx, event.Change{Type: event.TypeConversationUpdated,
				ConversationID: conversationID, ActorID: userID, At: s.nowUnix()}); err != nil {
				return err
			}
		}
		writeDone(tx)
		c, err = conversationOn(tx, conversationID, userID)
		return err
	})
	return c, err
}

// Leave implements conversation.WriteStore.
func (s *Store) Leave(ctx context.Context, conversationID, userID int64, ignore bool) error {
	defer s.pinWriter(userID)()
	return s.tx(ctx, func(tx *gorm.DB) error {
		if _, err := s.lock(tx, conversationID, userID); err != nil {
			return err
		}
		state := stateLeft
		if ignore {
			state = stateIgnored
		}
		if err := tx.Exec(`UPDATE conversation_participants SET left_state = ? WHERE conversation_id = ? AND user_id = ?`,
			state, conversationID, userID).Error; err != nil {
			return err
		}
		// For the leaver's own devices only: the others see no change when someone leaves.
		if err := s.record(tx, event.Change{Type: event.TypeParticipantLeft, ConversationID: conversationID,
			ActorID: userID, UserIDs: []int64{userID}, At: s.nowUnix()}); err != nil {
			return err
		}
		var remaining int64
		if err := tx.Raw(`SELECT COUNT(*) FROM conversation_participants WHERE conversation_id = ? AND left_state = 0`,
			conversationID).Row().Scan(&remaining); err != nil {
			return err
		}
		if remaining > 0 {
			return nil
		}
		// The last participant left: the conversation goes, with its messages, participants and
		// recorded Idempotency-Key answers (ON DELETE CASCADE, in this transaction).
		return tx.Exec(`DELETE FROM conversations WHERE conversation_id = ?`, conversationID).Error
	})
}

// member is a participant of a conversation, those who left included.
type member struct {
	UserID    int64
	LeftState int
}

// Invite implements conversation.WriteStore.
func (s *Store) Invite(ctx context.Context, conversationID, userID int64, users []int64, maxRecipients int64) error {
	defer s.pinWriter(userID)()
	return s.tx(ctx, func(tx *gorm.DB) error {
		l, err := s.lock(tx, conversationID, userID)
		if err != nil {
			return err
		}
		switch {
		case !l.open:
			return conversation.ErrConversationClosed
		case l.starterID != userID && !l.invite:
			return conversation.ErrNoPermission
		}
		if err := checkUsers(tx, users); err != nil {
			return err
		}
		var members []member
		if err := tx.Raw(`SELECT user_id, left_state FROM conversation_participants WHERE conversation_id = ? ORDER BY user_id`, conversationID).
			Scan(&members).Error; err != nil {
			return err
		}
		isMember := func(u int64) bool {
			return slices.ContainsFunc(members, func(m member) bool { return m.UserID == u })
		}
		// Participants, those who left included, stay as they are: inviting only them changes
		// nothing, even in a conversation over a since lowered maxRecipients.
		added := slices.DeleteFunc(slices.Clone(users), isMember)
		if len(added) == 0 {
			return nil
		}
		recipients := int64(len(members)) - 1 // every participant but the starter
		if recipients+int64(len(added)) > maxRecipients {
			return &conversation.TooManyRecipientsError{Max: maxRecipients}
		}
		if err := addParticipants(tx, conversationID, added, 0, l.lastMessageDate); err != nil {
			return err
		}
		// The invited see a new conversation; those in it already, its new recipients.
		at := s.nowUnix()
		invited := slices.Sorted(slices.Values(added))
		var present []int64
		for _, m := range members {
			if m.LeftState == stateIn {
				present = append(present, m.UserID)
			}
		}
		return s.record(tx,
			event.Change{Type: event.TypeConversationCreated, ConversationID: conversationID, ActorID: userID, UserIDs: invited, At: at},
			event.Change{Type: event.TypeConversationUpdated, ConversationID: conversationID, ActorID: userID, UserIDs: present, At: at})
	})
}

// Star implements conversation.WriteStore.
func (s *Store) Star(ctx context.Context, conversationID, userID int64, star *bool) (bool, error) {
	defer s.pinWriter(userID)()
	set, args := "starred = NOT starred", []any{}
	if star != nil {
		set, args = "starred = ?", []any{*star}
	}
	args = append(args, conversationID, userID)
	var starred bool
	err := s.tx(ctx, func(tx *gorm.DB) error {
		err := tx.Raw(`UPDATE conversation_participants SET `+set+`
WHERE conversation_id = ? AND user_id = ? AND left_state = 0 RETURNING starred`, args...).Row().Scan(&starred)
		if errors.Is(err, sql.ErrNoRows) {
			return conversation.ErrConversationNotFound
		}
		if err != nil {
			return err
		}
		// A star is the user's own: their other devices see it, nobody else.
		return s.record(tx, event.Change{Type: event.TypeConversationUpdated, ConversationID: conversationID,
			ActorID: userID, UserIDs: []int64{userID}, At: s.nowUnix()})
	})
	return starred, err
}

// Me implements conversation.WriteStore.
func (s *Store) Me(ctx context.Context, userID int64) (name string, unread int64, err error) {
	err = s.read(ctx, userID, func(gdb *gorm.DB) error {
		return gdb.WithContext(ctx).Raw(meSQL, userID, userID).Row().Scan(&name, &unread)
	})
	if err != nil {
		return "", 0, fmt.Errorf("read user: %w", err)
	}
	return name, unread, nil
}

// meSQL counts the unread conversations on conversation_participants_inbox.
const meSQL = `
SELECT u.username, (SELECT COUNT(*) FROM conversation_participants p
                    WHERE p.user_id = ? AND p.left_state = 0 AND p.last_message_date > p.last_read_date)
FROM users u WHERE u.user_id = ?`

// SyncIDs moves PostgreSQL's id sequences past the ids stored, after rows were written with
// explicit ids (a seed file, a benchmark's setup), so that the service's new conversations and
// messages get ids above every existing one. It never moves a sequence back: ids given before and
// since deleted (a conversation whose last participant left) stay unused, so the next id is the
// greater of the largest stored + 1 and the sequence's own next value. SQLite needs nothing: its
// AUTOINCREMENT keys (migration 0004) record explicit ids in sqlite_sequence too.
func SyncIDs(ctx context.Context, tx *gorm.DB) error {
	if db.DialectOf(tx).Name != db.Postgres.Name {
		return nil
	}
	for _, t := range [][2]string{{"conversations", "conversation_id"}, {"conversation_messages", "message_id"}} {
		err := tx.WithContext(ctx).Exec(`SELECT setval(pg_get_serial_sequence(@table, @column), GREATEST(
  (SELECT COALESCE(MAX(`+t[1]+`), 0) FROM `+t[0]+`) + 1, nextval(pg_get_serial_sequence(@table, @column))), false)`,
			sql.Named("table", t[0]), sql.Named("column", t[1])).Error
		if err != nil {
			return fmt.Errorf("sync %s ids: %w", t[0], err)
		}
	}
	return nil
}
