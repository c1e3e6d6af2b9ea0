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
	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/shared/db"
)

// Attachments: keys, files and their chunks. They are read and written on the primary: a file
// just uploaded, listed or attached must be found at once by its uploader, and a replica's lag
// would hide it.

var _ attachment.Store = (*Store)(nil)

// Limits implements attachment.Store.
func (s *Store) Limits(ctx context.Context) (attachment.Limits, error) {
	return limitsOn(s.db.WithContext(ctx))
}

func limitsOn(q *gorm.DB) (attachment.Limits, error) {
	var (
		l    attachment.Limits
		exts string
	)
	err := q.Raw(`SELECT attachment_max_file_size, attachment_max_per_message, attachment_extensions FROM forum_options`).Row().
		Scan(&l.MaxFileSize, &l.MaxPerMessage, &exts)
	if err != nil {
		return l, fmt.Errorf("read attachment options: %w", err)
	}
	// Stored as SetAttachmentExtensions wrote it: read back as such.
	l.Extensions = strings.Fields(exts)
	return l, nil
}

// CreateKey implements attachment.Store.
func (s *Store) CreateKey(ctx context.Context, k attachment.Key) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		if k.ConversationID != 0 {
			var one int
			err := tx.Raw(`SELECT 1 FROM conversation_participants WHERE conversation_id = ? AND user_id = ? AND left_state = 0`,
				k.ConversationID, k.UserID).Row().Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return conversation.ErrConversationNotFound
			}
			if err != nil {
				return err
			}
		}
		return tx.Exec(`INSERT INTO attachment_keys (attachment_key, user_id, conversation_id, created_at) VALUES (?, ?, ?, ?)`,
			k.Key, k.UserID, nullIfZero(k.ConversationID), k.CreatedAt).Error
	})
}

// Key implements attachment.Store.
func (s *Store) Key(ctx context.Context, key string) (attachment.Key, error) {
	return keyOn(s.db.WithContext(ctx), key)
}

func keyOn(q *gorm.DB, key string) (attachment.Key, error) {
	k := attachment.Key{Key: key}
	err := q.Raw(`SELECT user_id, COALESCE(conversation_id, 0), created_at FROM attachment_keys WHERE attachment_key = ?`, key).
		Row().Scan(&k.UserID, &k.ConversationID, &k.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return k, conversation.ErrAttachmentKeyNotFound
	}
	if err != nil {
		return k, fmt.Errorf("read attachment key: %w", err)
	}
	return k, nil
}

const attachmentColumns = `a.attachment_id, COALESCE(a.message_id, 0), a.user_id, a.filename, a.file_size, a.file_hash,
       a.mime_type, a.width, a.height, a.attach_date`

