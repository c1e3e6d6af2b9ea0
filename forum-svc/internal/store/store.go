// Package store is forum-svc's persistence on PostgreSQL or SQLite, reached two ways. Everything
// goes through GORM: statements written once with ? placeholders, run with Raw(...).Row, Rows or
// Scan and Exec, in GORM transactions for the writes, and the models of models.go inserted with
// CreateInBatches. The one exception is the measured hot path, the message page on PostgreSQL,
// decoded from pgx's typed values on a connection of GORM's pool (pgpage.go), whose statement
// GORM renders too.
//
// Reads go through shared/db's Reads when the service has a read replica (RouteReads): each
// read names the user it reads for, whose reads stay on the primary for a few seconds after that
// user wrote; every write pins its user so.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/attachment"
	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/forum-svc/internal/event"
	"forumstats.local/shared/db"
)

// Store implements conversation.Store and auth.Store.
type Store struct {
	db      *gorm.DB // the primary: every write, and the reads without a replica
	dialect db.Dialect
	// reads routes the reads to a replica when one is set (RouteReads); nil: all on db.
	reads *db.Reads
	// pgPage is pageSQL as PostgreSQL takes it, rendered by GORM once ("": not PostgreSQL).
	pgPage string
	// recorders take every write's changes inside its transaction (AddRecorder).
	recorders []Recorder
	// committed run with a write's changes after it committed (AddCommitted).
	committed []func(context.Context, []event.Change) func()
	// now dates the changes of writes whose input has no date; nil: time.Now.
	now func() time.Time
}

var (
	_ conversation.Store = (*Store)(nil)
	_ auth.Store         = (*Store)(nil)
)

