package attachment

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"image"
	"io"
	"net/http"
	"time"

	"forumstats.local/forum-svc/internal/conversation"
)

// Service applies the rules of attachments for a user.
type Service struct {
	store Store
	now   func() time.Time
	// writers holds a slot per chunk being written: however many uploads arrive at once, at most
	// ChunkWriters chunks are in the driver (each copied there once or twice) and at most that many
	// of the pool's connections write chunks, so that uploads neither grow the heap with their
	// number nor take every connection from the other requests.
	writers chan struct{}
	// thumbnailing holds a slot per thumbnail being made: decoding an image takes up to 4 bytes a
	// pixel (64 MB at MaxThumbnailPixels), so the first requests of many large images at once
	// decode one after the other instead of all together.
	thumbnailing chan struct{}
}

// ChunkWriters is how many chunks the process writes at once.
const ChunkWriters = 2

// NewService returns a Service over store. now is the clock (time.Now when nil).
func NewService(store Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, now: now, writers: make(chan struct{}, ChunkWriters), thumbnailing: make(chan struct{}, 1)}
}

// Limits returns the forum options of uploads (the upload routes' body limit depends on them).
func (s *Service) Limits(ctx context.Context) (Limits, error) { return s.store.Limits(ctx) }

// ParseNewKey checks the fields of a new key: type conversation_message, and an optional
// context[conversation_id] (a positive integer) for a reply or an edit.
func ParseNewKey(f conversation.Fields) (conversationID int64, err error) {
	t, blank, err := f.Text(FieldType)
	switch {
	case err != nil:
		return 0, err
	case blank:
		return 0, &conversation.MissingInputError{Fields: []string{FieldType}}
	case t != ContentType:
		return 0, &conversation.InvalidInputError{Field: FieldType}
	}
	return f.ID(FieldContextConversation)
}

// NewKey gives userID a new key for the fields of ParseNewKey.
func (s *Service) NewKey(ctx context.Context, userID int64, f conversation.Fields) (Key, error) {
	conversationID, err := ParseNewKey(f)
	if err != nil {
		return Key{}, err
	}
	v, err := NewKeyValue()
	if err != nil {
		return Key{}, err
	}
	k := Key{Key: v, UserID: userID, ConversationID: conversationID, CreatedAt: s.now().Unix()}
	return k, s.store.CreateKey(ctx, k)
}

// OwnKey returns the key named by the field value if userID owns it: a value of another shape or
// an unknown key is conversation.ErrAttachmentKeyNotFound, another user's key
// conversation.ErrAttachmentKeyUserWrong.
func (s *Service) OwnKey(ctx context.Context, userID int64, value string) (Key, error) {
	if value == "" {
		return Key{}, &conversation.MissingInputError{Fields: []string{FieldKey}}
	}
	if !conversation.ValidAttachmentKey(value) {
		return Key{}, conversation.ErrAttachmentKeyNotFound
	}
	k, err := s.store.Key(ctx, value)
	if err != nil {
		return Key{}, err
	}
	if k.UserID != userID {
		return Key{}, conversation.ErrAttachmentKeyUserWrong
	}
	return k, nil
}

// List returns the files of the user's key not attached yet.
func (s *Service) List(ctx context.Context, userID int64, key string) ([]Attachment, error) {
	if _, err := s.OwnKey(ctx, userID, key); err != nil {
		return nil, err
	}
	rows, err := s.store.KeyAttachments(ctx, key)
	if err != nil {
		return nil, err
	}
	out := make([]Attachment, len(rows))
	for i, r := range rows {
		out[i] = ToAttachment(r)
	}
	return out, nil
}

// Upload stores the file read from r under k (a key the user owns, from OwnKey), a chunk at a
// time. The file name is checked first (CheckFilename), then the number of the key's files
// against attachmentMaxPerMessage (by the store, atomically); a file longer than attachmentMaxFileSize is refused when its
// bytes pass the limit, and what was written of it is deleted, as it is for any other failure.
func (s *Service) Upload(ctx context.Context, k Key, filename string, r io.Reader) (Attachment, error) {
	limits, err := s.store.Limits(ctx)
	if err != nil {
		return Attachment{}, err
	}
	name, err := CheckFilename(filename, limits.Extensions)
	if err != nil {
		return Attachment{}, err
	}
	row := Row{UserID: k.UserID, Filename: name, AttachDate: s.now().Unix()}
	id, err := s.store.CreateAttachment(ctx, NewAttachment{Key: k.Key, UserID: k.UserID, Filename: name, Date: row.AttachDate,
		MaxPerKey: limits.MaxPerMessage})
	if err != nil {
		return Attachment{}, err
	}
	f, err := s.write(ctx, id, r, limits.MaxFileSize)
	if err == nil {
		err = s.store.FinishAttachment(ctx, id, f)
	}
	if err != nil {
		// The client may be gone: the row is deleted whatever the request's context says.
		if derr := s.store.DiscardAttachment(context.WithoutCancel(ctx), id); derr != nil {
			err = errors.Join(err, derr)
		}
		return Attachment{}, err
	}
	row.AttachmentID, row.FileSize, row.FileHash, row.MimeType, row.Width, row.Height = id, f.Size, f.Hash, f.MimeType, f.Width, f.Height
	return ToAttachment(row), nil
}

