// Package attachment holds the rules of conversation message attachments: keys, uploads, the
// limits of the forum options, what a download is served as, and thumbnails. The bytes live in
// the database in chunks (Blobs): neither an upload nor a download holds a whole file in memory.
//
// A client asks for a key (NewKey), uploads files under it (Upload), and names the key on the
// start, reply or edit whose message the files go with (conversation.CheckAttach, in the write's
// transaction). Until then only the key's owner sees the files; afterwards, the participants of
// the message's conversation. Everyone else is told the attachment does not exist.
package attachment

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"forumstats.local/forum-svc/internal/conversation"
)

// ContentType is the one content type attachments belong to.
const ContentType = "conversation_message"

// ChunkSize is the size of a stored chunk (the last one of a file is shorter): an upload holds one
// chunk at a time, a download reads one at a time. The driver copies a chunk once or twice on its
// way to the database: 64 KiB keeps eight concurrent uploads within 2.5 MiB of heap (256 KiB
// took 14 MiB), for 160 rows a 10 MiB file.
const ChunkSize = 64 << 10

// Defaults and bounds of the forum options (the schema checks the bounds too).
const (
	DefaultMaxFileSize   = 10 << 20
	MaxMaxFileSize       = 100 << 20
	DefaultMaxPerMessage = 10
	MaxMaxPerMessage     = 100
)

// DefaultExtensions are the file name extensions an upload may have unless the forum option
// attachmentExtensions says otherwise: common images, plain text, PDF and ZIP, the list a XenForo
// forum allows out of the box. A file is never served as anything but an image or a download
// (ServeAs), whatever its extension.
var DefaultExtensions = []string{"gif", "jpe", "jpeg", "jpg", "pdf", "png", "txt", "webp", "zip"}

// Bounds of the attachmentExtensions option.
const (
	MaxExtensions      = 100
	MaxExtensionLength = 16
)

// ParseExtensions reads the attachmentExtensions option: 1 to MaxExtensions extensions separated
// by white space or commas, each 1 to MaxExtensionLength lowercase ASCII letters or digits
// (a leading dot and upper case are dropped), none twice. It returns them sorted.
func ParseExtensions(s string) ([]string, error) {
	fields := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
	if len(fields) == 0 || len(fields) > MaxExtensions {
		return nil, fmt.Errorf("attachmentExtensions: give 1 to %d extensions", MaxExtensions)
	}
	out := make([]string, 0, len(fields))
	for _, f := range fields {
		f = strings.TrimPrefix(f, ".")
		ok := f != "" && len(f) <= MaxExtensionLength && !strings.ContainsFunc(f, func(r rune) bool {
			return (r < 'a' || r > 'z') && (r < '0' || r > '9')
		})
		if !ok {
			return nil, fmt.Errorf("attachmentExtensions: %q is not 1 to %d letters or digits", f, MaxExtensionLength)
		}
		if slices.Contains(out, f) {
			return nil, fmt.Errorf("attachmentExtensions: %q appears twice", f)
		}
		out = append(out, f)
	}
	slices.Sort(out)
	return out, nil
}

// MaxFilenameLength bounds a file name, in bytes.
const MaxFilenameLength = 255

// Field names of the forms.
const (
	FieldKey        = "key"
	FieldAttachment = "attachment"
	FieldType       = "type"
	// FieldContextConversation is the context of a key for a reply or an edit: the conversation.
	FieldContextConversation = "context[conversation_id]"
)

// Errors that carry no parameters.
var (
	// ErrNotFound: no such attachment for this user (it exists for nobody else but the
	// participants of its conversation, or its uploader before it is attached).
	ErrNotFound = errors.New("the requested attachment could not be found")
	// ErrNoThumbnail: the attachment is not an image this service can scale (PNG, JPEG, GIF), or
	// its image is larger than MaxThumbnailPixels.
	ErrNoThumbnail = errors.New("the attachment has no thumbnail")
)

// TooLargeError: a file larger than the forum's attachmentMaxFileSize.
type TooLargeError struct{ Max int64 }

func (e *TooLargeError) Error() string { return fmt.Sprintf("a file is at most %d bytes", e.Max) }

// ExtensionError: a file name whose extension is none of the forum's attachmentExtensions.
type ExtensionError struct{ Allowed []string }

func (e *ExtensionError) Error() string {
	return "the file's extension is none of " + strings.Join(e.Allowed, ", ")
}

// Limits are the forum options of uploads.
type Limits struct {
	MaxFileSize   int64 // bytes
	MaxPerMessage int64
	Extensions    []string // allowed, lowercase, sorted
}

// Attachment is the Attachment object as the API shows it; conversation declares it, since the
// message objects list it.
type Attachment = conversation.Attachment

// Row is an attachment as stored (complete ones only are ever read).
type Row struct {
	AttachmentID int64
	MessageID    int64 // 0 until attached
	UserID       int64 // the uploader
	Filename     string
	FileSize     int64
	FileHash     string // SHA-256 in hex
	MimeType     string // sniffed from the first bytes
	Width        int64
	Height       int64
	AttachDate   int64
}

// Key is an attachment key as stored.
type Key struct {
	Key            string
	UserID         int64
	ConversationID int64 // 0: for a new conversation
	CreatedAt      int64
}

