package conversation

import (
	"context"
	"strconv"
	"time"
)

// User is a user as the API shows one inside another object (a message's author, a
// conversation's starter): XenForo's User object, with the fields this forum has. It has no
// avatars, so avatar_urls is never shown.
type User struct {
	UserID   int64  `json:"user_id"`
	Username string `json:"username"`
}

// Attachment is XenForo's Attachment object as the API shows it (package attachment renders it
// from the stored row: attachment.ToAttachment). It is declared here, where the message objects
// that list it are, since package attachment imports this one.
type Attachment struct {
	AttachmentID int64  `json:"attachment_id"`
	ContentType  string `json:"content_type"`
	ContentID    int64  `json:"content_id"` // the message; 0 until attached
	AttachDate   int64  `json:"attach_date"`
	Filename     string `json:"filename"`
	FileSize     int64  `json:"file_size"`
	Width        int64  `json:"width"`
	Height       int64  `json:"height"`
	ThumbnailURL string `json:"thumbnail_url"` // "" unless the file is an image
	DirectURL    string `json:"direct_url"`
	IsVideo      bool   `json:"is_video"`
	IsAudio      bool   `json:"is_audio"`
}

// Message is a ConversationMessage as the API shows it to a reader. The `Attachments` list is
// shown, as XenForo shows it, only when the message has some.
type Message struct {
	MessageID      int64  `json:"message_id"`
	ConversationID int64  `json:"conversation_id"`
	Message        string `json:"message"`
	// MessageParsed is the message's BB code as HTML (bbcode.Render).
	MessageParsed string `json:"message_parsed"`
	MessageDate   int64  `json:"message_date"`
	UserID        int64  `json:"user_id"`
	Username      string `json:"username"`
	IsUnread      bool   `json:"is_unread"`
	// For the reader: what they may do with it, and their reaction.
	CanEdit       bool  `json:"can_edit"`
	CanReact      bool  `json:"can_react"`
	AttachCount   int64 `json:"attach_count"`
	ReactionScore int64 `json:"reaction_score"`
	IsReactedTo   bool  `json:"is_reacted_to"`
	// VisitorReactionID is shown only when the reader reacted.
	VisitorReactionID int64         `json:"visitor_reaction_id,omitempty"`
	User              User          `json:"User"`
	Attachments       []Attachment  `json:"Attachments,omitempty"`
	Conversation      *Conversation `json:"Conversation,omitempty"`
}

// Recipient is one participant other than the starter.
type Recipient struct {
	UserID   int64
	Username string
}

