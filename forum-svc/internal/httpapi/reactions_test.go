package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"

	"forumstats.local/forum-svc/internal/auth"
)

// A reaction through the API: the answers, what the reader then sees on the message, the page and
// the conversation with its messages, and every refusal.
func TestReactions(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		alice, bob := key(keyAlice), key(keyBob)
		react := func(id string, reaction string, headers ...string) response {
			t.Helper()
			return e.post("/api/conversation-messages/"+id+"/react", form("reaction_id", reaction), headers...)
		}
		// seen is message 1003 (carol's) as alice reads it: alone, on page 1 and with the conversation.
		seen := func(score int64, visitor any) {
			t.Helper()
			one := e.get("/api/conversation-messages/1003", alice).json(t)["message"].(map[string]any)
			var onPage map[string]any
			for _, m := range e.get("/api/conversations/10?with_messages=1", alice).json(t)["messages"].([]any) {
				if m := m.(map[string]any); fmt.Sprint(m["message_id"]) == "1003" {
					onPage = m
				}
			}
			for where, m := range map[string]map[string]any{"message": one, "conversation page": onPage} {
				if m == nil {
					t.Fatalf("%s: no message 1003", where)
				}
				if got := fmt.Sprint(m["reaction_score"]); got != fmt.Sprint(score) {
					t.Errorf("%s: reaction_score %s, want %d", where, got, score)
				}
				if got := m["visitor_reaction_id"]; fmt.Sprint(got) != fmt.Sprint(visitor) {
					t.Errorf("%s: visitor_reaction_id %v, want %v", where, got, visitor)
				}
				if m["is_reacted_to"] != (visitor != nil) || m["can_react"] != true {
					t.Errorf("%s: is_reacted_to %v, can_react %v", where, m["is_reacted_to"], m["can_react"])
				}
			}
		}
		seen(0, nil)
		wantJSON(t, react("1003", "4", alice), `{"success": true, "action": "insert"}`)
		seen(1, 4)
		wantJSON(t, react("1003", "6", alice), `{"success": true, "action": "insert"}`) // replaced
		seen(0, 6)
		wantJSON(t, react("1003", "1", bob), `{"success": true, "action": "insert"}`)
		seen(1, 6)
		wantJSON(t, react("1003", "6", alice), `{"success": true, "action": "delete"}`) // the same again
		seen(1, nil)

		// A retry with the same Idempotency-Key replays the answer and reacts once.
		for range 2 {
			wantJSON(t, react("1003", "2", alice, "Idempotency-Key: r1"), `{"success": true, "action": "insert"}`)
		}
		seen(2, 2)
		wantError(t, react("1003", "3", alice, "Idempotency-Key: r1"), 422, "idempotency_key_reused", map[string]any{})

		wantError(t, react("1001", "1", alice), 403, "reacting_to_your_own_content_is_considered_cheating", map[string]any{})
		wantError(t, react("1301", "1", alice), 404, "requested_message_not_found", map[string]any{}) // not a participant
		wantError(t, react("999999", "1", alice), 404, "requested_message_not_found", map[string]any{})
		wantError(t, react("1003", "1", key(keyAliceRead)), 403, "missing_scope", map[string]any{"scope": "conversation:write"})
		for _, bad := range []string{"0", "7", "-1", "1.0", "x", ""} {
			wantError(t, react("1003", bad, alice), 400, "invalid_input", map[string]any{"field": "reaction_id"})
		}
		wantError(t, e.post("/api/conversation-messages/1003/react", form(), alice), 400, "required_input_missing",
			map[string]any{"missing": []any{"reaction_id"}})
		wantError(t, e.req(http.MethodGet, "/api/conversation-messages/1003/react", nil, alice), 405, "method_not_allowed", map[string]any{})
		seen(2, 2)
	})
}

// can_upload_attachment follows the key's scope attachment:write and the right to reply.
func TestCanUploadAttachment(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		attachKey := "alice-attach-key-0123456789abcdef0123"
		if err := e.gdb.Exec(`INSERT INTO api_keys (key_hash, key_type, user_id, scopes, active, created_at)
VALUES (?, 'user', 1, 'conversation:read conversation:write attachment:write', TRUE, 1)`, auth.Hash(attachKey)).Error; err != nil {
			t.Fatal(err)
		}
		can := func(k string) any {
			return e.get("/api/conversations/10", key(k)).json(t)["conversation"].(map[string]any)["can_upload_attachment"]
		}
		if got := can(keyAlice); got != false {
			t.Fatalf("without attachment:write: %v", got)
		}
		if got := can(attachKey); got != true {
			t.Fatalf("with attachment:write: %v", got)
		}
		if r := e.post("/api/conversations/10", form("conversation_open", "0"), key(keyAlice)); r.status != http.StatusOK { // closed: no reply
			t.Fatalf("closing: %d %s", r.status, r.body)
		}
		if got := can(attachKey); got != false {
			t.Fatalf("with attachment:write in a closed conversation: %v", got)
		}
	})
}
