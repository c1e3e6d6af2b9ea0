package httpapi_test

import (
	"testing"

	"forumstats.local/forum-svc/internal/httpapi"
	"forumstats.local/shared/testutil/openapitest"
)

// The served document is what its YAML source expands to.
func TestOpenAPIGenerated(t *testing.T) {
	openapitest.Generated(t, "openapi/openapi.yaml", httpapi.OpenAPI())
}
