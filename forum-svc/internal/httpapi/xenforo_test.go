package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"forumstats.local/forum-svc/internal/auth"
)

// XenForo 2.3's clients must work against this API. testdata/xenforo/conversations.json holds the
// field names and types of XenForo's published document for the conversation operations (its
// 200 answers and the Conversation, ConversationMessage, User and Pagination objects): every
// answer of every conversation operation here validates against XenForo's schema of the same
// operation, and shows every field XenForo lists for its objects, but those named below.

// xenforoAbsent are the fields of XenForo's objects this API does not show, and why.
var xenforoAbsent = map[string][]string{
	// No HTML pages to link to.
	"Conversation": {"view_url"},
	// view_url: as above; Attachments: shown only when there are some, and the forum keeps none;
	// visitor_reaction_id: only when the reader reacted; Conversation: only where the operation
	// embeds it.
	"ConversationMessage": {"view_url", "Attachments", "visitor_reaction_id", "Conversation"},
}

// xenforoUserFields are the fields of XenForo's User object the forum has.
var xenforoUserFields = []string{"user_id", "username"}

func loadXenForo(t *testing.T) *openapi3.T {
	t.Helper()
	b, err := os.ReadFile("testdata/xenforo/conversations.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// checkXenForoObject reports each field XenForo lists for its object name that v lacks (but
// xenforoAbsent's), and walks the objects it embeds.
func checkXenForoObject(report func(format string, args ...any), doc *openapi3.T, where, name string, v any) {
	obj, ok := v.(map[string]any)
	if !ok {
		report("%s: %s is %T, not an object", where, name, v)
		return
	}
	schema := doc.Components.Schemas[name].Value
	for field, prop := range schema.Properties {
		want := !slices.Contains(xenforoAbsent[name], field)
		if name == "User" {
			want = slices.Contains(xenforoUserFields, field)
		}
		got, present := obj[field]
		if want && !present {
			report("%s: %s lacks XenForo's field %s", where, name, field)
		}
		if !present || prop.Ref == "" {
			continue
		}
		checkXenForoObject(report, doc, where+"."+field, prop.Ref[strings.LastIndex(prop.Ref, "/")+1:], got)
	}
}

// checkXenForoAnswer validates body, the 200 answer of XenForo's operation method path, against
// XenForo's schema, and checks the objects it holds.
func checkXenForoAnswer(t *testing.T, doc *openapi3.T, method, path string, r response) {
	t.Helper()
	where := method + " " + path
	if r.status != http.StatusOK {
		t.Fatalf("%s: status %d: %s", where, r.status, r.body)
	}
	op := doc.Paths.Find(path).GetOperation(strings.ToUpper(method))
	schema := op.Responses.Status(200).Value.Content.Get("application/json").Schema.Value
	var body any
	if err := json.Unmarshal([]byte(r.body), &body); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if err := schema.VisitJSON(body); err != nil {
		t.Errorf("%s: the answer does not match XenForo's schema: %v\n%s", where, err, r.body)
	}
	for field, prop := range schema.Properties {
		v, ok := body.(map[string]any)[field]
		if !ok {
			continue
		}
		if prop.Ref != "" {
			checkXenForoObject(t.Errorf, doc, where+" "+field, prop.Ref[strings.LastIndex(prop.Ref, "/")+1:], v)
		}
		if prop.Value.Items != nil && prop.Value.Items.Ref != "" {
			for _, item := range v.([]any) {
				checkXenForoObject(t.Errorf, doc, where+" "+field+"[]", prop.Value.Items.Ref[strings.LastIndex(prop.Value.Items.Ref, "/")+1:], item)
			}
		}
	}
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
		check("delete", "/conversations/{id}/", e.req(http.MethodDelete, "/api/conversations/12", nil, alice))
	})
}

// The XenForo document's own objects are what the test reads: a field it lists for a
// Conversation that the answer lacks fails it.
func TestXenForoCheckFailsOnAMissingField(t *testing.T) {
	doc := loadXenForo(t)
	var missing []string
	report := func(format string, args ...any) { missing = append(missing, fmt.Sprintf(format, args...)) }
	checkXenForoObject(report, doc, "test", "Conversation", map[string]any{"conversation_id": 1})
	// Every field but conversation_id and view_url.
	if want := len(doc.Components.Schemas["Conversation"].Value.Properties) - 2; len(missing) != want {
		t.Fatalf("%d fields reported missing, want %d: %q", len(missing), want, missing)
	}
}
