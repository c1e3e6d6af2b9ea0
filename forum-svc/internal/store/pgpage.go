package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"

	"forumstats.local/forum-svc/internal/conversation"
)

// messagePagePostgres is MessagePage on PostgreSQL, the request that every page view makes. It
// goes through the page batcher (pagebatch.go), which runs it alone or pipelined with the page
// queries of concurrent requests (runPages).
func (s *Store) messagePagePostgres(ctx context.Context, conversationID, userID, page int64) (conversation.PageRows, error) {
	return s.pages.do(&pageCall{ctx: ctx, conversationID: conversationID, user: userID, page: page})
}

// runPages runs PageSQL for each call on one connection of database/sql's pool, but through pgx
// itself: database/sql's pgx adapter boxes every column of every row into an interface value
// (about 85 allocations for a 20-message page), which made the adapter and its garbage the largest
// cost of the request after the system calls; here the raw column bytes are decoded in place
// (pageBuilder). Several calls go as one pipeline. A call that fails in a pipeline is run again
// alone, so that one bad query cannot fail its neighbours. The generic path stays for SQLite;
// TestMessagePagePathsAgree holds the two to the same answers.
func (s *Store) runPages(ctx context.Context, calls []*pageCall) {
	s.runPagesOnce(ctx, calls)
	if len(calls) == 1 {
		return
	}
	for _, c := range calls {
		if c.err != nil && !errors.Is(c.err, conversation.ErrConversationNotFound) && c.ctx.Err() == nil {
			s.runPagesOnce(c.ctx, []*pageCall{c})
		}
	}
}

func (s *Store) runPagesOnce(ctx context.Context, calls []*pageCall) {
	conn, err := s.sql.Conn(ctx)
	if err != nil {
		failPages(calls, err)
		return
	}
	defer conn.Close()
	err = conn.Raw(func(driverConn any) error {
		sc, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("driver connection is %T, not pgx", driverConn)
		}
		pc := sc.Conn()
		if len(calls) == 1 {
			c := calls[0]
			rows, err := pc.Query(ctx, s.q.page, c.conversationID, c.page, c.page, c.conversationID, c.user)
			c.rows, c.err = readPage(rows, err, c.conversationID)
			return nil
		}
		var batch pgx.Batch
		for _, c := range calls {
			batch.Queue(s.q.page, c.conversationID, c.page, c.page, c.conversationID, c.user)
		}
		results := pc.SendBatch(ctx, &batch)
		for _, c := range calls {
			rows, err := results.Query()
			c.rows, c.err = readPage(rows, err, c.conversationID)
		}
		// Every call has its answer now (a failure shows in the rows of the call it hit); closing
		// only ends the pipeline, and a connection it finds broken is dropped by the pool.
		_ = results.Close()
		return nil
	})
	if err != nil { // the function did not run, or refused the connection: no call has an answer
		failPages(calls, err)
	}
}

func failPages(calls []*pageCall, err error) {
	for _, c := range calls {
		c.rows, c.err = conversation.PageRows{}, fmt.Errorf("read message page: %w", err)
	}
}