// New wraps a database opened by shared/db.
func New(gdb *gorm.DB) (*Store, error) {
	s := &Store{db: gdb, dialect: db.DialectOf(gdb)}
	if s.dialect.NativeConn {
		var err error
		if s.pgPage, err = renderPage(gdb); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// RouteReads sends the reads to r's replica (while it answers and the reader has not just
// written; to the primary otherwise). Call it before the first read.
func (s *Store) RouteReads(r *db.Reads) { s.reads = r }

// pinWriter keeps userID's reads on the primary (db.Reads.Pin): now, so that a read racing the
// write goes there too, and again when the returned function runs after the write, so that the
// window counts from when the write is visible. Use: defer s.pinWriter(userID)().
func (s *Store) pinWriter(userID int64) func() {
	s.reads.Pin(userID)
	return func() { s.reads.Pin(userID) }
}

const conversationColumns = `c.conversation_id, c.title, c.user_id, cu.username, c.start_date,
       c.message_count, c.first_message_id, c.last_message_id, c.last_message_date,
       COALESCE((SELECT lm.user_id FROM conversation_messages lm WHERE lm.message_id = c.last_message_id), 0),
       p.last_read_date, c.conversation_open, c.open_invite, p.starred`

const conversationSQL = `
SELECT ` + conversationColumns + `
FROM conversation_participants p
JOIN conversations c ON c.conversation_id = p.conversation_id
JOIN users cu ON cu.user_id = c.user_id
WHERE p.conversation_id = ? AND p.user_id = ? AND p.left_state = 0`

// messageSQL is sent on one line, as the page is: a reply answers with it, and
// pg_stat_activity keeps only the first 1,023 bytes of a statement (the forum benchmark replays a
// reply's statements from there).
var messageSQL = strings.Join(strings.Fields(`
SELECT m.message_id, m.conversation_id, m.message, m.message_date, m.user_id, mu.username,
       COALESCE(m.message_parsed, ''), m.reaction_score,
       COALESCE((SELECT r.reaction_id FROM conversation_message_reactions r
                 WHERE r.message_id = m.message_id AND r.user_id = p.user_id), 0),
       o.edit_own_message_time_limit,
       m.attach_count,
       `+conversationColumns+`
FROM conversation_messages m
CROSS JOIN forum_options o
JOIN conversation_participants p ON p.conversation_id = m.conversation_id AND p.user_id = ? AND p.left_state = 0
JOIN conversations c ON c.conversation_id = m.conversation_id
JOIN users mu ON mu.user_id = m.user_id
JOIN users cu ON cu.user_id = c.user_id
WHERE m.message_id = ?`), " ")

const recipientsSQL = `
SELECT p.user_id, u.username
FROM conversation_participants p
JOIN users u ON u.user_id = p.user_id
WHERE p.conversation_id = ? AND p.user_id <> ?
ORDER BY p.user_id`

// Mark-read only moves last_read_date forward: it becomes max(last_read_date, date). A user who
// left the conversation has none to mark.
const markReadSQL = `
UPDATE conversation_participants
SET last_read_date = CASE WHEN last_read_date < ? THEN ? ELSE last_read_date END
WHERE conversation_id = ? AND user_id = ? AND left_state = 0`

const markUnreadSQL = `
UPDATE conversation_participants SET last_read_date = 0
WHERE conversation_id = ? AND user_id = ? AND left_state = 0`

const keySQL = `
SELECT key_type, COALESCE(user_id, 0), scopes, active, COALESCE(expires_at, 0)
FROM api_keys WHERE key_hash = ?`

const userExistsSQL = `SELECT 1 FROM users WHERE user_id = ?`

// MessagePage implements conversation.Store.
func (s *Store) MessagePage(ctx context.Context, conversationID, userID, page int64) (conversation.PageRows, error) {
	return db.ReadValue(ctx, s.reads, s.db, userID, func(gdb *gorm.DB) (conversation.PageRows, error) {
		var (
			p   conversation.PageRows
			err error
		)
		if s.pgPage != "" {
			p, err = s.messagePagePostgres(ctx, gdb, conversationID, userID, page)
		} else {
			p, err = messagePageSQL(gdb.WithContext(ctx), conversationID, userID, page)
		}
		if ids := withAttachments(p.Messages); err == nil && len(ids) > 0 {
			err = fillAttachments(gdb.WithContext(ctx), p.Messages, ids)
		}
		return p, err
	})
}

func scanConversation(dest []any, c *conversation.ConversationRow) []any {
	return append(dest, &c.ConversationID, &c.Title, &c.UserID, &c.Username, &c.StartDate,
		&c.MessageCount, &c.FirstMessageID, &c.LastMessageID, &c.LastMessageDate, &c.LastMessageUserID, &c.LastReadDate,
		&c.Open, &c.OpenInvite, &c.Starred)
}

// Conversation implements conversation.Store.
func (s *Store) Conversation(ctx context.Context, conversationID, userID int64) (conversation.ConversationRow, error) {
	var c conversation.ConversationRow
	err := s.read(ctx, userID, func(gdb *gorm.DB) (err error) {
		c, err = conversationOn(gdb.WithContext(ctx), conversationID, userID)
		return err
	})
	return c, err
}

// conversationOn reads the conversation on q: a database, or the transaction of a write whose
// answer it makes.
func conversationOn(q *gorm.DB, conversationID, userID int64) (conversation.ConversationRow, error) {
	final := finalOf(q)
	if c, ok := final.conversation(conversationID, userID); ok {
		return c, nil
	}
	var c conversation.ConversationRow
	err := q.Raw(conversationSQL, conversationID, userID).Row().Scan(scanConversation(nil, &c)...)
	if errors.Is(err, sql.ErrNoRows) {
		return c, conversation.ErrConversationNotFound
	}
	if err != nil {
		return c, fmt.Errorf("read conversation: %w", err)
	}
	if err := recipients(q, &c); err != nil {
		return c, err
	}
	final.keepConversation(userID, c)
	return c, nil
}

// Message implements conversation.Store.
func (s *Store) Message(ctx context.Context, messageID, userID int64) (m conversation.MessageRow, c conversation.ConversationRow, err error) {
	err = s.read(ctx, userID, func(gdb *gorm.DB) (err error) {
		m, c, err = messageOn(gdb.WithContext(ctx), messageID, userID)
		return err
	})
	return m, c, err
}

// messageOn reads the message on q, as conversationOn.
func messageOn(q *gorm.DB, messageID, userID int64) (conversation.MessageRow, conversation.ConversationRow, error) {
	final := finalOf(q)
	if r, ok := final.message(messageID, userID); ok {
		return r.m, r.c, nil
	}
	var (
		m conversation.MessageRow
		c conversation.ConversationRow
	)
	dest := []any{&m.MessageID, &m.ConversationID, &m.Message, &m.MessageDate, &m.UserID, &m.Username,
		&m.MessageParsed, &m.ReactionScore, &m.VisitorReactionID, &m.EditTimeLimit, &m.AttachCount}
	err := q.Raw(messageSQL, userID, messageID).Row().Scan(scanConversation(dest, &c)...)
	if errors.Is(err, sql.ErrNoRows) {
		return m, c, conversation.ErrMessageNotFound
	}
	if err != nil {
		return m, c, fmt.Errorf("read message: %w", err)
	}
	if m.AttachCount > 0 {
		one := []conversation.MessageRow{m}
		if err := fillAttachments(q, one, []int64{m.MessageID}); err != nil {
			return m, c, err
		}
		m = one[0]
	}
	if err := recipients(q, &c); err != nil {
		return m, c, err
	}
	final.keepMessage(userID, m, c)
	return m, c, nil
}

// recipients reads the participants of c other than its starter, those who left included (the
// others see no change when someone leaves).
func recipients(q *gorm.DB, c *conversation.ConversationRow) error {
	final := finalOf(q)
	if r, ok := final.recipientsOf(c.ConversationID); ok {
		c.Recipients = r
		return nil
	}
	rows, err := q.Raw(recipientsSQL, c.ConversationID, c.UserID).Rows()
	if err != nil {
		return fmt.Errorf("read recipients: %w", err)
	}
	defer rows.Close()
	c.Recipients = []conversation.Recipient{}
	for rows.Next() {
		var r conversation.Recipient
		if err := rows.Scan(&r.UserID, &r.Username); err != nil {
			return fmt.Errorf("read recipients: %w", err)
		}
		c.Recipients = append(c.Recipients, r)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read recipients: %w", err)
	}
	final.keepRecipients(c.ConversationID, c.Recipients)
	return nil
}

// MarkRead implements conversation.Store.
func (s *Store) MarkRead(ctx context.Context, conversationID, userID, date int64) error {
	defer s.pinWriter(userID)()
	return s.updateReadState(ctx, conversationID, userID, markReadSQL, date, date, conversationID, userID)
}

// MarkUnread implements conversation.Store.
func (s *Store) MarkUnread(ctx context.Context, conversationID, userID int64) error {
	defer s.pinWriter(userID)()
	return s.updateReadState(ctx, conversationID, userID, markUnreadSQL, conversationID, userID)
}

// updateReadState runs q, a change of the user's read state, and records it for that user only
// (their other devices), even when the date did not move: the change is what the user asked.
func (s *Store) updateReadState(ctx context.Context, conversationID, userID int64, q string, args ...any) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		res := tx.Exec(q, args...)
		if res.Error != nil {
			return fmt.Errorf("update read state: %w", res.Error)
		}
		if res.RowsAffected == 0 { // no participant row: no such conversation for this user
			return conversation.ErrConversationNotFound
		}
		return s.record(tx, event.Change{Type: event.TypeReadStateChanged, ConversationID: conversationID,
			ActorID: userID, UserIDs: []int64{userID}, At: s.nowUnix()})
	})
}

