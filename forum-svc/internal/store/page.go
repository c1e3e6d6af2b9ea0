package store

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/conversation"
)

// The message page, the request every page view makes. pageColumns is the one place that knows
// its columns: pageSQL's select lists are built from it, and both decoders (messagePageSQL below,
// through GORM's rows; readPage in pgpage.go, through pgx on PostgreSQL) fill the page
// through it, knowing only whether a column is a number or a text. Its parameters are known only
// to pageArgs. Adding a column is a line in pageColumns and a field of conversation.MessageRow;
// TestMessagePagePathsAgree holds the two decoders to the same answers.

// pageColumn is one column of pageSQL: a header column (a number of the page, the same on every
// row), or a message column, selected by the derived table m and NULL on the reader's row when the
// page has no message.
type pageColumn struct {
	// expr is the select expression: in the outer select for a header column, in m's select for
	// a message column (the outer select reads it from m under its own name).
	expr   string
	header func(*conversation.PageRows) *int64    // a header column
	number func(*conversation.MessageRow) *int64  // a message column holding a number
	text   func(*conversation.MessageRow) *string // a message column holding a text
}

// pageColumns, in select order. The first message column is the message's key: NULL there means
// that the row carries no message. NULL elsewhere reads as 0 or "".
var pageColumns = []pageColumn{
	{expr: "c.message_count", header: func(p *conversation.PageRows) *int64 { return &p.Total }},
	{expr: "o.messages_per_page", header: func(p *conversation.PageRows) *int64 { return &p.PerPage }},
	{expr: "p.last_read_date", header: func(p *conversation.PageRows) *int64 { return &p.LastReadDate }},
	{expr: "CAST(c.conversation_open AS INT)", header: func(p *conversation.PageRows) *int64 { return &p.Open }},
	{expr: "o.edit_own_message_time_limit", header: func(p *conversation.PageRows) *int64 { return &p.EditTimeLimit }},
	{expr: "m.message_id", number: func(m *conversation.MessageRow) *int64 { return &m.MessageID }},
	{expr: "m.message", text: func(m *conversation.MessageRow) *string { return &m.Message }},
	{expr: "m.message_date", number: func(m *conversation.MessageRow) *int64 { return &m.MessageDate }},
	{expr: "m.user_id", number: func(m *conversation.MessageRow) *int64 { return &m.UserID }},
	{expr: "u.username", text: func(m *conversation.MessageRow) *string { return &m.Username }},
	{expr: "m.message_parsed", text: func(m *conversation.MessageRow) *string { return &m.MessageParsed }},
	{expr: "m.reaction_score", number: func(m *conversation.MessageRow) *int64 { return &m.ReactionScore }},
	// The reader's reaction (NULL, read as 0: none).
	{expr: "r.reaction_id", number: func(m *conversation.MessageRow) *int64 { return &m.VisitorReactionID }},
	// Kept with the message (attach), so that the page counts nothing; the attachments themselves
	// are read only for a page that has some.
	{expr: "m.attach_count", number: func(m *conversation.MessageRow) *int64 { return &m.AttachCount }},
}

// pageKeyColumn is the index of the first message column.
var pageKeyColumn = slices.IndexFunc(pageColumns, func(c pageColumn) bool { return c.header == nil })

// pageSQL reads a page of messages in one round trip: the reader's participant row proves access,
// and the message count and the page size in force come with the page. The page is the index
// range of positions (page-1)*per+1 .. page*per on (conversation_id, position), never an OFFSET
// scan. The range sits in a derived table bounded by LIMIT 100 (the largest page size the schema
// allows) so that PostgreSQL's estimate stays small and it settles on one generic plan for the
// prepared statement instead of planning every execution. Its parameters are pageArgs. It is one
// line, its white space collapsed, so that it stays within PostgreSQL's default
// track_activity_query_size (1 kB) and pg_stat_activity shows it whole (the benchmark replays it
// from there; TestPageStatementFitsActivity holds it to that): a few of its operators go without
// spaces to stay within it.
var pageSQL = strings.Join(strings.Fields(buildPageSQL()), " ")

func buildPageSQL() string {
	var outer, inner []string
	for _, c := range pageColumns {
		if c.header != nil {
			outer = append(outer, c.expr)
			continue
		}
		_, name, _ := strings.Cut(c.expr, ".")
		outer = append(outer, "m."+name)
		inner = append(inner, c.expr)
	}
	return `
SELECT ` + strings.Join(outer, ", ") + `
FROM conversation_participants p
JOIN conversations c ON c.conversation_id = p.conversation_id
CROSS JOIN forum_options o
LEFT JOIN (
    SELECT ` + strings.Join(inner, ", ") + `, m.position
    FROM conversation_messages m
    JOIN users u ON u.user_id = m.user_id
    LEFT JOIN conversation_message_reactions r ON r.message_id=m.message_id AND r.user_id=?
    WHERE m.conversation_id = ?
      AND m.position BETWEEN (CAST(? AS BIGINT)-1)*(SELECT messages_per_page FROM forum_options)+1
                         AND CAST(? AS BIGINT)*(SELECT messages_per_page FROM forum_options)
    ORDER BY m.position
    LIMIT 100
) m ON TRUE
WHERE p.conversation_id = ? AND p.user_id = ? AND p.left_state = 0
ORDER BY m.position`
}

