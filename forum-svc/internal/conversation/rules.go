// Package conversation is the domain of private conversations: who may see what, how messages
// are paged, and how read state moves. The pure rules live in this file; service.go applies them
// to what the store returns.
package conversation

import (
	"errors"
	"fmt"
	"math"

	"forumstats.local/forum-svc/internal/decimal"
)

// Domain errors. The HTTP layer maps each to a status and a code (its one error table).
var (
	// ErrConversationNotFound: no such conversation, or the current user is not a participant.
	// The two are one answer on purpose, so that no one learns which conversations exist.
	ErrConversationNotFound = errors.New("requested conversation not found")
	// ErrMessageNotFound: no such message, or its conversation is not accessible.
	ErrMessageNotFound = errors.New("requested message not found")
	// ErrInvalidDate: the mark-read `date` is not a non-negative integer of Unix seconds.
	ErrInvalidDate = errors.New("date must be a non-negative integer of Unix seconds")
)

// InvalidPageError is a `page` that is not a positive integer (Max == 0), or one past the last
// page (Max is then the last page).
type InvalidPageError struct{ Max int64 }

func (e *InvalidPageError) Error() string {
	if e.Max > 0 {
		return fmt.Sprintf("page must be between 1 and %d", e.Max)
	}
	return "page must be a positive integer"
}

// maxQueryPage bounds the page number handed to the store, so that (page-1)*per never overflows
// in SQL. No conversation has that many pages, so a larger page is refused all the same.
const maxQueryPage = 1 << 40

// ParsePage reads the `page` query parameter from all its values. Absent means 1. A value must be
// ASCII decimal digits (leading zeros allowed) and at least 1; "", "0", "-1", "+1", "1.5", "abc"
// are refused. A repeated `page` is refused too: two answers to one question is a client bug.
// A number too large for int64 is a positive integer past any last page; it saturates to
// math.MaxInt64 so that the caller answers with the real last page.
func ParsePage(values []string) (int64, error) {
	if len(values) == 0 {
		return 1, nil
	}
	if len(values) > 1 {
		return 0, &InvalidPageError{}
	}
	n, overflow, ok := decimal.Parse(values[0])
	switch {
	case !ok:
		return 0, &InvalidPageError{}
	case overflow:
		return math.MaxInt64, nil
	case n < 1:
		return 0, &InvalidPageError{}
	}
	return n, nil
}

// LastPage is max(1, ceil(total/perPage)).
func LastPage(total, perPage int64) int64 {
	if perPage < 1 {
		perPage = 1
	}
	if total <= 0 {
		return 1
	}
	return (total-1)/perPage + 1
}

// pageOf is the pagination of page of a list of total entries, perPage to a page, showing shown
// of them. A page past the last is *InvalidPageError naming the last page.
func pageOf(page, total, perPage int64, shown int) (Pagination, error) {
	last := LastPage(total, perPage)
	if page > last {
		return Pagination{}, &InvalidPageError{Max: last}
	}
	return Pagination{CurrentPage: page, LastPage: last, PerPage: perPage, Shown: int64(shown), Total: total}, nil
}

// QueryPage clamps a valid page for the store (see maxQueryPage).
func QueryPage(page int64) int64 {
	return min(page, maxQueryPage)
}

// IsUnread tells whether something dated date is unread for a reader who has read up to
// lastRead. A conversation is unread when its last message is.
func IsUnread(date, lastRead int64) bool { return date > lastRead }

// ParseMarkReadDate reads the optional `date` form field of mark-read. Missing, "" and "0" mean
// now; a date in the future counts as now. Anything that is not a non-negative decimal integer
// (a sign, a fraction, text, a value beyond int64) is ErrInvalidDate.
func ParseMarkReadDate(s string, now int64) (int64, error) {
	if s == "" {
		return now, nil
	}
	n, overflow, ok := decimal.Parse(s)
	if !ok || overflow {
		return 0, ErrInvalidDate
	}
	if n == 0 || n > now {
		return now, nil
	}
	return n, nil
}

// Permissions are what a user may do with a conversation they take part in.
type Permissions struct {
	Edit             bool // change its title and settings: its starter
	Reply            bool // while it is open
	Invite           bool // while it is open: its starter, or anyone when it has open_invite
	UploadAttachment bool // attach to a reply: a key allowed to, where the user may reply
}

// ConversationPermissions are userID's permissions on c; attachmentWrite tells whether the
// request's API key may upload attachments.
func ConversationPermissions(c ConversationRow, userID int64, attachmentWrite bool) Permissions {
	starter := c.UserID == userID
	return Permissions{
		Edit:             starter,
		Reply:            c.Open,
		Invite:           c.Open && (starter || c.OpenInvite),
		UploadAttachment: attachmentWrite && c.Open,
	}
}