// Conversation is the Conversation object as the API shows it to a reader.
type Conversation struct {
	ConversationID int64  `json:"conversation_id"`
	Title          string `json:"title"`
	UserID         int64  `json:"user_id"`
	Username       string `json:"username"`
	StartDate      int64  `json:"start_date"`
	ReplyCount     int64  `json:"reply_count"`
	RecipientCount int64  `json:"recipient_count"`
	// Recipients maps each recipient's id (a decimal string) to their name, as XenForo shows them.
	Recipients        map[string]string `json:"recipients"`
	FirstMessageID    int64             `json:"first_message_id"`
	LastMessageID     int64             `json:"last_message_id"`
	LastMessageDate   int64             `json:"last_message_date"`
	LastMessageUserID int64             `json:"last_message_user_id"`
	IsUnread          bool              `json:"is_unread"`
	// For the current user; then the conversation's settings.
	IsStarred        bool `json:"is_starred"`
	ConversationOpen bool `json:"conversation_open"`
	OpenInvite       bool `json:"open_invite"`
	// What the reader may do with it.
	CanEdit             bool `json:"can_edit"`
	CanReply            bool `json:"can_reply"`
	CanInvite           bool `json:"can_invite"`
	CanUploadAttachment bool `json:"can_upload_attachment"`
	Starter             User `json:"Starter"`
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

// ConversationPage is a conversation with a page of its messages (GET of a conversation
// with_messages).
type ConversationPage struct {
	Conversation Conversation `json:"conversation"`
	Messages     []Message    `json:"messages"`
	Pagination   Pagination   `json:"pagination"`
}

// MessageRow is a message as stored (without the reader's read state).
type MessageRow struct {
	MessageID      int64
	ConversationID int64
	Message        string
	MessageDate    int64
	UserID         int64
	Username       string
	// MessageParsed is the stored HTML; "" for a message stored before it was kept that the
	// backfill (store.BackfillMessageParsed) has not reached yet: rendered when read.
	MessageParsed string
	ReactionScore int64
	// VisitorReactionID is the reader's reaction to it; 0: none.
	VisitorReactionID int64
	// AttachCount is the number of its attachments, read with the row.
	AttachCount int64
	// Attachments are its attachments, oldest first: the store reads them only for a message
	// whose AttachCount is not 0.
	Attachments []Attachment
	// EditTimeLimit is the forum's editOwnMessageTimeLimit, in minutes, as the row was read.
	EditTimeLimit int64
}

// PageRows is what the store finds for one page: the conversation's size, the page size in force,
// the reader's read state, and the messages whose positions fall on the page.
type PageRows struct {
	Total        int64
	PerPage      int64
	LastReadDate int64
	// Open is 1 when the conversation is open (a number, as the page's other header columns).
	Open int64
	// EditTimeLimit is the forum's editOwnMessageTimeLimit, in minutes.
	EditTimeLimit int64
	Messages      []MessageRow
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
	// LastMessageUserID is the author of the last message.
	LastMessageUserID int64
	LastReadDate      int64
	Open              bool
	OpenInvite        bool
	Starred           bool // by the reader
	Recipients        []Recipient
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
	// React applies r to its message (see ChangeReaction), under the message's lock so that its
	// reaction_score stays the sum of its reactions' scores: ErrMessageNotFound for a message
	// the user cannot see, ErrReactOwnContent for their own. answer renders the action inside the
	// transaction (see Retry).
	React(ctx context.Context, r NewReaction, retry *Retry, answer func(action string) ([]byte, error)) (Answer, error)
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
	v := s.viewer(ctx, userID)
	out := make([]Message, len(rows.Messages))
	for i, m := range rows.Messages {
		m.EditTimeLimit = rows.EditTimeLimit
		out[i] = v.message(m, rows.LastReadDate, rows.Open == 1)
	}
	return MessagePage{Messages: out, Pagination: pagination}, nil
}

// ConversationWithMessages returns the conversation and page of its messages as userID sees them.
func (s *Service) ConversationWithMessages(ctx context.Context, userID, conversationID, page int64) (ConversationPage, error) {
	c, err := s.Conversation(ctx, userID, conversationID)
	if err != nil {
		return ConversationPage{}, err
	}
	p, err := s.Messages(ctx, userID, conversationID, page)
	if err != nil {
		return ConversationPage{}, err
	}
	return ConversationPage{Conversation: c, Messages: p.Messages, Pagination: p.Pagination}, nil
}

// Message returns one message with its conversation embedded.
func (s *Service) Message(ctx context.Context, userID, messageID int64) (Message, error) {
	m, c, err := s.store.Message(ctx, messageID, userID)
	if err != nil {
		return Message{}, err
	}
	return s.viewer(ctx, userID).withConversation(m, c), nil
}

// Conversation returns the conversation as userID sees it.
func (s *Service) Conversation(ctx context.Context, userID, conversationID int64) (Conversation, error) {
	c, err := s.store.Conversation(ctx, conversationID, userID)
	if err != nil {
		return Conversation{}, err
	}
	return s.viewer(ctx, userID).conversation(c), nil
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

type attachmentWriteKey struct{}

// WithAttachmentWrite records in ctx whether the request's API key may upload attachments (its
// scopes), which the objects' can_upload_attachment tells.
func WithAttachmentWrite(ctx context.Context, allowed bool) context.Context {
	return context.WithValue(ctx, attachmentWriteKey{}, allowed)
}

// AttachmentWrite reads what WithAttachmentWrite recorded in ctx (false when nothing).
func AttachmentWrite(ctx context.Context) bool {
	allowed, _ := ctx.Value(attachmentWriteKey{}).(bool)
	return allowed
}

// viewer is who the objects are shown to: the user, whether their key may upload attachments,
// and the time (for the edit time limit).
type viewer struct {
	userID          int64
	attachmentWrite bool
	now             int64
}

func (s *Service) viewer(ctx context.Context, userID int64) viewer {
	allowed, _ := ctx.Value(attachmentWriteKey{}).(bool)
	return viewer{userID: userID, attachmentWrite: allowed, now: s.now().Unix()}
}

func (v viewer) message(m MessageRow, lastRead int64, open bool) Message {
	html := m.MessageParsed
	if html == "" {
		html = RenderMessage(m.Message)
	}
	edit := MessageEdit{MessageID: m.MessageID, UserID: v.userID, Date: v.now, TimeLimit: m.EditTimeLimit}
	return Message{
		MessageID:         m.MessageID,
		ConversationID:    m.ConversationID,
		Message:           m.Message,
		MessageParsed:     html,
		MessageDate:       m.MessageDate,
		UserID:            m.UserID,
		Username:          m.Username,
		IsUnread:          IsUnread(m.MessageDate, lastRead),
		CanEdit:           CheckEdit(EditTarget{AuthorID: m.UserID, MessageDate: m.MessageDate, ConversationOpen: open}, edit) == nil,
		CanReact:          CanReact(m.UserID, v.userID),
		AttachCount:       m.AttachCount,
		ReactionScore:     m.ReactionScore,
		IsReactedTo:       m.VisitorReactionID != 0,
		VisitorReactionID: m.VisitorReactionID,
		User:              User{UserID: m.UserID, Username: m.Username},
		Attachments:       m.Attachments,
	}
}

func (v viewer) conversation(c ConversationRow) Conversation {
	recipients := make(map[string]string, len(c.Recipients))
	for _, r := range c.Recipients {
		recipients[strconv.FormatInt(r.UserID, 10)] = r.Username
	}
	p := ConversationPermissions(c, v.userID, v.attachmentWrite)
	return Conversation{
		ConversationID:      c.ConversationID,
		Title:               c.Title,
		UserID:              c.UserID,
		Username:            c.Username,
		StartDate:           c.StartDate,
		ReplyCount:          max(c.MessageCount-1, 0),
		RecipientCount:      int64(len(c.Recipients)),
		Recipients:          recipients,
		FirstMessageID:      c.FirstMessageID,
		LastMessageID:       c.LastMessageID,
		LastMessageDate:     c.LastMessageDate,
		LastMessageUserID:   c.LastMessageUserID,
		IsUnread:            IsUnread(c.LastMessageDate, c.LastReadDate),
		IsStarred:           c.Starred,
		ConversationOpen:    c.Open,
		OpenInvite:          c.OpenInvite,
		CanEdit:             p.Edit,
		CanReply:            p.Reply,
		CanInvite:           p.Invite,
		CanUploadAttachment: p.UploadAttachment,
		Starter:             User{UserID: c.UserID, Username: c.Username},
	}
}

func (v viewer) withConversation(m MessageRow, c ConversationRow) Message {
	msg := v.message(m, c.LastReadDate, c.Open)
	conv := v.conversation(c)
	msg.Conversation = &conv
	return msg
}
