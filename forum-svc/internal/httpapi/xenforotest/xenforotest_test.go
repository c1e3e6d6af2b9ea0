package xenforotest

import (
	"fmt"
	"testing"
)

const document = "../testdata/xenforo/conversations.json"

// The XenForo document's own objects are what the checks read: a field it lists for a
// Conversation that the answer lacks fails it.
func TestCheckObjectReportsAMissingField(t *testing.T) {
	doc := Load(t, document)
	var missing []string
	report := func(format string, args ...any) { missing = append(missing, fmt.Sprintf(format, args...)) }
	CheckObject(report, doc, "test", "Conversation", map[string]any{"conversation_id": 1})
	// Every field but conversation_id and view_url.
	if want := len(doc.Components.Schemas["Conversation"].Value.Properties) - 2; len(missing) != want {
		t.Fatalf("%d fields reported missing, want %d: %q", len(missing), want, missing)
	}
}

// A message with attachments must list them; one without need not; a User needs only the fields
// the forum has; and the objects a list holds are checked one by one.
func TestCheckObjectRules(t *testing.T) {
	doc := Load(t, document)
	full := func(name string, drop ...string) map[string]any {
		obj := map[string]any{}
		for field := range doc.Components.Schemas[name].Value.Properties {
			obj[field] = nil
		}
		for _, f := range drop {
			delete(obj, f)
		}
		return obj
	}
	user := map[string]any{"user_id": 1.0, "username": "alice"}
	for _, c := range []struct {
		name    string
		object  string
		value   map[string]any
		missing int
	}{
		{"message without files", "ConversationMessage", withFields(full("ConversationMessage", "Attachments", "view_url", "visitor_reaction_id", "Conversation"), "attach_count", 0.0, "User", user), 0},
		{"message with files lacking them", "ConversationMessage", withFields(full("ConversationMessage", "Attachments", "view_url", "visitor_reaction_id", "Conversation"), "attach_count", 2.0, "User", user), 1},
		{"message whose file lacks its id", "ConversationMessage", withFields(full("ConversationMessage", "view_url", "visitor_reaction_id", "Conversation"), "attach_count", 1.0, "User", user,
			"Attachments", []any{withFields(full("Attachment", "view_count", "retina_thumbnail_url", "attachment_id"))}), 1},
		{"user with the forum's fields", "User", user, 0},
		{"user without a name", "User", map[string]any{"user_id": 1.0}, 1},
		{"not an object", "User", nil, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var missing []string
			report := func(format string, args ...any) { missing = append(missing, fmt.Sprintf(format, args...)) }
			var v any = c.value
			if c.value == nil {
				v = "text"
			}
			CheckObject(report, doc, "test", c.object, v)
			if len(missing) != c.missing {
				t.Fatalf("reported %q, want %d", missing, c.missing)
			}
		})
	}
}

func withFields(obj map[string]any, kv ...any) map[string]any {
	for i := 0; i < len(kv); i += 2 {
		obj[kv[i].(string)] = kv[i+1]
	}
	return obj
}