// pageArgs are pageSQL's parameters, in order.
func pageArgs(conversationID, userID, page int64) []any {
	return []any{userID, conversationID, page, page, conversationID, userID}
}

// pageBuilder assembles PageRows from pageSQL's rows, whichever decoder reads them.
type pageBuilder struct {
	conversationID int64
	out            conversation.PageRows
	found          bool
}

// begin follows the first row's header columns: the page exists for the reader.
func (b *pageBuilder) begin() {
	if b.out.PerPage > 0 && b.out.PerPage <= MaxMessagesPerPage {
		b.out.Messages = make([]conversation.MessageRow, 0, b.out.PerPage) // the page size in force
	}
	b.found = true
}

// message appends a message for the decoder to fill; the pointer is valid until the next call.
func (b *pageBuilder) message() *conversation.MessageRow {
	b.out.Messages = append(b.out.Messages, conversation.MessageRow{ConversationID: b.conversationID})
	return &b.out.Messages[len(b.out.Messages)-1]
}

func (b *pageBuilder) result() (conversation.PageRows, error) {
	if !b.found { // no participant row: no such conversation for this reader
		return conversation.PageRows{}, conversation.ErrConversationNotFound
	}
	return b.out, nil
}

// messagePageSQL is MessagePage through GORM (database/sql's rows), on q: for SQLite.
func messagePageSQL(q *gorm.DB, conversationID, userID, page int64) (conversation.PageRows, error) {
	rows, err := q.Raw(pageSQL, pageArgs(conversationID, userID, page)...).Rows()
	if err != nil {
		return conversation.PageRows{}, fmt.Errorf("read message page: %w", err)
	}
	defer rows.Close()
	// The columns are scanned into interface values (database/sql's cheapest destination: no
	// reflection) and converted by nullable, which does what sql.Null's Scan does. One set of
	// destinations serves every row.
	vals := make([]any, len(pageColumns))
	dest := make([]any, len(pageColumns))
	for i := range vals {
		dest[i] = &vals[i]
	}
	b := pageBuilder{conversationID: conversationID}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return conversation.PageRows{}, fmt.Errorf("read message page: %w", err)
		}
		if err := b.addScanned(vals); err != nil {
			return conversation.PageRows{}, fmt.Errorf("read message page: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return conversation.PageRows{}, fmt.Errorf("read message page: %w", err)
	}
	return b.result()
}

// addScanned adds a row scanned by database/sql.
func (b *pageBuilder) addScanned(vals []any) error {
	if !b.found {
		for i, c := range pageColumns {
			if c.header == nil {
				continue
			}
			n, err := int64Column(vals[i])
			if err != nil {
				return fmt.Errorf("column %s: %w", c.expr, err)
			}
			*c.header(&b.out) = n
		}
		b.begin()
	}
	if vals[pageKeyColumn] == nil {
		return nil // the reader's row without a message: no message on this page
	}
	m := b.message()
	for i, c := range pageColumns {
		var err error
		switch {
		case c.number != nil:
			var n sql.Null[int64]
			n, err = nullable[int64](vals[i])
			*c.number(m) = n.V
		case c.text != nil:
			var s sql.Null[string]
			s, err = nullable[string](vals[i])
			*c.text(m) = s.V
		}
		if err != nil {
			return fmt.Errorf("column %s: %w", c.expr, err)
		}
	}
	return nil
}

// nullable converts a scanned column value as sql.Null[T].Scan does, without its reflection for the
// values the drivers return (a T or NULL).
func nullable[T int64 | string](v any) (sql.Null[T], error) {
	switch v := v.(type) {
	case T:
		return sql.Null[T]{V: v, Valid: true}, nil
	case nil:
		return sql.Null[T]{}, nil
	}
	var n sql.Null[T]
	err := n.Scan(v)
	return n, err
}

// int64Column converts a scanned NOT NULL column value as scanning into *int64 does.
func int64Column(v any) (int64, error) {
	n, err := nullable[int64](v)
	if err == nil && !n.Valid {
		err = errors.New("converting NULL to int64 is unsupported")
	}
	return n.V, err
}
