// Package openapitest validates a service's real answers against its OpenAPI document
// (kin-openapi's openapi3filter) and records which documented statuses they reached, so that a
// test can require every one of them to be reached.
package openapitest

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"forumstats.local/shared/openapigen"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Checker holds a loaded document, its router and the reached "METHOD path status" triples.
type Checker struct {
	Doc     *openapi3.T
	router  routers.Router
	reached map[string]bool
}

// New loads and validates the document; its servers are dropped so that any host matches (the
// test servers' ports change).
func New(t *testing.T, document []byte) *Checker {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(document)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document is not valid OpenAPI: %v", err)
	}
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &Checker{Doc: doc, router: router, reached: map[string]bool{}}
}

// Check validates one answer to req and records its status as reached; it returns the
// documented route. openapi3filter skips HEAD answers and 304s: a HEAD answer is validated as a
// GET of the same operation without its body, a 304 without a body (its headers are the
// caller's to check).
func (c *Checker) Check(t *testing.T, req *http.Request, status int, header http.Header, body []byte) *routers.Route {
	t.Helper()
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		t.Fatalf("%s %s: no documented route: %v", req.Method, req.URL, err)
	}
	vreq := req
	if req.Method == http.MethodHead {
		vreq = req.Clone(req.Context())
		vreq.Method = http.MethodGet
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true,
			ExcludeResponseBody: req.Method == http.MethodHead || status == http.StatusNotModified},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %.120s: %d %.200s: %v", req.Method, req.URL, status, body, err)
	}
	c.reached[strings.ToUpper(req.Method)+" "+route.Path+" "+strconv.Itoa(status)] = true
	return route
}

// Reached is how many method/path/status triples the answers reached.
func (c *Checker) Reached() int { return len(c.reached) }

// Unreached lists, sorted, the "METHOD path status" triples the document lists and no answer
// reached.
func (c *Checker) Unreached() []string {
	var missed []string
	for path, item := range c.Doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status := range op.Responses.Map() {
				if !c.reached[method+" "+path+" "+status] {
					missed = append(missed, method+" "+path+" "+status)
				}
			}
		}
	}
	sort.Strings(missed)
	return missed
}

// Generated fails t unless served, the document a service embeds and serves, is exactly what the
// YAML source at path expands to (shared/openapigen), so that the JSON is never edited by hand
// and the source never drifts from what clients receive.
func Generated(t testing.TB, path string, served []byte) {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := openapigen.Generate(src)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if !bytes.Equal(served, want) {
		t.Fatalf("the served document differs from %s: run go generate ./... and commit both", path)
	}
}
