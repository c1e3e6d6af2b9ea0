package conversation

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"forumstats.local/forum-svc/internal/decimal"
)

// The rules of the write operations' inputs. Fields are the form fields of a request
// (name -> the values as sent, in order); every check here is pure, the store checks the rest
// (users that exist, the size of the whole conversation).

// Fields are a request's form fields.
type Fields map[string][]string

// Options are the forum options the conversations API reads (forum_options).
type Options struct {
	DiscussionsPerPage int64 // page size of the conversation list
	MaxRecipients      int64 // participants other than the starter, in the whole conversation
	MessageMaxLength   int64 // in Unicode code points
	// EditOwnMessageTimeLimit is how long after its date an author may edit their message, in
	// minutes; 0: no limit.
	EditOwnMessageTimeLimit int64
}

// MaxEditOwnMessageTimeLimit bounds editOwnMessageTimeLimit: a year of minutes.
const MaxEditOwnMessageTimeLimit = 365 * 24 * 60

// MaxRecipientsLimit is the largest maxRecipients a forum may set: the most recipients any
// conversation can hold.
const MaxRecipientsLimit = 1000

// MaxTitleLength bounds a title, in code points.
const MaxTitleLength = 100

// MaxMessageLength is the largest messageMaxLength a forum may set, in code points: the longest
// message any conversation can hold.
const MaxMessageLength = 65536

// Field names of the forms.
const (
	FieldRecipients       = "recipient_ids"
	FieldTitle            = "title"
	FieldMessage          = "message"
	FieldConversationOpen = "conversation_open"
	FieldOpenInvite       = "open_invite"
	FieldConversationID   = "conversation_id"
	FieldIgnore           = "ignore"
	FieldStar             = "star"
	FieldStarterID        = "starter_id"
	FieldReceiverID       = "receiver_id"
	FieldStarred          = "starred"
	FieldUnread           = "unread"
)

// ArrayFields are the fields that take a list of values. The reader of the fields gathers each
// under its plain name whichever encoding a client used for it (`recipient_ids[]`,
// `recipient_ids[N]`, repeated `recipient_ids`), so the rules here read one list.
var ArrayFields = []string{FieldRecipients}

// Errors of the write operations that carry no parameters.
var (
	// ErrNoPermission: the user may see the object but not do this to it (edit another user's
	// message, update a conversation one did not start, invite without the right).
	ErrNoPermission = errors.New("you do not have permission to do this")
	// ErrConversationClosed: a closed conversation takes no reply, no invite and no edit.
	ErrConversationClosed = errors.New("the conversation is closed")
	// ErrIdempotencyKeyReused: the key was used for a different request.
	ErrIdempotencyKeyReused = errors.New("the idempotency key was used for a different request")
	// ErrRequestInProgress: the first request with this key is still running.
	ErrRequestInProgress = errors.New("a request with this idempotency key is in progress")
	// ErrInvalidIdempotencyKey: not 1 to 255 printable ASCII characters.
	ErrInvalidIdempotencyKey = errors.New("Idempotency-Key must be 1 to 255 printable ASCII characters")
)

// MissingInputError: required fields absent or blank after trimming.
type MissingInputError struct{ Fields []string }

func (e *MissingInputError) Error() string {
	return "required input missing: " + strings.Join(e.Fields, ", ")
}

// InvalidRecipientsError: recipient ids, as sent, that are not positive integers or name no user.
type InvalidRecipientsError struct{ Values []string }

func (e *InvalidRecipientsError) Error() string {
	return "invalid recipients: " + strings.Join(e.Values, ", ")
}

// UnknownUsersError is the store's answer for user ids that do not exist.
type UnknownUsersError struct{ IDs []int64 }

func (e *UnknownUsersError) Error() string { return fmt.Sprintf("no such users: %v", e.IDs) }

// TooManyRecipientsError: the conversation would have more recipients than Max.
type TooManyRecipientsError struct{ Max int64 }

func (e *TooManyRecipientsError) Error() string {
	return fmt.Sprintf("a conversation has at most %d recipients", e.Max)
}

// TooLongError: a title or message over Max code points.
type TooLongError struct {
	Field string
	Max   int64
}

func (e *TooLongError) Error() string {
	return fmt.Sprintf("%s is longer than %d characters", e.Field, e.Max)
}

// InvalidInputError: a malformed value of Field (a boolean, a filter, a text that is not UTF-8).
type InvalidInputError struct{ Field string }

func (e *InvalidInputError) Error() string { return "invalid value of " + e.Field }

