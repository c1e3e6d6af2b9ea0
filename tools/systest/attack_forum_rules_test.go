//go:build faults

package systest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"forumstats.local/tools/stack"
)

// Attacks on forum-svc's conversation rules, against the built binary on both databases: edits
// in a closed conversation, control and format characters in titles and messages, and replays of
// Idempotency-Key answers of a deleted conversation. Each test fails on the code before the fix
// and prints REPORT lines with what the attack got through.

// forumRulesDBs runs body against a forum-svc on private PostgreSQL and one on SQLite.
func forumRulesDBs(t *testing.T, body func(t *testing.T, svc *stack.Service, fx stack.ForumFixture)) {
	t.Run("postgres", func(t *testing.T) {
		fx := stack.NewForumFixture(10, 20)
		body(t, service(t, stack.Forum, forumEnv(t, postgres(t), fx)...), fx)
	})
	t.Run("sqlite", func(t *testing.T) {
		fx := stack.NewForumFixture(10, 20)
		body(t, service(t, stack.Forum, forumSQLiteEnv(t, fx)...), fx)
	})
}

// send posts form as user and returns the status, headers and body.
func send(t *testing.T, svc *stack.Service, fx stack.ForumFixture, user int64, method, path string, form url.Values, extra ...string) (int, http.Header, string) {
	t.Helper()
	h := actor(fx, user)
	h.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	return doReq(t, method, svc.URL+path, h, form.Encode())
}

// The starter closes a conversation, then both participants try to rewrite its messages.
func TestAttackForumRulesClosedEdit(t *testing.T) {
	forumRulesDBs(t, func(t *testing.T, svc *stack.Service, fx stack.ForumFixture) {
		id, first := start(t, svc, fx, 1, "closing soon", nil, 2)
		var reply struct {
			Message struct {
				MessageID int64 `json:"message_id"`
			} `json:"message"`
		}
		call(t, svc, fx, 2, http.MethodPost, "/api/conversation-messages", url.Values{"conversation_id": {strconv.FormatInt(id, 10)}, "message": {"agreed"}}, &reply)
		call(t, svc, fx, 1, http.MethodPost, fmt.Sprintf("/api/conversations/%d", id), url.Values{"conversation_open": {"0"}}, nil)
		attempts := []struct {
			user, message int64
		}{{1, first}, {2, reply.Message.MessageID}, {1, first}, {2, reply.Message.MessageID}}
		accepted, refused := 0, 0
		for i, a := range attempts {
			st, _, b := send(t, svc, fx, a.user, http.MethodPost, fmt.Sprintf("/api/conversation-messages/%d", a.message), url.Values{"message": {fmt.Sprintf("rewritten %d", i)}})
			switch {
			case st == http.StatusOK:
				accepted++
			case st == http.StatusForbidden && json.Valid([]byte(b)) && errorCode(b) == "conversation_closed":
				refused++
			default:
				t.Errorf("edit %d: %d %s", i, st, b)
			}
		}
		report(t, "edits of a closed conversation's messages by their authors: %d of %d accepted, %d refused 403 conversation_closed", accepted, len(attempts), refused)
		if accepted != 0 {
			t.Errorf("%d of %d edits in a closed conversation accepted", accepted, len(attempts))
		}
	})
}

