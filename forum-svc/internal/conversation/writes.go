package conversation

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// The conversations API beyond reading one conversation: the list, starting, replying,
// editing, updating, leaving, inviting, starring, and the current user's summary.

// WriteStore is the persistence of the conversations API. Every method acts for one user; a
// conversation the user does not participate in, or has left, does not exist for it
// (ErrConversationNotFound, ErrMessageNotFound). Each write is one transaction.
type WriteStore interface {
	Options(ctx context.Context) (Options, error)
	// ListConversations returns the page of the user's conversations (not left) matching f, newest
	// activity first, with the page size in force and the number of matching conversations.
	ListConversations(ctx context.Context, userID int64, f ListFilter, page int64) (ListRows, error)
	// StartConversation creates c with its first message; recipients that name no user are
	// *UnknownUsersError. answer renders the result inside the transaction (see Retry).
	StartConversation(ctx context.Context, c NewConversation, retry *Retry, answer func(ConversationRow) ([]byte, error)) (Answer, error)
	// Reply appends a message dated date; ErrConversationClosed when the conversation is closed.
	Reply(ctx context.Context, r NewReply, retry *Retry, answer func(MessageRow, ConversationRow) ([]byte, error)) (Answer, error)
	// EditMessage replaces a message's text when CheckEdit allows it, judged in the write's own
	// transaction against the message and its conversation as they are then.
	EditMessage(ctx context.Context, e MessageEdit) (MessageRow, ConversationRow, error)
	// UpdateConversation changes u's fields; ErrNoPermission unless the user started it.
	UpdateConversation(ctx context.Context, conversationID, userID int64, u ConversationUpdate) (ConversationRow, error)
	// Leave takes the conversation out of the user's list (for good with ignore); the last
	// participant to leave deletes it.
	Leave(ctx context.Context, conversationID, userID int64, ignore bool) error
	// Invite adds the users not yet participants (left ones included) with everything unread.
	// ErrConversationClosed, ErrNoPermission, *UnknownUsersError, *TooManyRecipientsError.
	Invite(ctx context.Context, conversationID, userID int64, users []int64, maxRecipients int64) error
	// Star sets the user's star (nil: toggles it) and returns it.
	Star(ctx context.Context, conversationID, userID int64, star *bool) (bool, error)
	// Me returns the user's name and the number of their conversations (not left) that are unread.
	Me(ctx context.Context, userID int64) (username string, unread int64, err error)
}

// ListRows is a page of the conversation list as stored.
type ListRows struct {
	Total         int64
	PerPage       int64
	Conversations []ConversationRow
}

// NewReply is a reply to append.
type NewReply struct {
	ConversationID int64
	UserID         int64
	Message        string
	Parsed         string // the message's HTML (RenderMessage)
	Date           int64
	AttachmentKey  string // "": none
}

// MessageEdit is a new text for a message.
type MessageEdit struct {
	MessageID int64
	UserID    int64
	Text      string
	Parsed    string // Text's HTML (RenderMessage)
	Date      int64  // now, Unix seconds (set by the Service)
	TimeLimit int64  // editOwnMessageTimeLimit, in minutes; 0: none
	// AttachmentKey names uploads to attach to the message ("": none).
	AttachmentKey string
}

// EditTarget is what the rules of editing look at: the message's author and date, and whether its
// conversation is open.
type EditTarget struct {
	AuthorID         int64
	MessageDate      int64
	ConversationOpen bool
}

// CheckEdit tells whether e may change the message of t. A closed conversation is settled, for its
// messages as for replies and invites: nobody edits in it, its author neither
// (ErrConversationClosed, judged first, as for the other writes into it). Otherwise only the
// author edits (ErrNoPermission), and with a time limit only within that many minutes of the
// message's date, the last second of the last minute included (*EditTimeLimitError): a message
// others have read and answered long ago cannot be rewritten under them.
func CheckEdit(t EditTarget, e MessageEdit) error {
	switch {
	case !t.ConversationOpen:
		return ErrConversationClosed
	case t.AuthorID != e.UserID:
		return ErrNoPermission
	case e.TimeLimit > 0 && e.Date-t.MessageDate > e.TimeLimit*60:
		return &EditTimeLimitError{Minutes: e.TimeLimit}
	}
	return nil
}

// EditTimeLimitError: the author's message is older than editOwnMessageTimeLimit.
type EditTimeLimitError struct{ Minutes int64 }

func (e *EditTimeLimitError) Error() string {
	return fmt.Sprintf("a message can be edited within %d minutes of being sent", e.Minutes)
}