// Bool reads an optional boolean field: absent is def. The values are the ones XenForo's clients
// send for a boolean, read strictly: "1", "true", "on", "yes" are true; "0", "false", "off", "no"
// are false; the words in any case. XenForo's own input filter takes PHP's truth of any string
// ("no" and "off" would be true, "" false); a value outside these eight, "" included, is refused
// instead, so that a typo never flips a setting. Anything else, a repeated field included, is
// *InvalidInputError.
func (f Fields) Bool(name string, def bool) (v, present bool, err error) {
	vs := f[name]
	switch {
	case len(vs) == 0:
		return def, false, nil
	case len(vs) > 1:
		return false, true, &InvalidInputError{Field: name}
	}
	switch strings.ToLower(vs[0]) {
	case "1", "true", "on", "yes":
		return true, true, nil
	case "0", "false", "off", "no":
		return false, true, nil
	}
	return false, true, &InvalidInputError{Field: name}
}

// ID reads an optional positive integer field (a filter): absent is 0.
func (f Fields) ID(name string) (int64, error) {
	vs := f[name]
	switch {
	case len(vs) == 0:
		return 0, nil
	case len(vs) > 1:
		return 0, &InvalidInputError{Field: name}
	}
	id, ok := decimal.ParseID(vs[0])
	if !ok {
		return 0, &InvalidInputError{Field: name}
	}
	return id, nil
}

// Text reads a text field, trimmed. blank tells that it is absent or only white space. A repeated
// field, a text that is not UTF-8 or one holding NUL (which no database text takes) is
// *InvalidInputError.
func (f Fields) Text(name string) (s string, blank bool, err error) {
	vs := f[name]
	switch {
	case len(vs) == 0:
		return "", true, nil
	case len(vs) > 1:
		return "", false, &InvalidInputError{Field: name}
	}
	if !utf8.ValidString(vs[0]) || strings.ContainsRune(vs[0], 0) {
		return "", false, &InvalidInputError{Field: name}
	}
	s = strings.TrimSpace(vs[0])
	return s, s == "", nil
}

// required collects blank required fields into a MissingInputError.
type required struct{ missing []string }

// text reads the required text field name. valid, when set, tells whether a text holds only the
// characters the field may hold (validTitle, validMessage); such a text is also blank without a
// visible character. Blank is missing whether or not the text is valid: required fields are
// checked first.
func (r *required) text(f Fields, name string, valid func(string) bool) (string, error) {
	s, blank, err := f.Text(name)
	if err == nil && !blank && valid != nil {
		blank = !hasVisible(s)
		if !blank && !valid(s) {
			err = &InvalidInputError{Field: name}
		}
	}
	if blank {
		r.missing = append(r.missing, name)
	}
	return s, err
}

func (r *required) err() error {
	if len(r.missing) == 0 {
		return nil
	}
	return &MissingInputError{Fields: r.missing}
}

// CheckLength refuses s longer than max code points.
func CheckLength(field, s string, max int64) error {
	if int64(len(s)) > max && int64(utf8.RuneCountInString(s)) > max {
		return &TooLongError{Field: field, Max: max}
	}
	return nil
}

// Recipients are the parsed recipient ids of a request.
type Recipients struct {
	IDs  []int64  // the well-formed ids: distinct, in the order sent, without the current user
	sent []string // every value as sent, in order
}

// ParseRecipients reads the recipient ids field (its values in the order the reader of the fields
// gives). Values that are not positive integers are *InvalidRecipientsError, returned with the
// Recipients parsed, so that the caller can add the well-formed ids that name no user to the same
// answer (Invalid); the current user is dropped, repeats count once; more than max distinct ids,
// or more than max+1 values whatever they are, is *TooManyRecipientsError (the store checks the
// whole conversation). None left is reported by an empty IDs.
func ParseRecipients(values []string, currentUser, max int64) (Recipients, error) {
	// More values than max and the current user (who is dropped) cannot all count, however many
	// repeat: refused before any is read, so no request makes the service parse, dedupe or look
	// up more ids than the forum allows.
	if int64(len(values)) > max+1 {
		return Recipients{}, &TooManyRecipientsError{Max: max}
	}
	r := Recipients{sent: values}
	seen := map[int64]bool{}
	malformed := false
	for _, v := range values {
		id, ok := decimal.ParseID(v)
		switch {
		case !ok:
			malformed = true
		case id != currentUser && !seen[id]:
			seen[id] = true
			r.IDs = append(r.IDs, id)
		}
	}
	if malformed {
		return r, r.Invalid(nil)
	}
	if int64(len(r.IDs)) > max {
		return Recipients{}, &TooManyRecipientsError{Max: max}
	}
	return r, nil
}

