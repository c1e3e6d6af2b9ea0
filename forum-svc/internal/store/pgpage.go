package store

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"

	"forumstats.local/forum-svc/internal/conversation"
)

// messagePagePostgres is MessagePage on PostgreSQL, the request that every page view makes. It
// runs pageSQL on a connection of database/sql's pool, but through pgx itself: database/sql's pgx
// adapter boxes every column of every row into an interface value (about 85 allocations for a
// 20-message page); here the raw column bytes are decoded in place (rawPage). forum-svc/README.md
// shows what this buys.
func (s *Store) messagePagePostgres(ctx context.Context, conversationID, userID, page int64) (conversation.PageRows, error) {
	conn, err := s.sql.Conn(ctx)
	if err != nil {
		return conversation.PageRows{}, fmt.Errorf("read message page: %w", err)
	}
	defer conn.Close()
	var out conversation.PageRows
	err = conn.Raw(func(driverConn any) error {
		sc, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("read message page: driver connection is %T, not pgx", driverConn)
		}
		rows, err := sc.Conn().Query(ctx, s.q.page, pageArgs(conversationID, userID, page)...)
		out, err = readPage(rows, err, conversationID)
		return err
	})
	return out, err
}

// readPage reads pageSQL's result (err is the error of starting the query).
func readPage(rows pgx.Rows, err error, conversationID int64) (conversation.PageRows, error) {
	if err != nil {
		return conversation.PageRows{}, fmt.Errorf("read message page: %w", err)
	}
	defer rows.Close()
	// A failed statement shows as no rows and rows.Err (pgx reports errors lazily).
	fields := rows.FieldDescriptions()
	b := rawPage{pageBuilder: pageBuilder{conversationID: conversationID}}
	for rows.Next() {
		if err := b.add(fields, rows.RawValues()); err != nil {
			return conversation.PageRows{}, fmt.Errorf("read message page: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return conversation.PageRows{}, fmt.Errorf("read message page: %w", err)
	}
	return b.result()
}

// rawPage builds a page from pageSQL's rows as raw PostgreSQL values. The texts are appended to
// one buffer and become substrings of a single string at the end: one allocation for the page's
// text instead of one a text column and row.
type rawPage struct {
	pageBuilder
	text  []byte
	spans []textSpan
}

// textSpan is where a text column of a message lies in rawPage.text.
type textSpan struct{ message, column, start, end int }

func (b *rawPage) add(fields []pgconn.FieldDescription, vals [][]byte) error {
	if len(fields) != len(pageColumns) || len(vals) != len(pageColumns) {
		return fmt.Errorf("%d columns, want %d", len(vals), len(pageColumns))
	}
	if !b.found {
		for i, c := range pageColumns {
			if c.header == nil {
				continue
			}
			n, err := notNullInt64(fields[i], vals[i])
			if err != nil {
				return err
			}
			*c.header(&b.out) = n
		}
		b.begin()
		if n := cap(b.out.Messages); n > 0 {
			b.spans = make([]textSpan, 0, n*pageTextColumns)
			b.text = make([]byte, 0, n*128) // room for typical messages in one go
		}
	}
	if vals[pageKeyColumn] == nil {
		return nil // the reader's row without a message: no message on this page
	}
	m := b.message()
	for i, c := range pageColumns {
		switch {
		case c.number != nil:
			n, err := rawInt64(fields[i], vals[i])
			if err != nil {
				return err
			}
			*c.number(m) = n
		case c.text != nil:
			// Binary and text format are both the UTF-8 bytes; NULL becomes "", as sql.NullString has it.
			start := len(b.text)
			b.text = append(b.text, vals[i]...)
			b.spans = append(b.spans, textSpan{len(b.out.Messages) - 1, i, start, len(b.text)})
		}
	}
	return nil
}

func (b *rawPage) result() (conversation.PageRows, error) {
	text := string(b.text)
	for _, sp := range b.spans {
		*pageColumns[sp.column].text(&b.out.Messages[sp.message]) = text[sp.start:sp.end]
	}
	return b.pageBuilder.result()
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