// KeyLifetime is how long a key's files wait to be attached: the sweep deletes older keys with
// the files they still hold.
const KeyLifetime = 24 * time.Hour

// NewKeyValue returns a new random key: 128 bits in hex.
func NewKeyValue() (string, error) {
	var b [conversation.AttachmentKeyLength / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// CheckFilename reads an upload's file name: its last path element, valid UTF-8 without control
// characters, at most MaxFilenameLength bytes (else *conversation.InvalidInputError), with one of
// the allowed extensions, in any case (else *ExtensionError).
func CheckFilename(name string, allowed []string) (string, error) {
	name = path.Base(strings.ReplaceAll(name, `\`, "/"))
	bad := name == "" || name == "." || name == "/" || len(name) > MaxFilenameLength || !utf8.ValidString(name) ||
		strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f })
	if bad {
		return "", &conversation.InvalidInputError{Field: FieldAttachment}
	}
	ext := strings.ToLower(strings.TrimPrefix(path.Ext(name), "."))
	if !slices.Contains(allowed, ext) {
		return "", &ExtensionError{Allowed: allowed}
	}
	return name, nil
}

// inlineTypes are the types a download is served as, inline: images a browser only displays.
// Every other file, text/html and SVG among them, is served as application/octet-stream with
// Content-Disposition: attachment, so that no upload ever runs as a page of this origin.
var inlineTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// ServeAs returns the Content-Type and the Content-Disposition disposition ("inline" or
// "attachment") a file of the sniffed type is served with.
func ServeAs(sniffed string) (contentType, disposition string) {
	if slices.Contains(inlineTypes, sniffed) {
		return sniffed, "inline"
	}
	return "application/octet-stream", "attachment"
}

// IsImage tells whether the sniffed type is one the API shows as an image (with a thumbnail URL).
func IsImage(sniffed string) bool { return slices.Contains(thumbnailTypes, sniffed) }

// ToAttachment renders a row as the API shows it.
func ToAttachment(r Row) Attachment {
	a := Attachment{
		AttachmentID: r.AttachmentID,
		ContentType:  ContentType,
		ContentID:    r.MessageID,
		AttachDate:   r.AttachDate,
		Filename:     r.Filename,
		FileSize:     r.FileSize,
		Width:        r.Width,
		Height:       r.Height,
		DirectURL:    fmt.Sprintf("/api/attachments/%d/data", r.AttachmentID),
		IsVideo:      strings.HasPrefix(r.MimeType, "video/"),
		IsAudio:      strings.HasPrefix(r.MimeType, "audio/"),
	}
	if IsImage(r.MimeType) {
		a.ThumbnailURL = fmt.Sprintf("/api/attachments/%d/thumbnail", r.AttachmentID)
	}
	return a
}

// Store is the persistence of attachments. Every read is for one user: an attachment it may not
// see does not exist for it (ErrNotFound).
type Store interface {
	Limits(ctx context.Context) (Limits, error)
	// CreateKey stores k; a conversation it names must be one the user participates in
	// (conversation.ErrConversationNotFound otherwise).
	CreateKey(ctx context.Context, k Key) error
	// Key returns the key; conversation.ErrAttachmentKeyNotFound when there is none.
	Key(ctx context.Context, key string) (Key, error)
	// KeyAttachments returns the key's complete files not attached yet, oldest first.
	KeyAttachments(ctx context.Context, key string) ([]Row, error)
	// Attachment returns the attachment if userID may see it.
	Attachment(ctx context.Context, id, userID int64) (Row, error)
	// DeleteAttachment deletes the attachment with its bytes.
	DeleteAttachment(ctx context.Context, id int64) error
	// Thumbnail returns the kept thumbnail; found is false when none was made yet.
	Thumbnail(ctx context.Context, id int64) (mimeType string, b []byte, found bool, err error)
	SaveThumbnail(ctx context.Context, id int64, mimeType string, b []byte) error
	Blobs
}

// Blobs is where a file's bytes are written and read, a chunk at a time.
type Blobs interface {
	// CreateAttachment stores a's row, not complete (shown to nobody), and returns its id, unless
	// its key holds a.MaxPerKey files already, those being uploaded included
	// (*conversation.TooManyAttachmentsError): judged with the key locked, so that concurrent
	// uploads under one key never pass the limit together.
	CreateAttachment(ctx context.Context, a NewAttachment) (int64, error)
	// WriteChunk stores chunk seq (from 0) of the file.
	WriteChunk(ctx context.Context, id, seq int64, b []byte) error
	// FinishAttachment records what the whole file turned out to be, and makes it complete.
	FinishAttachment(ctx context.Context, id int64, f Finished) error
	// DiscardAttachment deletes a file not complete, with the chunks written.
	DiscardAttachment(ctx context.Context, id int64) error
	// ReadChunk returns chunk seq of the file.
	ReadChunk(ctx context.Context, id, seq int64) ([]byte, error)
}

// NewAttachment is the row of an upload that starts.
type NewAttachment struct {
	Key       string
	UserID    int64
	Filename  string
	Date      int64
	MaxPerKey int64 // attachmentMaxPerMessage
}

// Finished is what an upload's bytes turned out to be.
type Finished struct {
	Size          int64
	Hash          string
	MimeType      string
	Width, Height int64
}
