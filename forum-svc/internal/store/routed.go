package store

import (
	"context"

	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/shared/db"
)

// Routed sends reads to a Store over the read replica and writes to the Store over the
// primary (DATABASE_READ_URL). A user's reads stay on the primary for a few seconds after that
// user wrote (db.Reads.Pin), so that a client never sees its own mark undone by replication
// lag; a replica that fails is skipped and its reads answered by the primary (db.Reads). Each
// Store keeps its own statements and its pgx page path on its own pool.
type Routed struct {
	primary, replica *Store
	reads            *db.Reads
}

var (
	_ conversation.Store = (*Routed)(nil)
	_ auth.Store         = (*Routed)(nil)
)

// NewRouted routes between primary and replica (Stores over reads' two databases).
func NewRouted(primary, replica *Store, reads *db.Reads) *Routed {
	return &Routed{primary: primary, replica: replica, reads: reads}
}

// read runs fn on the replica's Store unless user (0: none) wrote recently; fn runs again on
// the primary's when the replica fails.
func (r *Routed) read(ctx context.Context, user int64, fn func(*Store) error) error {
	if user != 0 && r.reads.Pinned(user) {
		return fn(r.primary)
	}
	return r.reads.Do(ctx, func(replica bool) error {
		if replica {
			return fn(r.replica)
		}
		return fn(r.primary)
	})
}

// readValue is read for a store method with one result.
func readValue[T any](ctx context.Context, r *Routed, user int64, fn func(*Store) (T, error)) (T, error) {
	var out T
	err := r.read(ctx, user, func(s *Store) (err error) {
		out, err = fn(s)
		return err
	})
	return out, err
}

// writeValue is write for a store method with one result.
func writeValue[T any](r *Routed, user int64, fn func(*Store) (T, error)) (T, error) {
	var out T
	err := r.write(user, func(s *Store) (err error) {
		out, err = fn(s)
		return err
	})
	return out, err
}

// MessagePage implements conversation.Store.
func (r *Routed) MessagePage(ctx context.Context, conversationID, userID, page int64) (conversation.PageRows, error) {
	return readValue(ctx, r, userID, func(s *Store) (conversation.PageRows, error) {
		return s.MessagePage(ctx, conversationID, userID, page)
	})
}

// Message implements conversation.Store.
func (r *Routed) Message(ctx context.Context, messageID, userID int64) (conversation.MessageRow, conversation.ConversationRow, error) {
	var (
		m conversation.MessageRow
		c conversation.ConversationRow
	)
	err := r.read(ctx, userID, func(s *Store) error {
		var err error
		m, c, err = s.Message(ctx, messageID, userID)
		return err
	})
	return m, c, err
}

// Conversation implements conversation.Store.
func (r *Routed) Conversation(ctx context.Context, conversationID, userID int64) (conversation.ConversationRow, error) {
	return readValue(ctx, r, userID, func(s *Store) (conversation.ConversationRow, error) {
		return s.Conversation(ctx, conversationID, userID)
	})
}

// MarkRead implements conversation.Store: on the primary, pinning the user's reads there.
func (r *Routed) MarkRead(ctx context.Context, conversationID, userID, date int64) error {
	return r.write(userID, func(s *Store) error { return s.MarkRead(ctx, conversationID, userID, date) })
}

// MarkUnread implements conversation.Store, as MarkRead.
func (r *Routed) MarkUnread(ctx context.Context, conversationID, userID int64) error {
	return r.write(userID, func(s *Store) error { return s.MarkUnread(ctx, conversationID, userID) })
}

// LookupKey implements auth.Store. A key the replica does not have is looked up on the
// primary: a key just created (on the primary, by the CLI) must not be refused while the
// replica lags, and unknown keys are rare enough to cost a second query.
func (r *Routed) LookupKey(ctx context.Context, hash string) (auth.Key, bool, error) {
	var (
		k     auth.Key
		found bool
	)
	err := r.read(ctx, 0, func(s *Store) error {
		var err error
		k, found, err = s.LookupKey(ctx, hash)
		return err
	})
	if err == nil && !found && r.reads.Replica() {
		return r.primary.LookupKey(ctx, hash)
	}
	return k, found, err
}

