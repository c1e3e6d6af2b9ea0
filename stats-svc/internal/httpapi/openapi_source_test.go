package httpapi_test

import (
	"testing"

	"forumstats.local/shared/testutil/openapitest"
	"forumstats.local/stats-svc/internal/httpapi"
)

// The served document is what its YAML source expands to.
func TestOpenAPIGenerated(t *testing.T) {
	openapitest.Generated(t, "openapi/openapi.yaml", httpapi.OpenAPI())
}