// Titles and messages built to spoof what other users see, on every write that takes one.
func TestAttackForumRulesControlCharacters(t *testing.T) {
	titles := map[string]string{
		"terminal escape": "\x1b[2J\x1b[31mURGENT", "CRLF": "Hi\r\nFrom: admin", "LF": "a\nb", "C1 CSI": "a\u009b31mb",
		"right-to-left override": "invoice_\u202Egnp.exe", "only U+200B": "\u200b", "zero-width inside": "ad\u200bmin",
		"line separator": "a\u2028b",
	}
	messages := map[string]string{
		"terminal escape": "\x1b]0;owned\a", "bell": "\a\a\a", "lone CR": "line\roverwritten", "C1 NEL": "a\u0085b",
		"right-to-left isolate": "a\u2067b", "only zero-width": "\u200b\u200d\ufeff", "DEL": "a\x7f",
	}
	forumRulesDBs(t, func(t *testing.T, svc *stack.Service, fx stack.ForumFixture) {
		id, first := start(t, svc, fx, 1, "target", nil, 2)
		cid := strconv.FormatInt(id, 10)
		type write struct {
			name, path string
			form       url.Values
		}
		var writes []write
		for name, s := range titles {
			writes = append(writes,
				write{"start title " + name, "/api/conversations", url.Values{"recipient_ids[]": {"2"}, "title": {s}, "message": {"m"}}},
				write{"update title " + name, "/api/conversations/" + cid, url.Values{"title": {s}}})
		}
		for name, s := range messages {
			writes = append(writes,
				write{"start message " + name, "/api/conversations", url.Values{"recipient_ids[]": {"2"}, "title": {"t"}, "message": {s}}},
				write{"reply " + name, "/api/conversation-messages", url.Values{"conversation_id": {cid}, "message": {s}}},
				write{"edit " + name, fmt.Sprintf("/api/conversation-messages/%d", first), url.Values{"message": {s}}})
		}
		accepted := 0
		for _, w := range writes {
			st, _, b := send(t, svc, fx, 1, http.MethodPost, w.path, w.form)
			switch code := errorCode(b); {
			case st == http.StatusOK:
				accepted++
				t.Errorf("%s: accepted", w.name)
			case st != http.StatusBadRequest || code != "invalid_input" && code != "required_input_missing":
				t.Errorf("%s: %d %s; want 400 invalid_input or required_input_missing", w.name, st, b)
			}
		}
		report(t, "titles and messages with control or format characters or nothing visible: %d of %d writes accepted", accepted, len(writes))
		// What must stay: line breaks, a tab and an emoji ZWJ sequence in a message.
		if st, _, b := send(t, svc, fx, 1, http.MethodPost, "/api/conversation-messages", url.Values{"conversation_id": {cid}, "message": {"one\r\ntwo\n\t\U0001F468\u200d\U0001F469\u200d\U0001F467"}}); st != http.StatusOK {
			t.Errorf("a message with line breaks, a tab and a ZWJ sequence: %d %s", st, b)
		}
	})
}

// A conversation is started with an Idempotency-Key, then everyone leaves (it is deleted); the
// same request is replayed.
func TestAttackForumRulesReplayDeleted(t *testing.T) {
	forumRulesDBs(t, func(t *testing.T, svc *stack.Service, fx stack.ForumFixture) {
		f := url.Values{"recipient_ids[]": {"2"}, "title": {"Secret plan"}, "message": {"the first words"}}
		st, _, b := send(t, svc, fx, 1, http.MethodPost, "/api/conversations", f, "Idempotency-Key", "attack-replay-1")
		var first started
		if st != http.StatusOK || json.Unmarshal([]byte(b), &first) != nil {
			t.Fatalf("start: %d %s", st, b)
		}
		id := first.Conversation.ConversationID
		for _, u := range []int64{2, 1} {
			call(t, svc, fx, u, http.MethodDelete, fmt.Sprintf("/api/conversations/%d", id), nil, nil)
		}
		if st, _, b := send(t, svc, fx, 1, http.MethodGet, fmt.Sprintf("/api/conversations/%d", id), url.Values{}); st != http.StatusNotFound {
			t.Fatalf("the deleted conversation: %d %s", st, b)
		}
		st, h, b := send(t, svc, fx, 1, http.MethodPost, "/api/conversations", f, "Idempotency-Key", "attack-replay-1")
		var again started
		_ = json.Unmarshal([]byte(b), &again)
		replayed := h.Get("Idempotent-Replayed") == "true"
		report(t, "replay of a deleted conversation's start: status %d, replayed %v, conversation %d (deleted %d)", st, replayed, again.Conversation.ConversationID, id)
		if st != http.StatusOK || replayed || again.Conversation.ConversationID == id {
			t.Errorf("the replay after the deletion: %d, Idempotent-Replayed %q, %s; want a new conversation", st, h.Get("Idempotent-Replayed"), b)
		}
	})
}