// LookupKey implements auth.Store. A key the replica does not have is looked up on the
// primary: a key just created (on the primary, by the CLI) must not be refused while the
// replica lags, and unknown keys are rare enough to cost a second query.
func (s *Store) LookupKey(ctx context.Context, hash string) (k auth.Key, found bool, err error) {
	lookup := func(gdb *gorm.DB) (err error) {
		k, found, err = lookupKey(gdb.WithContext(ctx), hash)
		return err
	}
	err = db.ReadOn(ctx, s.reads, s.db, db.NoKey, lookup)
	if err == nil && !found && s.reads.Replica() {
		err = lookup(s.db)
	}
	return k, found, err
}

func lookupKey(q *gorm.DB, hash string) (auth.Key, bool, error) {
	k := auth.Key{Hash: hash}
	var scopes string
	err := q.Raw(keySQL, hash).Row().Scan(&k.Type, &k.UserID, &scopes, &k.Active, &k.ExpiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		return auth.Key{}, false, nil
	}
	if err != nil {
		return auth.Key{}, false, err
	}
	k.Scopes = strings.Fields(scopes)
	return k, true, nil
}

// UnknownUsers implements conversation.Store: the ids that name no user, in one query on the
// replica while it answers; those it does not know are asked again of the primary, which a user
// created a moment ago has reached first.
func (s *Store) UnknownUsers(ctx context.Context, ids []int64) (unknown []int64, err error) {
	err = db.ReadOn(ctx, s.reads, s.db, db.NoKey, func(gdb *gorm.DB) (err error) {
		unknown, err = unknownUsers(gdb.WithContext(ctx), ids)
		return err
	})
	if err == nil && len(unknown) > 0 && s.reads.Replica() {
		unknown, err = unknownUsers(s.db.WithContext(ctx), unknown)
	}
	return unknown, err
}

