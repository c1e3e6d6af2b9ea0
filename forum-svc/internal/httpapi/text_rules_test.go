package httpapi_test

import (
	"net/url"
	"testing"
)

// Titles and messages with control or format characters are refused in the envelope by every
// write that takes one, and nothing is written; a title or message with nothing visible is
// missing. On both databases.
func TestTitleAndMessageCharactersRefused(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		counts := func() (n int64) {
			t.Helper()
			if err := e.gdb.Raw(`SELECT (SELECT COUNT(*) FROM conversations) + (SELECT COUNT(*) FROM conversation_messages)
  + (SELECT COUNT(*) FROM conversations WHERE title <> 'Twelve' AND conversation_id = 12)
  + (SELECT COUNT(*) FROM conversation_messages WHERE message_id = 1201 AND message <> 'a')`).Scan(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := counts()
		start := func(title, message string) url.Values {
			return form("recipient_ids[]", "2", "title", title, "message", message)
		}
		cases := []struct {
			name, path string
			form       url.Values
			code       string
			params     map[string]any
		}{
			{"start, terminal escape in the title", "/api/conversations", start("\x1b]0;owned\a", "m"), "invalid_input", map[string]any{"field": "title"}},
			{"start, CRLF in the title", "/api/conversations", start("a\r\nFake: header", "m"), "invalid_input", map[string]any{"field": "title"}},
			{"start, right-to-left override in the title", "/api/conversations", start("invoice_\u202Egnp.exe", "m"), "invalid_input", map[string]any{"field": "title"}},
			{"start, title of only U+200B", "/api/conversations", start("\u200b", "m"), "required_input_missing", map[string]any{"missing": []any{"title"}}},
			{"start, C1 control in the message", "/api/conversations", start("t", "a\u009bb"), "invalid_input", map[string]any{"field": "message"}},
			{"start, message of zero-width characters", "/api/conversations", start("t", "\u200b\u2060\ufeff"), "required_input_missing", map[string]any{"missing": []any{"message"}}},
			{"reply, override in the message", "/api/conversation-messages", form("conversation_id", "12", "message", "a\u202Eb"), "invalid_input", map[string]any{"field": "message"}},
			{"reply, lone CR", "/api/conversation-messages", form("conversation_id", "12", "message", "a\rb"), "invalid_input", map[string]any{"field": "message"}},
			{"edit, escape in the message", "/api/conversation-messages/1201", form("message", "\x1b[2J"), "invalid_input", map[string]any{"field": "message"}},
			{"edit, invisible message", "/api/conversation-messages/1201", form("message", "\u3164"), "required_input_missing", map[string]any{"missing": []any{"message"}}},
			{"update, LF in the title", "/api/conversations/12", form("title", "a\nb"), "invalid_input", map[string]any{"field": "title"}},
			{"update, invisible title", "/api/conversations/12", form("title", "\u200b\u200b"), "required_input_missing", map[string]any{"missing": []any{"title"}}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				wantError(t, e.post(c.path, c.form, key(keyAlice)), 400, c.code, c.params)
			})
		}
		if after := counts(); after != before {
			t.Fatalf("refused writes changed the counts from %d to %d", before, after)
		}
		// What stays: line breaks, tabs and joined emoji in a message.
		r := e.post("/api/conversation-messages", form("conversation_id", "12", "message", "one\r\ntwo\n\tthree 👨\u200d👩\u200d👧"), key(keyAlice))
		if r.status != 200 {
			t.Fatalf("a message with line breaks, a tab and a ZWJ sequence: %d %s", r.status, r.body)
		}
	})
}
