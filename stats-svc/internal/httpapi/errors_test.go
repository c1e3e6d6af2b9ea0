package httpapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"forumstats.local/shared/testutil/doctest"
)

// tableAnswers is every answer of the error table as "status code", sorted.
func tableAnswers() []string {
	var out []string
	add := func(s errorSpec) { out = append(out, fmt.Sprintf("%d %s", s.status, s.code)) }
	for _, e := range errorTable {
		add(e.errorSpec)
	}
	for _, s := range statusTable {
		add(s)
	}
	add(specInternal)
	slices.Sort(out)
	return slices.Compact(out)
}

// TestErrorTableCodesOnce: a code names one answer, so a client can act on the code alone.
func TestErrorTableCodesOnce(t *testing.T) {
	if n, m := len(tableAnswers()), len(allCodes()); n != m {
		t.Fatalf("%d answers for %d codes: a code with two statuses in %v", n, m, tableAnswers())
	}
	seen := map[int]bool{}
	for _, s := range statusTable {
		if seen[s.status] {
			t.Errorf("status %d twice in statusTable", s.status)
		}
		seen[s.status] = true
	}
}

// documentedAnswers is every "status code" the OpenAPI document gives an operation: the enum of
// the error property of each of its responses.
func documentedAnswers(t *testing.T) []string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	responses := doc["components"].(map[string]any)["responses"].(map[string]any)
	found := map[string]bool{}
	for _, item := range doc["paths"].(map[string]any) {
		for _, op := range item.(map[string]any) {
			op, ok := op.(map[string]any)
			if !ok {
				continue
			}
			for status, r := range op["responses"].(map[string]any) {
				resp := r.(map[string]any)
				if ref, ok := resp["$ref"].(string); ok {
					resp = responses[strings.TrimPrefix(ref, "#/components/responses/")].(map[string]any)
				}
				content, _ := resp["content"].(map[string]any)
				media, _ := content["application/json"].(map[string]any)
				schema, _ := media["schema"].(map[string]any)
				props, _ := schema["properties"].(map[string]any)
				prop, _ := props["error"].(map[string]any)
				enum, _ := prop["enum"].([]any)
				for _, c := range enum {
					found[status+" "+c.(string)] = true
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(found))
}

// TestOpenAPIErrorsMatchTable: the error enums of the OpenAPI document's responses hold exactly
// the table's answers, each code under the status the table gives it.
func TestOpenAPIErrorsMatchTable(t *testing.T) {
	doctest.Diff(t, "openapi.json", documentedAnswers(t), tableAnswers())
}

// TestREADMEErrorsMatchTable: the error list of stats-svc/README.md (section "Errors") holds
// exactly the table's answers, and the repository's README names every code in its stats-svc
// part.
func TestREADMEErrorsMatchTable(t *testing.T) {
	listed := doctest.ErrorRows(doctest.Section(t, "../../README.md", "## Errors"))
	doctest.Diff(t, "stats-svc/README.md's error list", listed, tableAnswers())
	doctest.NamesEveryCode(t, "README.md's stats-svc part", doctest.Section(t, "../../../README.md", "### stats-svc"), allCodes())
}
