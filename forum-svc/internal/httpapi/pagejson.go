package httpapi

import (
	"strconv"
	"sync"
	"unicode/utf8"

	"forumstats.local/forum-svc/internal/conversation"
)

// The message list is the hot response. It is encoded by hand into a pooled buffer: the bytes are
// exactly those encoding/json writes for conversation.MessagePage (pagejson_test.go compares the
// two), without reflection and without allocating a new buffer for every page.

// bufPool holds response buffers. A page of 100 long messages can be large; buffers that grew past
// maxPooledBuf are left to the GC so that one huge page does not pin memory.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

const maxPooledBuf = 256 << 10

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) > maxPooledBuf {
		return
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}

// appendMessagePage appends p as encoding/json would marshal it. ok is false if p holds something
// this encoder does not write (a message with an embedded conversation); the caller then uses
// encoding/json.
func appendMessagePage(b []byte, p *conversation.MessagePage) (_ []byte, ok bool) {
	b = append(b, `{"messages":`...)
	if p.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range p.Messages {
			m := &p.Messages[i]
			if m.Conversation != nil {
				return b, false
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"message_id":`...)
			b = strconv.AppendInt(b, m.MessageID, 10)
			b = append(b, `,"conversation_id":`...)
			b = strconv.AppendInt(b, m.ConversationID, 10)
			b = append(b, `,"message":`...)
			b = appendJSONString(b, m.Message)
			b = append(b, `,"message_date":`...)
			b = strconv.AppendInt(b, m.MessageDate, 10)
			b = append(b, `,"user_id":`...)
			b = strconv.AppendInt(b, m.UserID, 10)
			b = append(b, `,"username":`...)
			b = appendJSONString(b, m.Username)
			b = append(b, `,"is_unread":`...)
			b = strconv.AppendBool(b, m.IsUnread)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	pg := &p.Pagination
	b = append(b, `,"pagination":{"current_page":`...)
	b = strconv.AppendInt(b, pg.CurrentPage, 10)
	b = append(b, `,"last_page":`...)
	b = strconv.AppendInt(b, pg.LastPage, 10)
	b = append(b, `,"per_page":`...)
	b = strconv.AppendInt(b, pg.PerPage, 10)
	b = append(b, `,"shown":`...)
	b = strconv.AppendInt(b, pg.Shown, 10)
	b = append(b, `,"total":`...)
	b = strconv.AppendInt(b, pg.Total, 10)
	b = append(b, "}}"...)
	return b, true
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string the way encoding/json.Marshal does: HTML-safe
// (<, > and & as \u003c, \u003e, \u0026), control characters escaped, invalid UTF-8 replaced by
// \ufffd, and U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
