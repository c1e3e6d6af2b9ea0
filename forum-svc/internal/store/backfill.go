package store

import (
	"context"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/shared/db"
)

// The HTML of the messages written before message_parsed existed.
//
// Such a message has NULL there (the column was added without a default; an empty HTML is read
// the same way). It must answer its rendered HTML like any other, and it could be rendered on
// every read instead, which the service also does for a row not reached yet
// (conversation's viewer.message). But rendering on read charges every read of an old message for
// ever, a page of them up to 100 renders of about 0.8 ms for a long message, and the benchmark
// measured the message page at 0.37 of pgbench that way against 0.63 with the HTML stored
// (forum-svc/README.md). So the HTML is written once: `serve` backfills in the background as it
// starts and `migrate` before it returns. It is a Go step rather than a migration since the
// renderer is Go's (internal/bbcode): SQL cannot produce the HTML on either dialect.
//
// It is idempotent and safe beside the writes and another instance's backfill: it walks the
// messages once in message_id order (a message whose HTML renders empty is not taken up again in
// the same walk), each batch written on its own (writeParsed), so that SQLite's one writer is
// held for one batch at a time, and the update keeps a row only while its HTML is still missing,
// so an edit that stored the new text's HTML meanwhile is never overwritten with the old one's.

// BackfillBatch is how many messages a batch of BackfillMessageParsed reads, renders and writes.
const BackfillBatch = 500

// missingParsed is the condition of a message whose HTML was never stored.
const missingParsed = `(message_parsed IS NULL OR message_parsed = '')`

// BackfillMessageParsed stores the rendered HTML of every message that has none, batch messages at
// a time, on the primary, and returns how many it wrote.
func (s *Store) BackfillMessageParsed(ctx context.Context, batch int) (int64, error) {
	if batch < 1 {
		return 0, fmt.Errorf("backfill batch %d: want at least 1", batch)
	}
	var total, after int64
	for {
		rows, err := s.db.WithContext(ctx).Raw(`SELECT message_id, message FROM conversation_messages
WHERE message_id > ? AND `+missingParsed+` ORDER BY message_id LIMIT ?`, after, batch).Rows()
		if err != nil {
			return total, fmt.Errorf("read messages without HTML: %w", err)
		}
		var found []parsedMessage
		for rows.Next() {
			var m parsedMessage
			if err := rows.Scan(&m.id, &m.text); err != nil {
				rows.Close()
				return total, fmt.Errorf("read messages without HTML: %w", err)
			}
			found = append(found, m)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return total, fmt.Errorf("read messages without HTML: %w", err)
		}
		if len(found) == 0 {
			return total, nil
		}
		// Rendered before the writing, so that it holds the writer only for the writes.
		for i := range found {
			found[i].html = conversation.RenderMessage(found[i].text)
		}
		written, err := s.writeParsed(ctx, found)
		if err != nil {
			return total, fmt.Errorf("store messages' HTML: %w", err)
		}
		total += written
		after = found[len(found)-1].id
		if len(found) < batch {
			return total, nil
		}
	}
}

// parsedMessage is a message of a backfill batch: its text and its rendered HTML.
type parsedMessage struct {
	id         int64
	text, html string
}

// writeParsed stores a batch's HTML where it is still missing and returns the rows written. On
// PostgreSQL it is one statement, the batch's (id, HTML) pairs joined as a table, so that a
// batch costs one round trip rather than one a message (200,000 messages on the loaded 2-core
// development machine: 11 to 24 s, against 64 s with a statement a message). On SQLite, which has
// no round trips to save and whose planner drives such a join by a scan of conversation_messages
// (57 s against 15 to 18 s), it is a statement a message in one transaction. A message whose HTML renders empty is left as it is: read as
// missing, it renders as empty again.
func (s *Store) writeParsed(ctx context.Context, batch []parsedMessage) (int64, error) {
	if s.dialect.Name == db.Postgres.Name {
		values := make([]string, 0, len(batch))
		args := make([]any, 0, 2*len(batch))
		for _, m := range batch {
			if m.html != "" {
				values = append(values, "(CAST(? AS BIGINT), CAST(? AS TEXT))")
				args = append(args, m.id, m.html)
			}
		}
		if len(values) == 0 {
			return 0, nil
		}
		res := s.db.WithContext(ctx).Exec(`WITH v (id, html) AS (VALUES `+strings.Join(values, ", ")+`)
UPDATE conversation_messages SET message_parsed = v.html FROM v
WHERE conversation_messages.message_id = v.id AND `+missingParsed, args...)
		return res.RowsAffected, res.Error
	}
	var written int64
	err := s.tx(ctx, func(tx *gorm.DB) error {
		written = 0
		for _, m := range batch {
			if m.html == "" {
				continue
			}
			res := tx.Exec(`UPDATE conversation_messages SET message_parsed = ? WHERE message_id = ? AND `+missingParsed, m.html, m.id)
			if res.Error != nil {
				return res.Error
			}
			written += res.RowsAffected
		}
		return nil
	})
	return written, err
}
