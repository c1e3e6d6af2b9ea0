package conversation

import (
	"context"
	"time"
)

// Message is a ConversationMessage as the API shows it.
type Message struct {
	MessageID      int64         `json:"message_id"`
	ConversationID int64         `json:"conversation_id"`
	Message        string        `json:"message"`
	MessageDate    int64         `json:"message_date"`
	UserID         int64         `json:"user_id"`
	Username       string        `json:"username"`
	IsUnread       bool          `json:"is_unread"`
	Conversation   *Conversation `json:"Conversation,omitempty"`
}

// Recipient is one participant other than the starter.
type Recipient struct {
	UserID   int64  `json:"user_id"`
	Username string `json:"username"`
}

// Conversation is the Conversation object as the API shows it.
type Conversation struct {
	ConversationID  int64       `json:"conversation_id"`
	Title           string      `json:"title"`
	UserID          int64       `json:"user_id"`
	Username        string      `json:"username"`
	StartDate       int64       `json:"start_date"`
	ReplyCount      int64       `json:"reply_count"`
	RecipientCount  int64       `json:"recipient_count"`
	Recipients      []Recipient `json:"recipients"`
	FirstMessageID  int64       `json:"first_message_id"`
	LastMessageID   int64       `json:"last_message_id"`
	LastMessageDate int64       `json:"last_message_date"`
	IsUnread        bool        `json:"is_unread"`
	// For the current user; then the conversation's settings.
	IsStarred        bool `json:"is_starred"`
	ConversationOpen bool `json:"conversation_open"`
	OpenInvite       bool `json:"open_invite"`
}

// Pagination is the pagination object of a message list.
type Pagination struct {
	CurrentPage int64 `json:"current_page"`
	LastPage    int64 `json:"last_page"`
	PerPage     int64 `json:"per_page"`
	Shown       int64 `json:"shown"`
	Total       int64 `json:"total"`
}

// MessagePage is one page of a conversation's messages.
type MessagePage struct {
	Messages   []Message  `json:"messages"`
	Pagination Pagination `json:"pagination"`
}

// MessageRow is a message as stored (without the reader's read state).
type MessageRow struct {
	MessageID      int64
	ConversationID int64
	Message        string
	MessageDate    int64
	UserID         int64
	Username       string
}

// PageRows is what the store finds for one page: the conversation's size, the page size in force,
// the reader's read state, and the messages whose positions fall on the page.
type PageRows struct {
	Total        int64
	PerPage      int64
	LastReadDate int64
	Messages     []MessageRow
}

// ConversationRow is a conversation as stored, with the reader's read state.
type ConversationRow struct {
	ConversationID  int64
	Title           string
	UserID          int64
	Username        string
	StartDate       int64
	MessageCount    int64
	FirstMessageID  int64
	LastMessageID   int64
	LastMessageDate int64
	LastReadDate    int64
	Open            bool
	OpenInvite      bool
	Starred         bool // by the reader
	Recipients      []Recipient
}

// Store is the persistence the domain needs. Every read is for one reader (userID); a
// conversation the reader does not participate in does not exist for it (ErrConversationNotFound,
// ErrMessageNotFound).
type Store interface {
	// MessagePage returns the conversation's messages at positions (page-1)*per+1 .. page*per,
	// per being the page size in force, which it also returns.
	MessagePage(ctx context.Context, conversationID, userID, page int64) (PageRows, error)
	Message(ctx context.Context, messageID, userID int64) (MessageRow, ConversationRow, error)
	Conversation(ctx context.Context, conversationID, userID int64) (ConversationRow, error)
	// MarkRead moves the reader's last_read_date forward to date (never back).
	MarkRead(ctx context.Context, conversationID, userID, date int64) error
	// MarkUnread sets the reader's last_read_date to 0.
	MarkUnread(ctx context.Context, conversationID, userID int64) error
	// UnknownUsers returns, in their order, the ids that name no user, in one query (to name
	// unknown recipients beside malformed ones: up to maxRecipients of them).
	UnknownUsers(ctx context.Context, ids []int64) ([]int64, error)
	WriteStore
}

// Service applies the rules of conversations for a reader.
type Service struct {
	store   Store
	now     func() time.Time
	running runningRetries // Idempotency-Keys of writes in progress here
}

// NewService returns a Service over store. now is the clock (time.Now when nil).
func NewService(store Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, now: now}
}

// Messages returns page of the conversation's messages as userID sees them.
func (s *Service) Messages(ctx context.Context, userID, conversationID, page int64) (MessagePage, error) {
	rows, err := s.store.MessagePage(ctx, conversationID, userID, QueryPage(page))
	if err != nil {
		return MessagePage{}, err
	}
	pagination, err := pageOf(page, rows.Total, rows.PerPage, len(rows.Messages))
	if err != nil {
		return MessagePage{}, err
	}
	out := make([]Message, len(rows.Messages))
	for i, m := range rows.Messages {
		out[i] = toMessage(m, rows.LastReadDate)
	}
	return MessagePage{Messages: out, Pagination: pagination}, nil
}

// Message returns one message with its conversation embedded.
func (s *Service) Message(ctx context.Context, userID, messageID int64) (Message, error) {
	m, c, err := s.store.Message(ctx, messageID, userID)
	if err != nil {
		return Message{}, err
	}
	return withConversation(m, c), nil
}

// Conversation returns the conversation as userID sees it.
func (s *Service) Conversation(ctx context.Context, userID, conversationID int64) (Conversation, error) {
	c, err := s.store.Conversation(ctx, conversationID, userID)
	if err != nil {
		return Conversation{}, err
	}
	return toConversation(c), nil
}

// MarkRead marks the conversation read up to the form value date (see ParseMarkReadDate).
func (s *Service) MarkRead(ctx context.Context, userID, conversationID int64, date string) error {
	d, err := ParseMarkReadDate(date, s.now().Unix())
	if err != nil {
		return err
	}
	return s.store.MarkRead(ctx, conversationID, userID, d)
}

// MarkUnread makes every message of the conversation unread for userID.
func (s *Service) MarkUnread(ctx context.Context, userID, conversationID int64) error {
	return s.store.MarkUnread(ctx, conversationID, userID)
}

func toMessage(m MessageRow, lastRead int64) Message {
	return Message{
		MessageID:      m.MessageID,
		ConversationID: m.ConversationID,
		Message:        m.Message,
		MessageDate:    m.MessageDate,
		UserID:         m.UserID,
		Username:       m.Username,
		IsUnread:       IsUnread(m.MessageDate, lastRead),
	}
}

func toConversation(c ConversationRow) Conversation {
	recipients := c.Recipients
	if recipients == nil {
		recipients = []Recipient{}
	}
	return Conversation{
		ConversationID:   c.ConversationID,
		Title:            c.Title,
		UserID:           c.UserID,
		Username:         c.Username,
		StartDate:        c.StartDate,
		ReplyCount:       max(c.MessageCount-1, 0),
		RecipientCount:   int64(len(recipients)),
		Recipients:       recipients,
		FirstMessageID:   c.FirstMessageID,
		LastMessageID:    c.LastMessageID,
		LastMessageDate:  c.LastMessageDate,
		IsUnread:         IsUnread(c.LastMessageDate, c.LastReadDate),
		IsStarred:        c.Starred,
		ConversationOpen: c.Open,
		OpenInvite:       c.OpenInvite,
	}
}