// Invalid names every offending value at once: the malformed ones and those of the unknown user
// ids, as sent, in the order sent, each once. nil when there is none.
func (r Recipients) Invalid(unknown []int64) error {
	isUnknown := make(map[int64]bool, len(unknown))
	for _, id := range unknown {
		isUnknown[id] = true
	}
	var values []string
	named := map[string]bool{}
	for _, v := range r.sent {
		id, ok := decimal.ParseID(v)
		if (!ok || isUnknown[id]) && !named[v] {
			named[v] = true
			values = append(values, v)
		}
	}
	if len(values) == 0 {
		return nil
	}
	return &InvalidRecipientsError{Values: values}
}

// Unknown turns the store's unknown user ids into the values as sent (Invalid); any other error
// is returned as it is.
func (r Recipients) Unknown(err error) error {
	var unknown *UnknownUsersError
	if !errors.As(err, &unknown) {
		return err
	}
	return r.Invalid(unknown.IDs)
}

// NewConversation is a conversation to start, checked.
type NewConversation struct {
	StarterID  int64
	Recipients []int64
	Title      string
	Message    string
	Parsed     string // the message's HTML (RenderMessage)
	Open       bool
	OpenInvite bool
	Date       int64
	// AttachmentKey names the uploads to attach to the first message ("": none).
	AttachmentKey string
}

// ParseStart checks the fields of POST /api/conversations/ in the order of the error table's checks:
// required fields, malformed values (recipients, booleans), lengths. The recipients parsed come
// back with an error too (see ParseRecipients).
func ParseStart(f Fields, userID int64, opts Options) (NewConversation, Recipients, error) {
	var req required
	title, errTitle := req.text(f, FieldTitle, validTitle)
	message, errMessage := req.text(f, FieldMessage, validMessage)
	open, _, errOpen := f.Bool(FieldConversationOpen, true)
	invite, _, errInvite := f.Bool(FieldOpenInvite, false)
	rs, errRecipients := ParseRecipients(f[FieldRecipients], userID, opts.MaxRecipients)
	if errRecipients == nil && len(rs.IDs) == 0 { // none sent, or only the current user
		req.missing = append([]string{FieldRecipients}, req.missing...)
	}
	if err := firstError(req.err(), errTitle, errMessage, errOpen, errInvite, errRecipients); err != nil {
		return NewConversation{}, rs, err
	}
	if err := firstError(CheckLength(FieldTitle, title, MaxTitleLength), CheckLength(FieldMessage, message, opts.MessageMaxLength)); err != nil {
		return NewConversation{}, Recipients{}, err
	}
	return NewConversation{StarterID: userID, Recipients: rs.IDs, Title: title, Message: message, Open: open, OpenInvite: invite}, rs, nil
}

// ParseMessage checks a required `message` field (a reply, an edit).
func ParseMessage(f Fields, opts Options) (string, error) {
	var req required
	message, err := req.text(f, FieldMessage, validMessage)
	if err != nil {
		return "", err
	}
	if err := req.err(); err != nil {
		return "", err
	}
	return message, CheckLength(FieldMessage, message, opts.MessageMaxLength)
}

// ParseReply checks the fields of POST /api/conversation-messages/. A conversation_id that is not
// a positive integer names no conversation of the user's: ErrConversationNotFound.
func ParseReply(f Fields, opts Options) (conversationID int64, message string, err error) {
	var req required
	raw, errID := req.text(f, FieldConversationID, nil)
	message, errMessage := req.text(f, FieldMessage, validMessage)
	if err := req.err(); err != nil {
		return 0, "", err
	}
	if errID != nil {
		return 0, "", ErrConversationNotFound
	}
	if errMessage != nil {
		return 0, "", errMessage
	}
	id, ok := decimal.ParseID(raw)
	if !ok {
		return 0, "", ErrConversationNotFound
	}
	return id, message, CheckLength(FieldMessage, message, opts.MessageMaxLength)
}

// ConversationUpdate is what POST /api/conversations/{id}/ changes; nil is unchanged.
type ConversationUpdate struct {
	Title      *string
	Open       *bool
	OpenInvite *bool
}

