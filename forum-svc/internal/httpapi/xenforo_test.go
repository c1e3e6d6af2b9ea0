package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/forum-svc/internal/httpapi/xenforotest"
)

// XenForo 2.3's clients must work against this API. testdata/xenforo/conversations.json holds the
// field names and types of XenForo's published document for the conversation and attachment
// operations (their inputs, their 200 answers and the Conversation, ConversationMessage,
// Attachment, User and Pagination objects): every answer of every such operation here validates
// against XenForo's schema of the same operation, and shows every field XenForo lists for its
// objects, but those xenforotest.Absent names.

const xenforoDocument = "testdata/xenforo/conversations.json"

func loadXenForo(t *testing.T) *openapi3.T {
	t.Helper()
	return xenforotest.Load(t, xenforoDocument)
}

// checkXenForoAnswer validates r, the 200 answer of XenForo's operation method path, against
// XenForo's schema, and checks the objects it holds.
func checkXenForoAnswer(t *testing.T, doc *openapi3.T, method, path string, r response) {
	t.Helper()
	xenforotest.CheckAnswer(t, doc, method, path, r.status, r.body)
}

func TestAnswersMatchXenForo(t *testing.T) {
	doc := loadXenForo(t)
	dialects(t, func(t *testing.T, e *env) {
		// A key with the scope attachment:write, which no route needs yet.
		attachKey := "alice-attach-key-0123456789abcdef0123"
		e.gdb.Exec(`INSERT INTO api_keys (key_hash, key_type, user_id, scopes, active, created_at)
VALUES (?, 'user', 1, 'conversation:read conversation:write attachment:write', TRUE, 1)`, auth.Hash(attachKey))
		alice := key(keyAlice)
		check := func(method, path string, r response) {
			t.Helper()
			checkXenForoAnswer(t, doc, method, path, r)
		}
		check("post", "/conversation-messages/{id}/react", e.post("/api/conversation-messages/1003/react", form("reaction_id", "2"), alice))
		check("get", "/conversations/", e.get("/api/conversations", alice))
		check("get", "/conversations/{id}/", e.get("/api/conversations/10", alice))
		check("get", "/conversations/{id}/", e.get("/api/conversations/10?with_messages=1&page=2", alice))
		check("get", "/conversations/{id}/", e.get("/api/conversations/10?with_messages=1", key(attachKey)))
		check("get", "/conversations/{id}/messages", e.get("/api/conversations/10/messages", alice))
		check("get", "/conversation-messages/{id}/", e.get("/api/conversation-messages/1003", alice))
		check("post", "/conversations/", e.post("/api/conversations", form("recipient_ids[]", "2", "title", "t", "message", "[i]m[/i]"), alice))
		check("post", "/conversations/{id}/", e.post("/api/conversations/10", form("title", "Ten!"), alice))
		check("post", "/conversation-messages/", e.post("/api/conversation-messages", form("conversation_id", "10", "message", "[b]hi[/b]"), alice))
		check("post", "/conversation-messages/{id}/", e.post("/api/conversation-messages/1001", form("message", "edited"), alice))
		check("post", "/conversations/{id}/mark-read", e.post("/api/conversations/10/mark-read", url.Values{}, alice))
		check("post", "/conversations/{id}/mark-unread", e.post("/api/conversations/10/mark-unread", url.Values{}, alice))
		check("post", "/conversations/{id}/invite", e.post("/api/conversations/10/invite", form("recipient_ids[]", "4"), alice))
		check("post", "/conversations/{id}/star", e.post("/api/conversations/10/star", url.Values{}, alice))
		check("post", "/conversation-messages/{id}/react", e.post("/api/conversation-messages/1003/react", form("reaction_id", "2"), alice))
		checkXenForoAttachments(t, e, check)
		check("delete", "/conversations/{id}/", e.req(http.MethodDelete, "/api/conversations/12", nil, alice))
	})
}

// checkXenForoAttachments checks the attachment operations' answers, and the messages that carry
// attachments: a key for conversation 10 with a first file, a second file under it, the key's
// list, a reply naming the key and an edit adding a third file, the message and the page
// showing them, one file read and another deleted.
func checkXenForoAttachments(t *testing.T, e *env, check func(method, path string, r response)) {
	t.Helper()
	attachmentKeys(t, e)
	alice := key(attAlice)
	newKey := func(filename string, file []byte) string {
		t.Helper()
		r := e.upload("/api/attachments/new-key", attAlice,
			[][2]string{{"type", "conversation_message"}, {"context[conversation_id]", "10"}}, filename, bytes.NewReader(file))
		check("post", "/attachments/new-key", r)
		return r.json(t)["key"].(string)
	}
	akey := newKey("view.png", pngOf(t, 8, 8))
	check("post", "/attachments/", e.upload("/api/attachments/", attAlice, [][2]string{{"key", akey}}, "notes.txt", strings.NewReader("notes")))
	check("get", "/attachments/", e.get("/api/attachments/?key="+akey, alice))
	reply := e.post("/api/conversation-messages", form("conversation_id", "10", "message", "two files", "attachment_key", akey), alice)
	check("post", "/conversation-messages/", reply)
	msg := reply.json(t)["message"].(map[string]any)
	id := msg["message_id"].(json.Number).String()
	wantAttachments := func(where string, m map[string]any, n int) {
		t.Helper()
		list, _ := m["Attachments"].([]any)
		if got := m["attach_count"].(json.Number).String(); got != fmt.Sprint(n) || len(list) != n {
			t.Fatalf("%s: attach_count %s and %d Attachments, want %d: %v", where, got, len(list), n, m)
		}
	}
	wantAttachments("reply", msg, 2)
	edit := e.post("/api/conversation-messages/"+id, form("message", "three files", "attachment_key", newKey("map.txt", []byte("map"))), alice)
	check("post", "/conversation-messages/{id}/", edit)
	wantAttachments("edit", edit.json(t)["message"].(map[string]any), 3)
	one := e.get("/api/conversation-messages/"+id, alice)
	check("get", "/conversation-messages/{id}/", one)
	wantAttachments("message", one.json(t)["message"].(map[string]any), 3)
	first := e.get("/api/conversations/10/messages", alice).json(t)["pagination"].(map[string]any)
	page := e.get("/api/conversations/10/messages?page="+first["last_page"].(json.Number).String(), alice)
	check("get", "/conversations/{id}/messages", page)
	messages := page.json(t)["messages"].([]any)
	wantAttachments("page", messages[len(messages)-1].(map[string]any), 3)
	files := one.json(t)["message"].(map[string]any)["Attachments"].([]any)
	check("get", "/attachments/{id}/", e.get(fmt.Sprintf("/api/attachments/%s", files[0].(map[string]any)["attachment_id"]), alice))
	unattached := e.upload("/api/attachments/new-key", attAlice, [][2]string{{"type", "conversation_message"}}, "x.txt", strings.NewReader("x"))
	check("delete", "/attachments/{id}/", e.req(http.MethodDelete, fmt.Sprintf("/api/attachments/%d", attachmentID(t, unattached)), nil, alice))
}
