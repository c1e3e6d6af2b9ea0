package store

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/conversation"
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
// the same walk), each batch in a transaction of its own, so that SQLite's one writer is held for
// one batch at a time, and each update keeps its row only while the HTML is still missing, so an
// edit that stored the new text's HTML meanwhile is never overwritten with the old one's.

// BackfillBatch is how many messages a batch of BackfillMessageParsed renders and writes in one
// transaction.
const BackfillBatch = 500

// missingParsed is the condition of a message whose HTML was never stored.
const missingParsed = `(message_parsed IS NULL OR message_parsed = '')`

// BackfillMessageParsed stores the rendered HTML of every message that has none, batch messages a
// transaction, on the primary, and returns how many it wrote.
func (s *Store) BackfillMessageParsed(ctx context.Context, batch int) (int64, error) {
	if batch < 1 {
		return 0, fmt.Errorf("backfill batch %d: want at least 1", batch)
	}
	var total, after int64
	type message struct {
		id   int64
		text string
	}
	for {
		rows, err := s.db.WithContext(ctx).Raw(`SELECT message_id, message FROM conversation_messages
WHERE message_id > ? AND `+missingParsed+` ORDER BY message_id LIMIT ?`, after, batch).Rows()
		if err != nil {
			return total, fmt.Errorf("read messages without HTML: %w", err)
		}
		var found []message
		for rows.Next() {
			var m message
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
		// Rendered before the transaction, so that it holds the writer only for the updates.
		html := make([]string, len(found))
		for i, m := range found {
			html[i] = conversation.RenderMessage(m.text)
		}
		var written int64
		err = s.tx(ctx, func(tx *gorm.DB) error {
			written = 0
			for i, m := range found {
				if html[i] == "" {
					continue // nothing to store: read as missing, it renders as empty again
				}
				res := tx.Exec(`UPDATE conversation_messages SET message_parsed = ? WHERE message_id = ? AND `+missingParsed, html[i], m.id)
				if res.Error != nil {
					return res.Error
				}
				written += res.RowsAffected
			}
			return nil
		})
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
