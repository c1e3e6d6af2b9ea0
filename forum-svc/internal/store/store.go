// Package store is forum-svc's persistence on PostgreSQL or SQLite. The request-path reads go
// straight to database/sql with statements written once and rebound for the dialect, except the
// message page on PostgreSQL, which is decoded from pgx's raw values (page.go, pgpage.go); the
// writes (the conversations API in writes.go, the CLI) go through GORM.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/shared/db"
)

// Store implements conversation.Store and auth.Store.
type Store struct {
	gdb     *gorm.DB
	sql     *sql.DB
	dialect db.Dialect
	q       queries
}

var (
	_ conversation.Store = (*Store)(nil)
	_ auth.Store         = (*Store)(nil)
)

// New wraps a database opened by shared/db.
func New(gdb *gorm.DB) (*Store, error) {
	sqlDB, err := gdb.DB()
	if err != nil {
		return nil, err
	}
	dialect := db.DialectOf(gdb)
	return &Store{gdb: gdb, sql: sqlDB, dialect: dialect, q: newQueries(dialect)}, nil
}

const conversationColumns = `c.conversation_id, c.title, c.user_id, cu.username, c.start_date,
       c.message_count, c.first_message_id, c.last_message_id, c.last_message_date, p.last_read_date,
       c.conversation_open, c.open_invite, p.starred`

const conversationSQL = `
SELECT ` + conversationColumns + `
FROM conversation_participants p
JOIN conversations c ON c.conversation_id = p.conversation_id
JOIN users cu ON cu.user_id = c.user_id
WHERE p.conversation_id = ? AND p.user_id = ? AND p.left_state = 0`

const messageSQL = `
SELECT m.message_id, m.conversation_id, m.message, m.message_date, m.user_id, mu.username,
       ` + conversationColumns + `
FROM conversation_messages m
JOIN conversation_participants p ON p.conversation_id = m.conversation_id AND p.user_id = ? AND p.left_state = 0
JOIN conversations c ON c.conversation_id = m.conversation_id
JOIN users mu ON mu.user_id = m.user_id
JOIN users cu ON cu.user_id = c.user_id
WHERE m.message_id = ?`

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

type queries struct {
	page, conversation, message, recipients, markRead, markUnread, key, userExists, me string
}

func newQueries(d db.Dialect) queries {
	r := func(q string) string { return rebind(q, d) }
	return queries{
		page: r(pageSQL), conversation: r(conversationSQL), message: r(messageSQL),
		recipients: r(recipientsSQL), markRead: r(markReadSQL), markUnread: r(markUnreadSQL),
		key: r(keySQL), userExists: r(userExistsSQL), me: r(meSQL),
	}
}

// rebind turns ? placeholders into PostgreSQL's $1, $2, ... (the statements here have no ? in
// literals); SQLite takes them as they are.
func rebind(q string, d db.Dialect) string {
	if d.Name != db.Postgres.Name {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// MessagePage implements conversation.Store.
func (s *Store) MessagePage(ctx context.Context, conversationID, userID, page int64) (conversation.PageRows, error) {
	if s.dialect.NativeConn {
		return s.messagePagePostgres(ctx, conversationID, userID, page)
	}
	return s.messagePageSQL(ctx, conversationID, userID, page)
}

func scanConversation(dest []any, c *conversation.ConversationRow) []any {
	return append(dest, &c.ConversationID, &c.Title, &c.UserID, &c.Username, &c.StartDate,
		&c.MessageCount, &c.FirstMessageID, &c.LastMessageID, &c.LastMessageDate, &c.LastReadDate,
		&c.Open, &c.OpenInvite, &c.Starred)
}

// querier is a database or a transaction (a GORM transaction's ConnPool), for reads that also
// make the answer of a write.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Conversation implements conversation.Store.
func (s *Store) Conversation(ctx context.Context, conversationID, userID int64) (conversation.ConversationRow, error) {
	return s.conversationOn(ctx, s.sql, conversationID, userID)
}

func (s *Store) conversationOn(ctx context.Context, q querier, conversationID, userID int64) (conversation.ConversationRow, error) {
	var c conversation.ConversationRow
	err := q.QueryRowContext(ctx, s.q.conversation, conversationID, userID).Scan(scanConversation(nil, &c)...)
	if errors.Is(err, sql.ErrNoRows) {
		return c, conversation.ErrConversationNotFound
	}
	if err != nil {
		return c, fmt.Errorf("read conversation: %w", err)
	}
	return c, s.recipients(ctx, q, &c)
}

// Message implements conversation.Store.
func (s *Store) Message(ctx context.Context, messageID, userID int64) (conversation.MessageRow, conversation.ConversationRow, error) {
	return s.messageOn(ctx, s.sql, messageID, userID)
}

func (s *Store) messageOn(ctx context.Context, q querier, messageID, userID int64) (conversation.MessageRow, conversation.ConversationRow, error) {
	var (
		m conversation.MessageRow
		c conversation.ConversationRow
	)
	dest := []any{&m.MessageID, &m.ConversationID, &m.Message, &m.MessageDate, &m.UserID, &m.Username}
	err := q.QueryRowContext(ctx, s.q.message, userID, messageID).Scan(scanConversation(dest, &c)...)
	if errors.Is(err, sql.ErrNoRows) {
		return m, c, conversation.ErrMessageNotFound
	}
	if err != nil {
		return m, c, fmt.Errorf("read message: %w", err)
	}
	return m, c, s.recipients(ctx, q, &c)
}

// recipients reads the participants of c other than its starter, those who left included (the
// others see no change when someone leaves).
func (s *Store) recipients(ctx context.Context, q querier, c *conversation.ConversationRow) error {
	rows, err := q.QueryContext(ctx, s.q.recipients, c.ConversationID, c.UserID)
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
	return nil
}

// MarkRead implements conversation.Store.
func (s *Store) MarkRead(ctx context.Context, conversationID, userID, date int64) error {
	return s.updateReadState(ctx, s.q.markRead, date, date, conversationID, userID)
}

// MarkUnread implements conversation.Store.
func (s *Store) MarkUnread(ctx context.Context, conversationID, userID int64) error {
	return s.updateReadState(ctx, s.q.markUnread, conversationID, userID)
}

func (s *Store) updateReadState(ctx context.Context, q string, args ...any) error {
	res, err := s.sql.ExecContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("update read state: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("update read state: %w", err)
	}
	if n == 0 { // no participant row: no such conversation for this user
		return conversation.ErrConversationNotFound
	}
	return nil
}

// LookupKey implements auth.Store.
func (s *Store) LookupKey(ctx context.Context, hash string) (auth.Key, bool, error) {
	k := auth.Key{Hash: hash}
	var scopes string
	err := s.sql.QueryRowContext(ctx, s.q.key, hash).Scan(&k.Type, &k.UserID, &scopes, &k.Active, &k.ExpiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		return auth.Key{}, false, nil
	}
	if err != nil {
		return auth.Key{}, false, err
	}
	k.Scopes = strings.Fields(scopes)
	return k, true, nil
}

// UserExists implements auth.Store.
func (s *Store) UserExists(ctx context.Context, userID int64) (bool, error) {
	var one int
	err := s.sql.QueryRowContext(ctx, s.q.userExists, userID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
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