// Retry is an Idempotency-Key claim on a write. The store runs the write only when no answer is
// recorded for (Owner, UserID, Key) within the last 24 hours, and records the answer in the
// write's own transaction, so that no interleaving of retries and no crash writes twice.
type Retry struct {
	Owner       string // the API key (its hash)
	UserID      int64
	Key         string
	Fingerprint string // of the request: method, path and fields
	Date        int64  // now, Unix seconds (set by the Service)
}

func (r *Retry) stamp(now int64) {
	if r != nil {
		r.Date = now
	}
}

// runningRetries is the set of Idempotency-Keys whose first request this process is running. A
// repeat that arrives meanwhile is ErrRequestInProgress at once, before it touches the store: on
// SQLite, which serves one writer at a time over one connection, it would otherwise wait for the
// first and replay its answer. Across processes (PostgreSQL) the store's claim says the same.
type runningRetries struct {
	mu   sync.Mutex
	keys map[runningKey]struct{}
}

type runningKey struct {
	owner string
	user  int64
	key   string
}

// take claims r's key until release, or answers ErrRequestInProgress; a nil r claims nothing.
func (rs *runningRetries) take(r *Retry) (release func(), err error) {
	if r == nil {
		return func() {}, nil
	}
	k := runningKey{r.Owner, r.UserID, r.Key}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if _, busy := rs.keys[k]; busy {
		return nil, ErrRequestInProgress
	}
	if rs.keys == nil {
		rs.keys = map[runningKey]struct{}{}
	}
	rs.keys[k] = struct{}{}
	return func() {
		rs.mu.Lock()
		delete(rs.keys, k)
		rs.mu.Unlock()
	}, nil
}

// RetryWindow is how long an answer is replayed, in seconds.
const RetryWindow = 24 * 60 * 60

// Answer is a write's answer: fresh, or the recorded first answer to the same request.
type Answer struct {
	Status   int
	Body     []byte
	Replayed bool
}

// ConversationList is the answer of GET /api/conversations/.
type ConversationList struct {
	Conversations []Conversation `json:"conversations"`
	Pagination    Pagination     `json:"pagination"`
}

// Me is the answer of GET /api/me/.
type Me struct {
	UserID              int64  `json:"user_id"`
	Username            string `json:"username"`
	ConversationsUnread int64  `json:"conversations_unread"`
}

// List returns a page of userID's conversations; query holds `page` and the filters.
func (s *Service) List(ctx context.Context, userID int64, query Fields) (ConversationList, error) {
	page, err := ParsePage(query["page"])
	if err != nil {
		return ConversationList{}, err
	}
	f, err := ParseListFilter(query)
	if err != nil {
		return ConversationList{}, err
	}
	rows, err := s.store.ListConversations(ctx, userID, f, QueryPage(page))
	if err != nil {
		return ConversationList{}, err
	}
	pagination, err := pageOf(page, rows.Total, rows.PerPage, len(rows.Conversations))
	if err != nil {
		return ConversationList{}, err
	}
	v := s.viewer(ctx, userID)
	out := make([]Conversation, len(rows.Conversations))
	for i, c := range rows.Conversations {
		out[i] = v.conversation(c)
	}
	return ConversationList{Conversations: out, Pagination: pagination}, nil
}

// Start starts a conversation from f; render turns it into the answer's body.
func (s *Service) Start(ctx context.Context, userID int64, f Fields, retry *Retry, render func(Conversation) ([]byte, error)) (Answer, error) {
	opts, release, err := s.beginRetryable(ctx, retry)
	if err != nil {
		return Answer{}, err
	}
	defer release()
	c, rs, err := ParseStart(f, userID, opts)
	if err != nil {
		return Answer{}, s.withUnknown(ctx, rs, err)
	}
	if c.AttachmentKey, err = ParseAttachmentKey(f); err != nil {
		return Answer{}, err
	}
	c.Date = s.now().Unix()
	c.Parsed = RenderMessage(c.Message)
	retry.stamp(c.Date)
	a, err := s.store.StartConversation(ctx, c, retry, func(row ConversationRow) ([]byte, error) {
		return render(s.viewer(ctx, userID).conversation(row))
	})
	return a, rs.Unknown(err)
}

// beginRetryable starts a write that honours Idempotency-Key: it claims retry's key in this
// process (ErrRequestInProgress while another request runs with it) and reads the options the
// fields are checked against. release gives the key back; it is set whenever err is nil.
func (s *Service) beginRetryable(ctx context.Context, retry *Retry) (opts Options, release func(), err error) {
	release, err = s.running.take(retry)
	if err != nil {
		return opts, nil, err
	}
	if opts, err = s.store.Options(ctx); err != nil {
		release()
		return opts, nil, err
	}
	return opts, release, nil
}