// UserExists implements auth.Store, with LookupKey's second look on the primary.
func (s *Store) UserExists(ctx context.Context, userID int64) (ok bool, err error) {
	exists := func(gdb *gorm.DB) (err error) {
		var one int
		err = gdb.WithContext(ctx).Raw(userExistsSQL, userID).Row().Scan(&one)
		ok = err == nil
		if errors.Is(err, sql.ErrNoRows) {
			err = nil
		}
		return err
	}
	err = db.ReadOn(ctx, s.reads, s.db, db.NoKey, exists)
	if err == nil && !ok && s.reads.Replica() {
		err = exists(s.db)
	}
	return ok, err
}

// NewKey is an API key to store (its hash only).
type NewKey struct {
	Hash      string
	Type      string
	UserID    int64 // 0: none
	Scopes    []string
	Active    bool
	ExpiresAt int64 // 0: never
}

// UpsertKey stores k, replacing a key with the same hash.
func UpsertKey(ctx context.Context, tx *gorm.DB, k NewKey, now time.Time) error {
	return tx.WithContext(ctx).Exec(`
INSERT INTO api_keys (key_hash, key_type, user_id, scopes, active, expires_at, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (key_hash) DO UPDATE SET key_type = excluded.key_type, user_id = excluded.user_id,
  scopes = excluded.scopes, active = excluded.active, expires_at = excluded.expires_at`,
		k.Hash, k.Type, nullIfZero(k.UserID), strings.Join(k.Scopes, " "), k.Active, nullIfZero(k.ExpiresAt), now.Unix()).Error
}

// Option is a forum option (`options set NAME VALUE`, a seed file's `options`): one typed column
// of forum_options, whose CHECK holds the same bounds.
type Option struct {
	Name, column string
	Min, Max     int64
}

// OptionMessagesPerPage is the name of the page-size option (`options set messagesPerPage N`).
const OptionMessagesPerPage = "messagesPerPage"

// Bounds of messagesPerPage (the schema checks them too).
const (
	MinMessagesPerPage = 1
	MaxMessagesPerPage = 100
)

// ForumOptions lists every forum option.
var ForumOptions = []Option{
	{OptionMessagesPerPage, "messages_per_page", MinMessagesPerPage, MaxMessagesPerPage},
	{"discussionsPerPage", "discussions_per_page", 1, 100},
	{"maxRecipients", "max_recipients", 1, conversation.MaxRecipientsLimit},
	// A message of the longest, in 4-byte characters percent-encoded, stays within the body limit.
	{"messageMaxLength", "message_max_length", 1, conversation.MaxMessageLength},
	// Minutes after its date within which an author may edit their message; 0: no limit.
	{"editOwnMessageTimeLimit", "edit_own_message_time_limit", 0, conversation.MaxEditOwnMessageTimeLimit},
	// Bytes an uploaded file may have; the upload routes' body limit follows it.
	{"attachmentMaxFileSize", "attachment_max_file_size", 1, attachment.MaxMaxFileSize},
	// Files a message may hold (and a key may hold before they are attached).
	{"attachmentMaxPerMessage", "attachment_max_per_message", 1, attachment.MaxMaxPerMessage},
}

// LookupOption finds an option by name.
func LookupOption(name string) (Option, error) {
	names := make([]string, len(ForumOptions))
	for i, o := range ForumOptions {
		if o.Name == name {
			return o, nil
		}
		names[i] = o.Name
	}
	return Option{}, fmt.Errorf("unknown option %q (known: %s)", name, strings.Join(names, ", "))
}

// Check refuses a value out of the option's bounds.
func (o Option) Check(n int64) error {
	if n < o.Min || n > o.Max {
		return fmt.Errorf("%s must be between %d and %d, got %d", o.Name, o.Min, o.Max, n)
	}
	return nil
}

// Set changes the option.
func (o Option) Set(ctx context.Context, tx *gorm.DB, n int64) error {
	return tx.WithContext(ctx).Exec(`UPDATE forum_options SET `+o.column+` = ? WHERE id = 1`, n).Error
}

func nullIfZero(n int64) any {
	if n == 0 {
		return nil
	}
	return n
}
