package httpapi_test

import (
	"testing"
)

// The rules of editing a message, on both databases.

// A closed conversation takes no edit, from its messages' authors neither, and an edit refused
// changes nothing; reopened, it takes them again.
func TestClosedConversationRefusesEdits(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		// 1201 and 1203 are alice's (the starter), 1202 bob's, in conversation 12.
		if r := e.post("/api/conversations/12", form("conversation_open", "0"), key(keyAlice)); r.status != 200 {
			t.Fatalf("close: %d %s", r.status, r.body)
		}
		cases := []struct {
			name, path, key string
		}{
			{"the starter, her message", "/api/conversation-messages/1201", keyAlice},
			{"a recipient, his message", "/api/conversation-messages/1202/", keyBob},
			{"a recipient, another's message", "/api/conversation-messages/1203", keyBob},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				wantError(t, e.post(c.path, form("message", "rewritten"), key(c.key)), 403, "conversation_closed", nil)
			})
		}
		var changed int64
		if err := e.gdb.Raw(`SELECT COUNT(*) FROM conversation_messages WHERE conversation_id = 12 AND message = 'rewritten'`).
			Scan(&changed).Error; err != nil || changed != 0 {
			t.Fatalf("refused edits changed %d messages (%v)", changed, err)
		}
		e.post("/api/conversations/12", form("conversation_open", "1"), key(keyAlice))
		if r := e.post("/api/conversation-messages/1202", form("message", "rewritten"), key(keyBob)); r.status != 200 {
			t.Fatalf("edit in the reopened conversation: %d %s", r.status, r.body)
		}
	})
}