// Reply appends a message from f (conversation_id, message); render turns it into the body.
func (s *Service) Reply(ctx context.Context, userID int64, f Fields, retry *Retry, render func(Message) ([]byte, error)) (Answer, error) {
	opts, release, err := s.beginRetryable(ctx, retry)
	if err != nil {
		return Answer{}, err
	}
	defer release()
	id, text, err := ParseReply(f, opts)
	if err != nil {
		return Answer{}, err
	}
	key, err := ParseAttachmentKey(f)
	if err != nil {
		return Answer{}, err
	}
	r := NewReply{ConversationID: id, UserID: userID, Message: text, Parsed: RenderMessage(text), Date: s.now().Unix(), AttachmentKey: key}
	retry.stamp(r.Date)
	return s.store.Reply(ctx, r, retry, func(m MessageRow, c ConversationRow) ([]byte, error) {
		return render(s.viewer(ctx, userID).withConversation(m, c))
	})
}

// Edit replaces the text of the user's own message.
func (s *Service) Edit(ctx context.Context, userID, messageID int64, f Fields) (Message, error) {
	opts, err := s.store.Options(ctx)
	if err != nil {
		return Message{}, err
	}
	text, err := ParseMessage(f, opts)
	if err != nil {
		return Message{}, err
	}
	key, err := ParseAttachmentKey(f)
	if err != nil {
		return Message{}, err
	}
	e := MessageEdit{MessageID: messageID, UserID: userID, Text: text, Parsed: RenderMessage(text), Date: s.now().Unix(),
		TimeLimit: opts.EditOwnMessageTimeLimit, AttachmentKey: key}
	m, c, err := s.store.EditMessage(ctx, e)
	if err != nil {
		return Message{}, err
	}
	return s.viewer(ctx, userID).withConversation(m, c), nil
}

// Update changes the title or settings of a conversation the user started.
func (s *Service) Update(ctx context.Context, userID, conversationID int64, f Fields) (Conversation, error) {
	u, err := ParseUpdate(f)
	if err != nil {
		return Conversation{}, err
	}
	c, err := s.store.UpdateConversation(ctx, conversationID, userID, u)
	if err != nil {
		return Conversation{}, err
	}
	return s.viewer(ctx, userID).conversation(c), nil
}

// Leave leaves the conversation (`ignore`: for good).
func (s *Service) Leave(ctx context.Context, userID, conversationID int64, f Fields) error {
	ignore, _, err := f.Bool(FieldIgnore, false)
	if err != nil {
		return err
	}
	return s.store.Leave(ctx, conversationID, userID, ignore)
}

// Invite adds the users of `recipient_ids` to the conversation.
func (s *Service) Invite(ctx context.Context, userID, conversationID int64, f Fields) error {
	opts, err := s.store.Options(ctx)
	if err != nil {
		return err
	}
	rs, err := ParseRecipients(f[FieldRecipients], userID, opts.MaxRecipients)
	if err != nil {
		return s.withUnknown(ctx, rs, err)
	}
	if len(rs.IDs) == 0 { // none sent, or only the current user
		return &MissingInputError{Fields: []string{FieldRecipients}}
	}
	return rs.Unknown(s.store.Invite(ctx, conversationID, userID, rs.IDs, opts.MaxRecipients))
}

// withUnknown completes a refusal of malformed recipients with the well-formed ids among them that
// name no user, so that one answer names every offending value and a client fixes its request
// once. Only this refusal looks users up: a request whose ids are all well formed learns its
// unknown ones from the write itself (*UnknownUsersError). The ids are at most the forum's
// maxRecipients (ParseRecipients refuses more values).
func (s *Service) withUnknown(ctx context.Context, rs Recipients, err error) error {
	var bad *InvalidRecipientsError
	if !errors.As(err, &bad) || len(rs.IDs) == 0 {
		return err
	}
	unknown, lerr := s.store.UnknownUsers(ctx, rs.IDs)
	if lerr != nil {
		return lerr
	}
	return rs.Invalid(unknown)
}

// Star sets or (without `star`) toggles the user's star.
func (s *Service) Star(ctx context.Context, userID, conversationID int64, f Fields) (bool, error) {
	var star *bool
	if err := f.optionalBool(FieldStar, &star); err != nil {
		return false, err
	}
	return s.store.Star(ctx, conversationID, userID, star)
}

// Me returns the current user's summary.
func (s *Service) Me(ctx context.Context, userID int64) (Me, error) {
	name, unread, err := s.store.Me(ctx, userID)
	return Me{UserID: userID, Username: name, ConversationsUnread: unread}, err
}