// UserExists implements auth.Store, with the same second look on the primary.
func (r *Routed) UserExists(ctx context.Context, userID int64) (bool, error) {
	ok, err := readValue(ctx, r, 0, func(s *Store) (bool, error) { return s.UserExists(ctx, userID) })
	if err == nil && !ok && r.reads.Replica() {
		return r.primary.UserExists(ctx, userID)
	}
	return ok, err
}

// Options implements conversation.WriteStore: on the primary (the writes check against them).
func (r *Routed) Options(ctx context.Context) (conversation.Options, error) {
	return r.primary.Options(ctx)
}

// ListConversations implements conversation.WriteStore.
func (r *Routed) ListConversations(ctx context.Context, userID int64, f conversation.ListFilter, page int64) (conversation.ListRows, error) {
	return readValue(ctx, r, userID, func(s *Store) (conversation.ListRows, error) {
		return s.ListConversations(ctx, userID, f, page)
	})
}

// Me implements conversation.WriteStore.
func (r *Routed) Me(ctx context.Context, userID int64) (string, int64, error) {
	var (
		name   string
		unread int64
	)
	err := r.read(ctx, userID, func(s *Store) error {
		var err error
		name, unread, err = s.Me(ctx, userID)
		return err
	})
	return name, unread, err
}

// write runs a write on the primary, pinning userID's reads there: before the write (a read
// racing it goes to the primary too) and again after it, so that the window counts from when the
// write is visible.
func (r *Routed) write(userID int64, fn func(*Store) error) error {
	r.reads.Pin(userID)
	defer r.reads.Pin(userID)
	return fn(r.primary)
}

// StartConversation implements conversation.WriteStore.
func (r *Routed) StartConversation(ctx context.Context, c conversation.NewConversation, retry *conversation.Retry,
	answer func(conversation.ConversationRow) ([]byte, error)) (conversation.Answer, error) {
	return writeValue(r, c.StarterID, func(s *Store) (conversation.Answer, error) {
		return s.StartConversation(ctx, c, retry, answer)
	})
}

// Reply implements conversation.WriteStore.
func (r *Routed) Reply(ctx context.Context, n conversation.NewReply, retry *conversation.Retry,
	answer func(conversation.MessageRow, conversation.ConversationRow) ([]byte, error)) (conversation.Answer, error) {
	return writeValue(r, n.UserID, func(s *Store) (conversation.Answer, error) {
		return s.Reply(ctx, n, retry, answer)
	})
}

// EditMessage implements conversation.WriteStore.
func (r *Routed) EditMessage(ctx context.Context, e conversation.MessageEdit) (m conversation.MessageRow, c conversation.ConversationRow, err error) {
	err = r.write(e.UserID, func(s *Store) error {
		m, c, err = s.EditMessage(ctx, e)
		return err
	})
	return m, c, err
}

// UpdateConversation implements conversation.WriteStore.
func (r *Routed) UpdateConversation(ctx context.Context, conversationID, userID int64, u conversation.ConversationUpdate) (conversation.ConversationRow, error) {
	return writeValue(r, userID, func(s *Store) (conversation.ConversationRow, error) {
		return s.UpdateConversation(ctx, conversationID, userID, u)
	})
}

// Leave implements conversation.WriteStore.
func (r *Routed) Leave(ctx context.Context, conversationID, userID int64, ignore bool) error {
	return r.write(userID, func(s *Store) error { return s.Leave(ctx, conversationID, userID, ignore) })
}

// Invite implements conversation.WriteStore.
func (r *Routed) Invite(ctx context.Context, conversationID, userID int64, users []int64, maxRecipients int64) error {
	return r.write(userID, func(s *Store) error { return s.Invite(ctx, conversationID, userID, users, maxRecipients) })
}

// Star implements conversation.WriteStore.
func (r *Routed) Star(ctx context.Context, conversationID, userID int64, star *bool) (bool, error) {
	return writeValue(r, userID, func(s *Store) (bool, error) { return s.Star(ctx, conversationID, userID, star) })
}
