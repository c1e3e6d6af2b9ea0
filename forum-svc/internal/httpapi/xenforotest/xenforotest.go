// Package xenforotest checks answers of the forum's conversations API against XenForo 2.3's
// document for the same operations (testdata/xenforo/conversations.json of internal/httpapi: the
// field names and types of XenForo's inputs, answers and objects). It is used by tests only: the
// httpapi tests and the generated clients' tests read the same rules.
//
// An answer passes when it validates against XenForo's schema of its operation (kin-openapi) and
// shows every field XenForo lists for the objects it holds, but those named in Absent.
package xenforotest

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// Absent are the fields of XenForo's objects this API does not show, and why.
var Absent = map[string][]string{
	// No HTML pages to link to.
	"Conversation": {"view_url"},
	// view_url: as above; visitor_reaction_id: only when the reader reacted; Conversation: only
	// where the operation embeds it. Attachments is shown when attach_count is not 0, and then
	// required (wanted).
	"ConversationMessage": {"view_url", "visitor_reaction_id", "Conversation"},
	// Downloads are not counted, and there is no second, double-size thumbnail.
	"Attachment": {"view_count", "retina_thumbnail_url"},
}

// UserFields are the fields of XenForo's User object the forum has.
var UserFields = []string{"user_id", "username"}

// wanted tells whether the object obj (XenForo's name) must show field, which XenForo lists.
func wanted(name, field string, obj map[string]any) bool {
	switch {
	case name == "User":
		return slices.Contains(UserFields, field)
	case name == "ConversationMessage" && field == "Attachments":
		n, _ := obj["attach_count"].(float64)
		return n != 0
	}
	return !slices.Contains(Absent[name], field)
}

// Load reads, parses and validates (as OpenAPI 3.0) XenForo's document at path.
func Load(t testing.TB, path string) *openapi3.T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("%s is not valid OpenAPI: %v", path, err)
	}
	return doc
}

// CheckObject reports each field XenForo lists for its object name that v lacks (but Absent's),
// and walks the objects it embeds.
func CheckObject(report func(format string, args ...any), doc *openapi3.T, where, name string, v any) {
	obj, ok := v.(map[string]any)
	if !ok {
		report("%s: %s is %T, not an object", where, name, v)
		return
	}
	schema := doc.Components.Schemas[name].Value
	for field, prop := range schema.Properties {
		got, present := obj[field]
		if wanted(name, field, obj) && !present {
			report("%s: %s lacks XenForo's field %s", where, name, field)
		}
		if present {
			checkEmbedded(report, doc, where+"."+field, prop, got)
		}
	}
}

// checkEmbedded checks v, the value of a field whose schema is prop, when it is one of XenForo's
// objects or a list of them.
func checkEmbedded(report func(format string, args ...any), doc *openapi3.T, where string, prop *openapi3.SchemaRef, v any) {
	refName := func(ref string) string { return ref[strings.LastIndex(ref, "/")+1:] }
	switch {
	case prop.Ref != "":
		CheckObject(report, doc, where, refName(prop.Ref), v)
	case prop.Value != nil && prop.Value.Items != nil && prop.Value.Items.Ref != "":
		items, ok := v.([]any)
		if !ok {
			report("%s: %T, not a list", where, v)
			return
		}
		for _, item := range items {
			CheckObject(report, doc, where+"[]", refName(prop.Value.Items.Ref), item)
		}
	}
}

// CheckAnswer validates body, the answer (with status) of XenForo's operation method path
// (XenForo's path, e.g. "/conversations/{id}/"), against XenForo's schema of its 200 answer, and
// checks the objects it holds. A status other than 200 fails the test at once.
func CheckAnswer(t testing.TB, doc *openapi3.T, method, path string, status int, body []byte) {
	t.Helper()
	where := method + " " + path
	if status != http.StatusOK {
		t.Fatalf("%s: status %d: %s", where, status, body)
	}
	item := doc.Paths.Find(path)
	if item == nil {
		t.Fatalf("%s: not an operation of XenForo's document", where)
	}
	op := item.GetOperation(strings.ToUpper(method))
	if op == nil {
		t.Fatalf("%s: not an operation of XenForo's document", where)
	}
	schema := op.Responses.Status(200).Value.Content.Get("application/json").Schema.Value
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if err := schema.VisitJSON(v); err != nil {
		t.Errorf("%s: the answer does not match XenForo's schema: %v\n%s", where, err, body)
	}
	obj, _ := v.(map[string]any)
	for field, prop := range schema.Properties {
		if fv, ok := obj[field]; ok {
			checkEmbedded(t.Errorf, doc, where+" "+field, prop, fv)
		}
	}
}
