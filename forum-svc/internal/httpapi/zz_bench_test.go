package httpapi

import (
	"encoding/json"
	"testing"

	"forumstats.local/forum-svc/internal/conversation"
)

func benchPage() *conversation.MessagePage {
	p := &conversation.MessagePage{Pagination: conversation.Pagination{CurrentPage: 3, LastPage: 50000, PerPage: 20, Shown: 20, Total: 1000000}}
	for i := range 20 {
		p.Messages = append(p.Messages, conversation.Message{MessageID: int64(100000 + i), ConversationID: 1, Message: "Message number 123456 of the long conversation, with some text to carry.", MessageDate: 1767225600 + int64(i), UserID: 1 + int64(i%2), Username: "alice", IsUnread: true})
	}
	return p
}

func BenchmarkFlat(b *testing.B) {
	p := benchPage()
	buf := make([]byte, 0, 8192)
	for b.Loop() {
		buf, _ = appendMessagePage(buf[:0], p)
	}
}

func BenchmarkOld(b *testing.B) {
	p := benchPage()
	buf := make([]byte, 0, 8192)
	for b.Loop() {
		buf, _ = oldAppendMessagePage(buf[:0], p)
	}
}

func BenchmarkJSON(b *testing.B) {
	p := benchPage()
	for b.Loop() {
		_, _ = json.Marshal(p)
	}
}
