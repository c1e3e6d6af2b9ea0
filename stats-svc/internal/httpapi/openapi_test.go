package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"forumstats.local/shared/db"
	"forumstats.local/shared/testutil/openapitest"
	"forumstats.local/stats-svc/internal/httpapi"
)

// The document served is the embedded one, with the conditional-GET headers.
func TestOpenAPIServed(t *testing.T) {
	s := newStack(t, pgDB(t), stackOptions{})
	r := do(t, "GET", s.url+"/api/openapi.json")
	if r.status != 200 || r.body != string(httpapi.OpenAPI()) || r.header.Get("ETag") == "" || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/openapi.json: %d %q", r.status, r.header)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(r.body), &v); err != nil || v["openapi"] != "3.1.0" {
		t.Fatalf("document: %v %v", err, v["openapi"])
	}
}

// Real answers of every documented operation, for requests that reach every status each one
// documents, validate against the document (kin-openapi's openapi3filter, OpenAPI 3.1).
func TestAnswersMatchOpenAPI(t *testing.T) {
	c := openapitest.New(t, httpapi.OpenAPI())
	doc := c.Doc
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi %s, want 3.1", doc.OpenAPI)
	}
	good := newStack(t, pgDB(t), stackOptions{redis: newRedis(t, "")})
	broken, err := db.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "empty.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(broken) })
	bad := newStack(t, broken, stackOptions{direct: true})

	valid := map[string]string{
		statsPath:  "period=week&date=2026-11-20",
		iconsPath:  "",
		seriesPath: "from=2026-11-05&to=2026-11-20",
	}
	check := func(base, method, path, query string, header map[string]string, body ...byte) {
		t.Helper()
		target := base + path
		if query != "" {
			target += "?" + query
		}
		req, res, err := send(method, target, header, body)
		if err != nil {
			t.Fatal(err)
		}
		answer := []byte(res.body)
		route := c.Check(t, req, res.status, res.header, answer)
		if res.status == http.StatusNotModified {
			check304(t, route.Operation, res.header, answer)
		}
	}
	// The body limit (1 MiB) refuses a declared Content-Length over it before routing, whatever
	// the method.
	big := bytes.Repeat([]byte("b"), 1<<20+1)
	for path := range doc.Paths.Map() {
		base := strings.TrimSuffix(path, "/")
		q, isAPI := valid[base]
		for _, method := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
			check(good.url, method, path, q, nil, big...)
		}
		for _, method := range []string{"GET", "HEAD"} {
			check(good.url, method, path, q, nil)
			check(good.url, method, path, q, map[string]string{"If-None-Match": "*"})
			check(good.url, method, path, q+"&x="+strings.Repeat("y", 20<<10), nil)
			check(good.url, method, path, q, map[string]string{"X-Big": strings.Repeat("z", 40<<10)})
			if isAPI {
				check(good.url, method, path, q+"&server=x", nil)
				check(good.url, method, path, q+"&server=4", nil)
				check(bad.url, method, path, q, nil)
			}
		}
		for _, method := range []string{"POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
			check(good.url, method, path, q, nil)
			check(good.url, method, path, q+"&x="+strings.Repeat("y", 20<<10), nil)
			check(good.url, method, path, q, map[string]string{"X-Big": strings.Repeat("z", 40<<10)})
		}
	}
	// Every status every operation documents was reached.
	if missed := c.Unreached(); len(missed) > 0 {
		t.Fatalf("documented but never reached: %s", strings.Join(missed, ", "))
	}
	if c.Reached() < 100 {
		t.Fatalf("only %d method/path/status combinations reached", c.Reached())
	}
}

// check304 validates a 304 answer: documented, no body, every documented header present and
// valid against its schema.
func check304(t *testing.T, op *openapi3.Operation, h http.Header, body []byte) {
	t.Helper()
	ref := op.Responses.Status(http.StatusNotModified)
	if ref == nil || len(body) != 0 {
		t.Errorf("%s: 304 undocumented or with a body (%d bytes)", op.OperationID, len(body))
		return
	}
	for name, hr := range ref.Value.Headers {
		v := h.Get(name)
		if v == "" {
			t.Errorf("%s: 304 without %s", op.OperationID, name)
			continue
		}
		if err := hr.Value.Schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("%s: 304 %s %q: %v", op.OperationID, name, v, err)
		}
	}
}
