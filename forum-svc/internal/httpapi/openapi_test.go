package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"forumstats.local/shared/testutil/doctest"
)

func loadDoc(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.") {
		t.Fatalf("openapi version %q", v)
	}
	return doc
}

// Every route the service registers is in the document, with its method.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	doc := loadDoc(t)
	paths := doc["paths"].(map[string]any)
	e := newEcho(Deps{})
	seen := 0
	for _, r := range e.Routes() {
		if r.Method == http.MethodOptions || r.Method == http.MethodHead || refuses(r) {
			continue // OPTIONS only answers 405; HEAD is GET without a body
		}
		p := r.Path
		if strings.Contains(p, ":id") {
			p = strings.ReplaceAll(p, ":id", "{id}")
		}
		item, ok := paths[p].(map[string]any)
		if !ok {
			t.Errorf("route %s %s is not in openapi.json", r.Method, p)
			continue
		}
		if _, ok := item[strings.ToLower(r.Method)]; !ok {
			t.Errorf("route %s %s: method not in openapi.json", r.Method, p)
		}
		seen++
	}
	if seen < 6 {
		t.Fatalf("only %d routes checked", seen)
	}
	// And the document promises no route the service lacks.
	registered := map[string]bool{}
	for _, r := range e.Routes() {
		if refuses(r) {
			continue
		}
		registered[strings.ReplaceAll(r.Path, ":id", "{id}")+" "+strings.ToLower(r.Method)] = true
	}
	for p, item := range paths {
		// The trailing-slash forms are the same routes (middleware.RemoveTrailingSlash).
		route := p
		if len(p) > 1 {
			route = strings.TrimSuffix(p, "/")
		}
		for m, op := range item.(map[string]any) {
			if m == "parameters" {
				continue
			}
			if refusal(op.(map[string]any)) {
				// OPTIONS is registered, to answer 405 (methodNotAllowed).
				if m != "options" && registered[route+" "+m] {
					t.Errorf("openapi.json documents %s %s as refused, but the service serves it", m, p)
				}
				continue
			}
			if !registered[route+" "+m] {
				t.Errorf("openapi.json documents %s %s, which the service does not serve", m, p)
			}
		}
	}
}

// refuses reports whether a route is registered only to refuse its method (405).
func refuses(r *echo.Route) bool { return strings.HasSuffix(r.Name, ".methodNotAllowed") }

// refusal reports whether an operation documents the refusal of its method: 405 (or the 204 that
// Echo's router answers OPTIONS with on the shared probes), besides the head limits' 414 and 431.
func refusal(op map[string]any) bool {
	responses := op["responses"].(map[string]any)
	_, r200 := responses["200"]
	_, r405 := responses["405"]
	_, r204 := responses["204"]
	return !r200 && (r405 || r204)
}

// Every error code the service can answer with is in the document's ErrorCode enum and is named
// by some response of some operation; the enum holds no other code.
func TestOpenAPICoversEveryErrorCode(t *testing.T) {
	doc := loadDoc(t)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	var enum []string
	for _, v := range schemas["ErrorCode"].(map[string]any)["enum"].([]any) {
		enum = append(enum, v.(string))
	}
	codes := allCodes()
	text := string(OpenAPI())
	for _, c := range codes {
		if !slices.Contains(enum, c) {
			t.Errorf("code %s is not in the ErrorCode enum", c)
		}
		if strings.Count(text, c) < 2 {
			t.Errorf("code %s is in the enum but no response describes it", c)
		}
	}
	for _, c := range enum {
		if !slices.Contains(codes, c) {
			t.Errorf("the enum lists %s, which the service never answers", c)
		}
	}
}

// Every $ref of the document resolves.
func TestOpenAPIRefsResolve(t *testing.T) {
	doc := loadDoc(t)
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				var cur any = doc
				for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
					m, ok := cur.(map[string]any)
					if !ok || m[part] == nil {
						t.Errorf("unresolved $ref %s", ref)
						return
					}
					cur = m[part]
				}
			}
			for _, c := range x {
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(doc)
}

// Every error code the service can answer with is named, in backticks, where the READMEs list the
// errors: forum-svc/README.md's sections "Authentication, errors and reading" and "The
// conversations API", and the forum-svc part of the repository's README.md.
func TestREADMEsNameEveryErrorCode(t *testing.T) {
	for name, text := range map[string]string{
		"forum-svc/README.md": doctest.Section(t, "../../README.md", "## Authentication, errors and reading") +
			doctest.Section(t, "../../README.md", "## The conversations API"),
		"README.md's forum-svc part": doctest.Section(t, "../../../README.md", "### forum-svc"),
	} {
		doctest.NamesEveryCode(t, name, text, allCodes())
	}
}
