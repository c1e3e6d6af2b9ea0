package event

import (
	"strconv"
	"strings"
)

// Entry is one event of a user's log: a change, numbered for that user.
type Entry struct {
	ID             int64 // the user's event id: 1, 2, 3... without gaps, in commit order
	Type           string
	ConversationID int64
	MessageID      int64
	ActorID        int64
	At             int64
}

// Types of the stream's events that name no change.
const (
	// TypeUnreadCount carries the user's unread conversations: sent when the stream opens and
	// whenever the number changes.
	TypeUnreadCount = "unread_count"
	// TypeResync tells a client that asked to resume from an id the log no longer holds (or never
	// held) that events were lost: it must read its conversations afresh. Its id is the user's last
	// event id, from which the stream goes on.
	TypeResync = "resync"
)

// AppendEvent appends one server-sent event: its id, its type and its data (one line of JSON:
// data holding a line break would be cut into several data lines, so it is refused), then the
// blank line that ends it. ok is false, and nothing appended, for a type or data with a line
// break.
func AppendEvent(b []byte, id int64, typ string, data []byte) ([]byte, bool) {
	if strings.ContainsAny(typ, "\r\n") || strings.ContainsAny(string(data), "\r\n") {
		return b, false
	}
	b = append(b, "id: "...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, "\nevent: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...), true
}

// AppendRetry appends the stream's reconnection delay, in milliseconds.
func AppendRetry(b []byte, ms int64) []byte {
	b = append(b, "retry: "...)
	b = strconv.AppendInt(b, ms, 10)
	return append(b, "\n\n"...)
}

// Heartbeat is a comment line: it keeps proxies from closing an idle stream, and clients ignore it.
const Heartbeat = ": ping\n\n"

// ParseLastEventID reads a Last-Event-ID: a non-negative decimal integer within int64 (leading
// zeros allowed). An empty value is none (ok false, no error); anything else that is no such
// number is an error.
func ParseLastEventID(s string) (id int64, present bool, err error) {
	if s == "" {
		return 0, false, nil
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, true, errInvalidLastEventID
		}
	}
	id, err = strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, true, errInvalidLastEventID
	}
	return id, true, nil
}