func scanAttachments(rows *sql.Rows) ([]attachment.Row, error) {
	defer rows.Close()
	out := []attachment.Row{}
	for rows.Next() {
		var r attachment.Row
		if err := rows.Scan(&r.AttachmentID, &r.MessageID, &r.UserID, &r.Filename, &r.FileSize, &r.FileHash,
			&r.MimeType, &r.Width, &r.Height, &r.AttachDate); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// KeyAttachments implements attachment.Store.
func (s *Store) KeyAttachments(ctx context.Context, key string) ([]attachment.Row, error) {
	rows, err := s.db.WithContext(ctx).Raw(`SELECT `+attachmentColumns+` FROM attachments a
WHERE a.attachment_key = ? AND a.complete ORDER BY a.attachment_id`, key).Rows()
	if err != nil {
		return nil, fmt.Errorf("read attachments: %w", err)
	}
	return scanAttachments(rows)
}

// visibleSQL reads an attachment for a user: one attached to a message of a conversation the
// user is in, or one not attached yet that the user uploaded.
const visibleSQL = `SELECT ` + attachmentColumns + `
FROM attachments a
LEFT JOIN conversation_messages m ON m.message_id = a.message_id
LEFT JOIN conversation_participants p ON p.conversation_id = m.conversation_id AND p.user_id = ? AND p.left_state = 0
WHERE a.attachment_id = ? AND a.complete
  AND ((a.message_id IS NULL AND a.user_id = ?) OR p.user_id IS NOT NULL)`

// Attachment implements attachment.Store.
func (s *Store) Attachment(ctx context.Context, id, userID int64) (attachment.Row, error) {
	rows, err := s.db.WithContext(ctx).Raw(visibleSQL, userID, id, userID).Rows()
	if err != nil {
		return attachment.Row{}, fmt.Errorf("read attachment: %w", err)
	}
	found, err := scanAttachments(rows)
	if err != nil {
		return attachment.Row{}, fmt.Errorf("read attachment: %w", err)
	}
	if len(found) == 0 {
		return attachment.Row{}, attachment.ErrNotFound
	}
	return found[0], nil
}

// DeleteAttachment implements attachment.Store: the chunks and the thumbnail go with the row (ON
// DELETE CASCADE), and a message it was attached to counts one fewer, in the same transaction.
func (s *Store) DeleteAttachment(ctx context.Context, id int64) error {
	return s.tx(ctx, func(tx *gorm.DB) error {
		// The file's row is locked first (PostgreSQL; SQLite runs one writer at a time), so that
		// a write attaching it meanwhile is seen: its message is then the one to count down.
		q := `SELECT COALESCE(message_id, 0) FROM attachments WHERE attachment_id = ?`
		if s.dialect.Name == db.Postgres.Name {
			q += " FOR UPDATE"
		}
		var messageID int64
		err := tx.Raw(q, id).Row().Scan(&messageID)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil // gone already
		case err != nil:
			return err
		}
		if err := tx.Exec(`DELETE FROM attachments WHERE attachment_id = ?`, id).Error; err != nil {
			return err
		}
		return tx.Exec(`UPDATE conversation_messages SET attach_count = attach_count - 1 WHERE message_id = ?`, messageID).Error
	})
}

// Thumbnail implements attachment.Store.
func (s *Store) Thumbnail(ctx context.Context, id int64) (mimeType string, b []byte, found bool, err error) {
	err = s.db.WithContext(ctx).Raw(`SELECT mime_type, bytes FROM attachment_thumbnails WHERE attachment_id = ?`, id).
		Row().Scan(&mimeType, &b)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, false, nil
	}
	return mimeType, b, err == nil, err
}

// SaveThumbnail implements attachment.Store; two requests that made the same thumbnail at once
// keep the first.
func (s *Store) SaveThumbnail(ctx context.Context, id int64, mimeType string, b []byte) error {
	return s.db.WithContext(ctx).Exec(`INSERT INTO attachment_thumbnails (attachment_id, mime_type, bytes) VALUES (?, ?, ?)
ON CONFLICT (attachment_id) DO NOTHING`, id, mimeType, b).Error
}

// CreateAttachment implements attachment.Blobs. The key's row is locked first (FOR UPDATE on
// PostgreSQL; SQLite runs one writer at a time), so the count and the insert are one step for
// every upload under the key.
func (s *Store) CreateAttachment(ctx context.Context, a attachment.NewAttachment) (id int64, err error) {
	err = s.tx(ctx, func(tx *gorm.DB) error {
		lock := `SELECT 1 FROM attachment_keys WHERE attachment_key = ?`
		if s.dialect.Name == db.Postgres.Name {
			lock += ` FOR UPDATE`
		}
		var one int
		if err := tx.Raw(lock, a.Key).Row().Scan(&one); errors.Is(err, sql.ErrNoRows) {
			return conversation.ErrAttachmentKeyNotFound // swept since it was read
		} else if err != nil {
			return err
		}
		var held int64
		if err := tx.Raw(`SELECT COUNT(*) FROM attachments WHERE attachment_key = ?`, a.Key).Row().Scan(&held); err != nil {
			return err
		}
		if held >= a.MaxPerKey {
			return &conversation.TooManyAttachmentsError{Max: a.MaxPerKey}
		}
		return tx.Raw(`INSERT INTO attachments (attachment_key, user_id, filename, file_size, file_hash, mime_type, attach_date)
VALUES (?, ?, ?, 0, '', '', ?) RETURNING attachment_id`, a.Key, a.UserID, a.Filename, a.Date).Row().Scan(&id)
	})
	if err != nil {
		return 0, fmt.Errorf("insert attachment: %w", err)
	}
	return id, nil
}

