// Package seed loads a seed file (forum-svc/README.md, "Seed file") into the forum database: one
// transaction, idempotent (rows upserted by their ids), and a file that does not fit is refused
// whole with a message that names the offending entry.
package seed

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"forumstats.local/forum-svc/internal/store"
)

// File is a parsed seed file.
type File struct {
	Options       *Options
	Users         []User
	Conversations []Conversation
	ReadState     []ReadState
	APIKeys       []APIKey
}

// Options are the forum options a file may set (store.ForumOptions; absent ones are left as they are).
type Options struct {
	MessagesPerPage    *int64 `json:"messagesPerPage"`
	DiscussionsPerPage *int64 `json:"discussionsPerPage"`
	MaxRecipients      *int64 `json:"maxRecipients"`
	MessageMaxLength   *int64 `json:"messageMaxLength"`
	// EditOwnMessageTimeLimit is in minutes; 0: no limit.
	EditOwnMessageTimeLimit *int64 `json:"editOwnMessageTimeLimit"`
	// AttachmentMaxFileSize is in bytes.
	AttachmentMaxFileSize   *int64 `json:"attachmentMaxFileSize"`
	AttachmentMaxPerMessage *int64 `json:"attachmentMaxPerMessage"`
	// AttachmentExtensions are the extensions an upload may have (attachment.ParseExtensions).
	AttachmentExtensions *string `json:"attachmentExtensions"`
}

// set returns the options the file sets, with their values.
func (o *Options) set() (map[store.Option]int64, error) {
	out := map[store.Option]int64{}
	if o == nil {
		return out, nil
	}
	values := map[string]*int64{"messagesPerPage": o.MessagesPerPage, "discussionsPerPage": o.DiscussionsPerPage,
		"maxRecipients": o.MaxRecipients, "messageMaxLength": o.MessageMaxLength,
		"editOwnMessageTimeLimit": o.EditOwnMessageTimeLimit, "attachmentMaxFileSize": o.AttachmentMaxFileSize,
		"attachmentMaxPerMessage": o.AttachmentMaxPerMessage}
	for _, opt := range store.ForumOptions {
		v := values[opt.Name]
		if v == nil {
			continue
		}
		if err := opt.Check(*v); err != nil {
			return nil, err
		}
		out[opt] = *v
	}
	return out, nil
}

// User is an entry of users.
type User struct {
	UserID   int64  `json:"user_id"`
	Username string `json:"username"`
}

// Conversation is an entry of conversations; UserID is the starter.
type Conversation struct {
	ConversationID int64     `json:"conversation_id"`
	Title          string    `json:"title"`
	UserID         int64     `json:"user_id"`
	Recipients     []int64   `json:"recipients"`
	Messages       []Message `json:"-"`
}

// Message is an entry of a conversation's messages.
type Message struct {
	MessageID   int64  `json:"message_id"`
	UserID      int64  `json:"user_id"`
	Message     string `json:"message"`
	MessageDate *int64 `json:"message_date"`
}

// ReadState is an entry of read_state.
type ReadState struct {
	ConversationID int64  `json:"conversation_id"`
	UserID         int64  `json:"user_id"`
	LastReadDate   *int64 `json:"last_read_date"`
}

// APIKey is an entry of api_keys. Key is the plain key; only its hash is stored.
type APIKey struct {
	Key       string   `json:"key"`
	Type      string   `json:"type"`
	UserID    *int64   `json:"user_id"`
	Scopes    []string `json:"scopes"`
	Active    *bool    `json:"active"`
	ExpiresAt *int64   `json:"expires_at"`
}

// Error is a refusal of the file: Path names the entry ("conversations[2].messages[5]").
type Error struct {
	Path string
	Msg  string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

func refuse(path, format string, args ...any) error {
	return &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// IsRefusal tells whether err is a refusal of the file (as opposed to a database failure).
func IsRefusal(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

type rawFile struct {
	Options       json.RawMessage   `json:"options"`
	Users         []json.RawMessage `json:"users"`
	Conversations []json.RawMessage `json:"conversations"`
	ReadState     []json.RawMessage `json:"read_state"`
	APIKeys       []json.RawMessage `json:"api_keys"`
}

type rawConversation struct {
	Conversation
	Messages []json.RawMessage `json:"messages"`
}

// Parse decodes a seed file strictly: unknown fields, wrong types and trailing data are refused,
// each entry decoded on its own so that the refusal names it.
func Parse(r io.Reader) (*File, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var raw rawFile
	if err := decodeStrict(data, &raw); err != nil {
		return nil, refuse("", "seed file: %s", err)
	}
	f := &File{}
	if len(raw.Options) > 0 && string(raw.Options) != "null" {
		f.Options = &Options{}
		if err := decodeStrict(raw.Options, f.Options); err != nil {
			return nil, refuse("options", "%s", err)
		}
	}
	if f.Users, err = decodeEach[User](raw.Users, "users"); err != nil {
		return nil, err
	}
	f.Conversations = make([]Conversation, len(raw.Conversations))
	for i, m := range raw.Conversations {
		path := fmt.Sprintf("conversations[%d]", i)
		var rc rawConversation
		if err := decodeStrict(m, &rc); err != nil {
			return nil, refuse(path, "%s", err)
		}
		c := rc.Conversation
		if c.Messages, err = decodeEach[Message](rc.Messages, path+".messages"); err != nil {
			return nil, err
		}
		f.Conversations[i] = c
	}
	if f.ReadState, err = decodeEach[ReadState](raw.ReadState, "read_state"); err != nil {
		return nil, err
	}
	if f.APIKeys, err = decodeEach[APIKey](raw.APIKeys, "api_keys"); err != nil {
		return nil, err
	}
	return f, nil
}

// decodeEach decodes every entry of the list named name strictly; a refusal names the entry.
func decodeEach[T any](raw []json.RawMessage, name string) ([]T, error) {
	out := make([]T, len(raw))
	for i, m := range raw {
		if err := decodeStrict(m, &out[i]); err != nil {
			return nil, refuse(fmt.Sprintf("%s[%d]", name, i), "%s", err)
		}
	}
	return out, nil
}

func decodeStrict(data []byte, v any) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return errors.New("an entry must be an object, not null")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("empty document")
		}
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}