// readPage reads PageSQL's result for one call (err is the error of starting the query).
func readPage(rows pgx.Rows, err error, conversationID int64) (conversation.PageRows, error) {
	if err != nil {
		return conversation.PageRows{}, fmt.Errorf("read message page: %w", err)
	}
	defer rows.Close()
	// A failed statement shows as no rows and rows.Err (pgx reports errors lazily).
	fields := rows.FieldDescriptions()
	var b pageBuilder
	for rows.Next() {
		if len(fields) != pageColumns {
			return conversation.PageRows{}, fmt.Errorf("read message page: %d columns, want %d", len(fields), pageColumns)
		}
		if err := b.add(fields, rows.RawValues()); err != nil {
			return conversation.PageRows{}, fmt.Errorf("read message page: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return conversation.PageRows{}, fmt.Errorf("read message page: %w", err)
	}
	return b.result(conversationID)
}

// pageColumns is the number of columns of PageSQL.
const pageColumns = 8

// pageBuilder turns PageSQL's rows, as raw PostgreSQL values, into PageRows. The message texts and
// usernames are appended to one buffer and become substrings of a single string at the end: one
// allocation for the page's text instead of two a row.
type pageBuilder struct {
	out   conversation.PageRows
	found bool
	text  []byte
	spans []textSpan // per message: message and username in text
}

type textSpan struct{ message, username [2]int }

func (b *pageBuilder) add(fields []pgconn.FieldDescription, vals [][]byte) error {
	if len(vals) != pageColumns {
		return fmt.Errorf("%d values, want %d", len(vals), pageColumns)
	}
	if !b.found {
		var err error
		if b.out.Total, err = notNullInt64(fields[0], vals[0]); err == nil {
			if b.out.PerPage, err = notNullInt64(fields[1], vals[1]); err == nil {
				b.out.LastReadDate, err = notNullInt64(fields[2], vals[2])
			}
		}
		if err != nil {
			return err
		}
		if b.out.PerPage > 0 && b.out.PerPage <= MaxMessagesPerPage {
			b.out.Messages = make([]conversation.MessageRow, 0, b.out.PerPage)
			b.spans = make([]textSpan, 0, b.out.PerPage)
			b.text = make([]byte, 0, b.out.PerPage*128) // room for typical messages in one go
		}
		b.found = true
	}
	if vals[3] == nil {
		return nil // the reader's row without a message: no message on this page
	}
	var m conversation.MessageRow
	var err error
	if m.MessageID, err = rawInt64(fields[3], vals[3]); err == nil {
		if m.MessageDate, err = rawInt64(fields[5], vals[5]); err == nil {
			m.UserID, err = rawInt64(fields[6], vals[6])
		}
	}
	if err != nil {
		return err
	}
	var span textSpan
	span.message = b.appendText(vals[4])
	span.username = b.appendText(vals[7])
	b.out.Messages = append(b.out.Messages, m)
	b.spans = append(b.spans, span)
	return nil
}

// appendText keeps a text value (binary and text format are both the UTF-8 bytes; NULL becomes
// "", as sql.NullString does).
func (b *pageBuilder) appendText(v []byte) [2]int {
	start := len(b.text)
	b.text = append(b.text, v...)
	return [2]int{start, len(b.text)}
}

func (b *pageBuilder) result(conversationID int64) (conversation.PageRows, error) {
	if !b.found {
		return conversation.PageRows{}, conversation.ErrConversationNotFound
	}
	text := string(b.text)
	for i := range b.out.Messages {
		m, sp := &b.out.Messages[i], b.spans[i]
		m.ConversationID = conversationID
		m.Message = text[sp.message[0]:sp.message[1]]
		m.Username = text[sp.username[0]:sp.username[1]]
	}
	return b.out, nil
}

func notNullInt64(f pgconn.FieldDescription, v []byte) (int64, error) {
	if v == nil {
		return 0, fmt.Errorf("column %s: NULL where a number is required", f.Name)
	}
	return rawInt64(f, v)
}

// rawInt64 decodes an integer column in either wire format (NULL is 0, as sql.NullInt64 has it).
func rawInt64(f pgconn.FieldDescription, v []byte) (int64, error) {
	if v == nil {
		return 0, nil
	}
	if f.Format == pgx.TextFormatCode {
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("column %s: %w", f.Name, err)
		}
		return n, nil
	}
	switch {
	case f.DataTypeOID == pgtype.Int8OID && len(v) == 8:
		return int64(binary.BigEndian.Uint64(v)), nil
	case f.DataTypeOID == pgtype.Int4OID && len(v) == 4:
		return int64(int32(binary.BigEndian.Uint32(v))), nil
	case f.DataTypeOID == pgtype.Int2OID && len(v) == 2:
		return int64(int16(binary.BigEndian.Uint16(v))), nil
	}
	return 0, fmt.Errorf("column %s: binary value of type %d and %d bytes is not an integer", f.Name, f.DataTypeOID, len(v))
}