// WriteChunk implements attachment.Blobs: each chunk is its own statement, so that a slow upload
// holds no transaction (SQLite's one writer) while its bytes arrive.
func (s *Store) WriteChunk(ctx context.Context, id, seq int64, b []byte) error {
	return s.db.WithContext(ctx).Exec(`INSERT INTO attachment_data (attachment_id, seq, bytes) VALUES (?, ?, ?)`, id, seq, b).Error
}

// FinishAttachment implements attachment.Blobs.
func (s *Store) FinishAttachment(ctx context.Context, id int64, f attachment.Finished) error {
	return s.db.WithContext(ctx).Exec(`UPDATE attachments SET file_size = ?, file_hash = ?, mime_type = ?, width = ?, height = ?, complete = ?
WHERE attachment_id = ?`, f.Size, f.Hash, f.MimeType, f.Width, f.Height, true, id).Error
}

// DiscardAttachment implements attachment.Blobs.
func (s *Store) DiscardAttachment(ctx context.Context, id int64) error {
	return s.db.WithContext(ctx).Exec(`DELETE FROM attachments WHERE attachment_id = ? AND NOT complete`, id).Error
}

// ReadChunk implements attachment.Blobs.
func (s *Store) ReadChunk(ctx context.Context, id, seq int64) (b []byte, err error) {
	err = s.db.WithContext(ctx).Raw(`SELECT bytes FROM attachment_data WHERE attachment_id = ? AND seq = ?`, id, seq).Row().Scan(&b)
	if err != nil {
		return nil, fmt.Errorf("read attachment %d chunk %d: %w", id, seq, err)
	}
	return b, nil
}

// attach gives the message the complete files of key, in the transaction of the write that
// names it (conversation.CheckAttach decides), and takes them out of the key: from then on the
// conversation's participants see them, and the sweep of the key leaves them.
func attach(tx *gorm.DB, key string, userID, conversationID, messageID int64, isStart bool) error {
	if key == "" {
		return nil
	}
	k, err := keyOn(tx, key)
	if err != nil {
		return err
	}
	limits, err := limitsOn(tx)
	if err != nil {
		return err
	}
	t := conversation.AttachTarget{KeyUserID: k.UserID, KeyConversationID: k.ConversationID, UserID: userID,
		ConversationID: conversationID, MaxPerMessage: limits.MaxPerMessage}
	if isStart {
		t.ConversationID = 0
	}
	if err := tx.Raw(`SELECT COUNT(*) FROM attachments WHERE message_id = ?`, messageID).Row().Scan(&t.Attached); err != nil {
		return err
	}
	if err := tx.Raw(`SELECT COUNT(*) FROM attachments WHERE attachment_key = ? AND complete`, key).Row().Scan(&t.Adding); err != nil {
		return err
	}
	if err := conversation.CheckAttach(t); err != nil {
		return err
	}
	moved := tx.Exec(`UPDATE attachments SET message_id = ?, attachment_key = NULL WHERE attachment_key = ? AND complete`,
		messageID, key)
	if moved.Error != nil {
		return moved.Error
	}
	// An increment, not a recount: under the message's row lock (PostgreSQL re-reads a row it
	// waited for) two writes attaching to one message each add their own files.
	return tx.Exec(`UPDATE conversation_messages SET attach_count = attach_count + ? WHERE message_id = ?`,
		moved.RowsAffected, messageID).Error
}

// MessageAttachments returns the attachments of the messages, by message id, oldest first: for
// the messages of a page, one query whatever their number.
func (s *Store) MessageAttachments(ctx context.Context, messageIDs []int64) (map[int64][]attachment.Row, error) {
	return messageAttachmentsOn(s.db.WithContext(ctx), messageIDs)
}

