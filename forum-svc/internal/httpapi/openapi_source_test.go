package httpapi_test

import (
	"bytes"
	"os"
	"testing"

	"forumstats.local/forum-svc/internal/httpapi"
	"forumstats.local/shared/openapigen"
)

// TestOpenAPIGenerated: the served document is exactly what its YAML source expands to, so the
// JSON is never edited by hand and the source never drifts from what clients receive.
func TestOpenAPIGenerated(t *testing.T) {
	src, err := os.ReadFile("openapi/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want, err := openapigen.Generate(src)
	if err != nil {
		t.Fatalf("openapi/openapi.yaml: %v", err)
	}
	if !bytes.Equal(httpapi.OpenAPI(), want) {
		t.Fatal("openapi.json differs from openapi/openapi.yaml: run go generate ./... and commit both")
	}
}
