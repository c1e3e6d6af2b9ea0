package httpapi_test

import (
	"fmt"
	"testing"
	"time"
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

// editOwnMessageTimeLimit: an author edits their message up to the last second of the limit's
// last minute after its date, and not one second later; 0 lifts the limit. The option is read
// with every edit.
func TestEditOwnMessageTimeLimit(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		setLimit := func(minutes int) {
			t.Helper()
			if err := e.gdb.Exec("UPDATE forum_options SET edit_own_message_time_limit = ?", minutes).Error; err != nil {
				t.Fatal(err)
			}
		}
		r := e.post("/api/conversation-messages", form("conversation_id", "12", "message", "fresh"), key(keyBob))
		id := num(t, r.json(t), "message", "message_id")
		path := fmt.Sprintf("/api/conversation-messages/%d", id)
		setLimit(10)
		steps := []struct {
			name    string
			advance time.Duration // since the step before
			limit   int
			want    int
		}{
			{"at once", 0, 10, 200},
			{"9 min 59 s", 9*time.Minute + 59*time.Second, 10, 200},
			{"exactly 10 min", time.Second, 10, 200},
			{"10 min 1 s", time.Second, 10, 403},
			{"a day", 24 * time.Hour, 10, 403},
			{"a day, a limit of two days", 0, 2 * 24 * 60, 200},
			{"a day, no limit", 0, 0, 200},
		}
		for i, s := range steps {
			e.clock.Add(s.advance)
			setLimit(s.limit)
			text := fmt.Sprintf("edit %d", i)
			r := e.post(path, form("message", text), key(keyBob))
			if s.want == 403 {
				wantError(t, r, 403, "message_edit_time_limit_expired", map[string]any{"minutes": s.limit})
				continue
			}
			if r.status != 200 || r.json(t)["message"].(map[string]any)["message"] != text {
				t.Fatalf("%s: %d %s", s.name, r.status, r.body)
			}
		}
		// The order of the refusals: closed, then another's message, then the limit.
		setLimit(1)
		wantError(t, e.post(path, form("message", "x"), key(keyAlice)), 403, "no_permission", nil)
		e.post("/api/conversations/12", form("conversation_open", "0"), key(keyAlice))
		wantError(t, e.post(path, form("message", "x"), key(keyBob)), 403, "conversation_closed", nil)
	})
}