// messageAttachmentsOn is MessageAttachments on q: a database, or a write's transaction.
func messageAttachmentsOn(q *gorm.DB, messageIDs []int64) (map[int64][]attachment.Row, error) {
	out := map[int64][]attachment.Row{}
	if len(messageIDs) == 0 {
		return out, nil
	}
	rows, err := q.Raw(`SELECT `+attachmentColumns+` FROM attachments a
WHERE a.message_id IN ? ORDER BY a.attachment_id`, messageIDs).Rows()
	if err != nil {
		return nil, fmt.Errorf("read attachments: %w", err)
	}
	found, err := scanAttachments(rows)
	if err != nil {
		return nil, fmt.Errorf("read attachments: %w", err)
	}
	for _, r := range found {
		out[r.MessageID] = append(out[r.MessageID], r)
	}
	return out, nil
}

// withAttachments returns the ids of the messages that have attachments (AttachCount).
func withAttachments(messages []conversation.MessageRow) []int64 {
	var ids []int64
	for _, m := range messages {
		if m.AttachCount > 0 {
			ids = append(ids, m.MessageID)
		}
	}
	return ids
}

// fillAttachments gives the messages ids (withAttachments) their Attachment objects, in one
// query on q (the read's database, or the transaction of the write whose answer they make). The
// caller makes no call, and so no query, when ids is empty: a page without attachments costs
// nothing more than its own statement.
func fillAttachments(q *gorm.DB, messages []conversation.MessageRow, ids []int64) error {
	found, err := messageAttachmentsOn(q, ids)
	if err != nil {
		return err
	}
	for i := range messages {
		rows := found[messages[i].MessageID]
		if len(rows) == 0 {
			continue
		}
		messages[i].Attachments = make([]conversation.Attachment, len(rows))
		for j, r := range rows {
			messages[i].Attachments[j] = attachment.ToAttachment(r)
		}
	}
	return nil
}

// AttachmentKeySweepBatch is how many keys one statement of SweepAttachmentKeys deletes at most:
// each takes its unattached files and their chunks with it (up to attachmentMaxPerMessage files
// of 40 chunks at the default limits), so a batch is far smaller than the answers'.
const AttachmentKeySweepBatch = 100

// SweepAttachmentKeys deletes the attachment keys created attachment.KeyLifetime or longer before
// now (Unix seconds), with the files they still hold (ON DELETE CASCADE: files attached since
// hold no key), in statements of at most batch keys, the oldest first, and returns how many keys
// it deleted. It stops at the first statement that deletes fewer than batch keys. An upload cut
// short (its row never complete) goes with its key too.
func (s *Store) SweepAttachmentKeys(ctx context.Context, now int64, batch int) (int64, error) {
	if batch < 1 {
		return 0, fmt.Errorf("sweep batch %d: want at least 1", batch)
	}
	oldest := `SELECT attachment_key FROM attachment_keys WHERE created_at <= ? ORDER BY created_at LIMIT ?`
	if s.dialect.Name == db.Postgres.Name {
		oldest += ` FOR UPDATE SKIP LOCKED`
	}
	expired := now - int64(attachment.KeyLifetime/time.Second)
	var total int64
	for {
		res := s.db.WithContext(ctx).Exec(`DELETE FROM attachment_keys WHERE attachment_key IN (`+oldest+`)`, expired, batch)
		if res.Error != nil {
			return total, fmt.Errorf("sweep expired attachment keys: %w", res.Error)
		}
		total += res.RowsAffected
		if res.RowsAffected < int64(batch) {
			return total, nil
		}
	}
}

// OptionAttachmentExtensions is the name of the list of extensions an upload may have
// (`options set attachmentExtensions "png jpg pdf"`, a seed file's `options`), the one option
// that is not a number.
const OptionAttachmentExtensions = "attachmentExtensions"

// SetAttachmentExtensions stores the list of extensions, as attachment.ParseExtensions reads it.
func SetAttachmentExtensions(ctx context.Context, tx *gorm.DB, value string) ([]string, error) {
	exts, err := attachment.ParseExtensions(value)
	if err != nil {
		return nil, err
	}
	err = tx.WithContext(ctx).Exec(`UPDATE forum_options SET attachment_extensions = ? WHERE id = 1`, strings.Join(exts, " ")).Error
	return exts, err
}