// write copies r into the file's chunks through one buffer of ChunkSize, hashing the bytes and
// sniffing the type (and an image's size) from the first chunk.
func (s *Service) write(ctx context.Context, id int64, r io.Reader, maxSize int64) (Finished, error) {
	var f Finished
	buf := make([]byte, ChunkSize)
	h := sha256.New()
	for seq := int64(0); ; seq++ {
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			if f.Size+int64(n) > maxSize {
				return f, &TooLargeError{Max: maxSize}
			}
			if seq == 0 {
				f.MimeType, f.Width, f.Height = Describe(buf[:n])
			}
			h.Write(buf[:n])
			if werr := s.writeChunk(ctx, id, seq, buf[:n]); werr != nil {
				return f, werr
			}
			f.Size += int64(n)
		}
		switch {
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			if f.Size == 0 {
				f.MimeType = "application/octet-stream"
			}
			f.Hash = hex.EncodeToString(h.Sum(nil))
			return f, nil
		case err != nil:
			return f, err
		}
	}
}

// writeChunk writes a chunk within a writer's slot (see Service.writers).
func (s *Service) writeChunk(ctx context.Context, id, seq int64, b []byte) error {
	select {
	case s.writers <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.writers }()
	return s.store.WriteChunk(ctx, id, seq, b)
}

// Describe sniffs a file's type from its first bytes (http.DetectContentType), and for an image
// reads its dimensions from its header (0 when the header is not within these bytes).
func Describe(first []byte) (mimeType string, width, height int64) {
	mimeType = http.DetectContentType(first)
	if IsImage(mimeType) {
		if cfg, _, err := image.DecodeConfig(bytes.NewReader(first)); err == nil {
			width, height = int64(cfg.Width), int64(cfg.Height)
		}
	}
	return mimeType, width, height
}

// Get returns an attachment the user may see.
func (s *Service) Get(ctx context.Context, userID, id int64) (Attachment, error) {
	r, err := s.store.Attachment(ctx, id, userID)
	if err != nil {
		return Attachment{}, err
	}
	return ToAttachment(r), nil
}

// Delete deletes an attachment the user uploaded; one the user only sees (another participant's)
// is conversation.ErrNoPermission.
func (s *Service) Delete(ctx context.Context, userID, id int64) error {
	r, err := s.store.Attachment(ctx, id, userID)
	if err != nil {
		return err
	}
	if r.UserID != userID {
		return conversation.ErrNoPermission
	}
	return s.store.DeleteAttachment(ctx, id)
}

// Open returns an attachment the user may see, with a reader of its bytes that reads one chunk
// at a time from the store.
func (s *Service) Open(ctx context.Context, userID, id int64) (Row, io.ReadSeeker, error) {
	r, err := s.store.Attachment(ctx, id, userID)
	if err != nil {
		return Row{}, nil, err
	}
	return r, NewChunkReader(ctx, s.store, r.AttachmentID, r.FileSize), nil
}

// Thumbnail returns the thumbnail of an image the user may see, made on the first request
// (MakeThumbnail) and kept.
func (s *Service) Thumbnail(ctx context.Context, userID, id int64) (mimeType string, b []byte, err error) {
	r, err := s.store.Attachment(ctx, id, userID)
	if err != nil {
		return "", nil, err
	}
	if !IsImage(r.MimeType) {
		return "", nil, ErrNoThumbnail
	}
	mimeType, b, found, err := s.store.Thumbnail(ctx, id)
	if err != nil || found {
		return mimeType, b, err
	}
	select {
	case s.thumbnailing <- struct{}{}:
	case <-ctx.Done():
		return "", nil, ctx.Err()
	}
	defer func() { <-s.thumbnailing }()
	// Another request may have made it while this one waited.
	if mimeType, b, found, err = s.store.Thumbnail(ctx, id); err != nil || found {
		return mimeType, b, err
	}
	mimeType, b, err = MakeThumbnail(NewChunkReader(ctx, s.store, id, r.FileSize))
	if err != nil {
		return "", nil, err
	}
	return mimeType, b, s.store.SaveThumbnail(ctx, id, mimeType, b)
}
