package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"
)

// A conversation deleted (its last participant left) takes its recorded Idempotency-Key answers
// with it, the start's and the replies', in the same transaction: a replay then runs as a new
// request (a new conversation; a reply into a conversation that no longer exists is 404) and
// shows nothing of the deleted one. On both databases.
func TestDeletedConversationTakesItsAnswers(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		post := func(path, idem string, kv ...string) response {
			t.Helper()
			r := request(http.MethodPost, path, "application/x-www-form-urlencoded", form(kv...).Encode(), key(keyAlice), "Idempotency-Key: "+idem)
			return e.serve(r)
		}
		start := func() response {
			return post("/api/conversations", "start-1", "recipient_ids[]", "2", "title", "Secret plan", "message", "first words")
		}
		first := start()
		id := num(t, first.json(t), "conversation", "conversation_id")
		reply := func() response {
			return post("/api/conversation-messages", "reply-1", "conversation_id", fmt.Sprint(id), "message", "second words")
		}
		if r := reply(); r.status != 200 {
			t.Fatalf("reply: %d %s", r.status, r.body)
		}
		// Before the deletion, both replay.
		for _, r := range []response{start(), reply()} {
			if r.status != 200 || r.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("replay before the deletion: %d %v %s", r.status, r.header, r.body)
			}
		}
		answers := func() (n int64) {
			t.Helper()
			if err := e.gdb.Raw(`SELECT COUNT(*) FROM idempotency_keys WHERE body LIKE '%Secret plan%'`).Scan(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		if n := answers(); n != 2 {
			t.Fatalf("%d recorded answers show the conversation; want 2", n)
		}
		for _, k := range []string{keyBob, keyAlice} {
			wantJSON(t, e.req(http.MethodDelete, "/api/conversations/"+fmt.Sprint(id), nil, key(k)), `{"success": true}`)
		}
		if n := answers(); n != 0 {
			t.Fatalf("%d recorded answers still show the deleted conversation", n)
		}
		// The replays run afresh: the start makes a new conversation, the reply finds none.
		again := start()
		if again.status != 200 || again.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("start replayed after the deletion: %d %v %s", again.status, again.header, again.body)
		}
		if got := num(t, again.json(t), "conversation", "conversation_id"); got <= id {
			t.Fatalf("the new conversation has id %d, not above the deleted %d", got, id)
		}
		wantError(t, reply(), 404, "requested_conversation_not_found", nil)
	})
}