// ParseUpdate checks the fields of a conversation update: any of title, conversation_open,
// open_invite. A title sent blank is missing.
func ParseUpdate(f Fields) (ConversationUpdate, error) {
	var u ConversationUpdate
	if _, sent := f[FieldTitle]; sent {
		var req required
		title, err := req.text(f, FieldTitle, validTitle)
		if err != nil {
			return u, err
		}
		if err := req.err(); err != nil {
			return u, err
		}
		if err := CheckLength(FieldTitle, title, MaxTitleLength); err != nil {
			return u, err
		}
		u.Title = &title
	}
	return u, firstError(f.optionalBool(FieldConversationOpen, &u.Open), f.optionalBool(FieldOpenInvite, &u.OpenInvite))
}

// ListFilter narrows the conversation list; zero values do not filter.
type ListFilter struct {
	StarterID  int64 // started by this user
	ReceiverID int64 // with this participant other than the starter
	Starred    *bool // starred (true) or not (false) by the current user
	Unread     *bool // unread (true) or read (false) for the current user
}

// ParseListFilter reads the list's filters from its query.
func ParseListFilter(f Fields) (ListFilter, error) {
	var lf ListFilter
	var err error
	if lf.StarterID, err = f.ID(FieldStarterID); err != nil {
		return lf, err
	}
	if lf.ReceiverID, err = f.ID(FieldReceiverID); err != nil {
		return lf, err
	}
	return lf, firstError(f.optionalBool(FieldStarred, &lf.Starred), f.optionalBool(FieldUnread, &lf.Unread))
}

// optionalBool reads a boolean field into *dst, left nil when the field is absent.
func (f Fields) optionalBool(name string, dst **bool) error {
	v, present, err := f.Bool(name, false)
	if present && err == nil {
		*dst = &v
	}
	return err
}

// firstError is the first non-nil error.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// FieldAttachmentKey names the attachment key whose uploads a start, reply or edit attaches to
// its message.
const FieldAttachmentKey = "attachment_key"

// AttachmentKeyLength is the length of an attachment key: 32 lowercase hexadecimal digits.
const AttachmentKeyLength = 32

// ValidAttachmentKey tells whether s has the shape of an attachment key. A value of another shape
// names no key, and is refused without a lookup.
func ValidAttachmentKey(s string) bool {
	if len(s) != AttachmentKeyLength {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ParseAttachmentKey reads the optional attachment_key of a start, reply or edit: absent or blank
// is "". A repeated field, or a value that is not a key's shape, is *InvalidInputError.
func ParseAttachmentKey(f Fields) (string, error) {
	s, blank, err := f.Text(FieldAttachmentKey)
	if err != nil || blank {
		return "", err
	}
	if !ValidAttachmentKey(s) {
		return "", &InvalidInputError{Field: FieldAttachmentKey}
	}
	return s, nil
}

// Errors of an attachment key named by a write or an upload.
var (
	// ErrAttachmentKeyNotFound: no such key (never given, or swept after 24 hours).
	ErrAttachmentKeyNotFound = errors.New("the attachment key is not known")
	// ErrAttachmentKeyUserWrong: the key was given to another user; only its owner uploads under
	// it, lists it or attaches what it holds.
	ErrAttachmentKeyUserWrong = errors.New("the attachment key belongs to another user")
	// ErrAttachmentKeyContextWrong: the key was given for another conversation (or for a new
	// conversation, and is named by a reply or an edit, or the other way round).
	ErrAttachmentKeyContextWrong = errors.New("the attachment key was given for another conversation")
)

// TooManyAttachmentsError: a message would hold more than Max files.
type TooManyAttachmentsError struct{ Max int64 }

func (e *TooManyAttachmentsError) Error() string {
	return fmt.Sprintf("a message holds at most %d attachments", e.Max)
}

// AttachTarget is what the rules of attaching look at: the key as stored, and the write that
// names it.
type AttachTarget struct {
	KeyUserID         int64
	KeyConversationID int64 // 0: a key for a new conversation
	UserID            int64 // the writer
	ConversationID    int64 // the conversation written to; 0 for a start
	Attached          int64 // files the message holds already (an edit's)
	Adding            int64 // the key's files
	MaxPerMessage     int64
}

// CheckAttach tells whether the write may attach the key's files: only the key's owner attaches
// them, only to the conversation the key was given for (a new one for a key without one), and a
// message never holds more than the forum's attachmentMaxPerMessage.
func CheckAttach(t AttachTarget) error {
	switch {
	case t.KeyUserID != t.UserID:
		return ErrAttachmentKeyUserWrong
	case t.KeyConversationID != t.ConversationID:
		return ErrAttachmentKeyContextWrong
	case t.Attached+t.Adding > t.MaxPerMessage:
		return &TooManyAttachmentsError{Max: t.MaxPerMessage}
	}
	return nil
}
