package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"forumstats.local/forum-svc/internal/httpapi"
	"forumstats.local/forum-svc/internal/ratelimit"
	"forumstats.local/shared/db"
)

// Real answers, for requests that reach the statuses each documented operation lists, validate
// against the document with kin-openapi's openapi3filter.
func TestAnswersMatchOpenAPI(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(httpapi.OpenAPI())
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
	e := newEnv(t, envOptions{})
	limited := newEnv(t, envOptions{rateLimit: ratelimit.Config{PerMinute: 1, Burst: 1}})
	// A service whose database is closed: every read of the store fails (500 in the envelope)
	// and the readiness check answers 503.
	broken := newEnv(t, envOptions{})
	db.Close(broken.gdb)
	reached := map[string]bool{}
	send := func(env *env, method, path, query string, form url.Values, headers ...string) {
		t.Helper()
		target := path
		if query != "" {
			target += "?" + query
		}
		r := env.req(method, target, form, headers...)
		req := httptest.NewRequest(method, target, nil)
		route, params, err := router.FindRoute(req)
		if err != nil {
			t.Fatalf("%s %s: no documented route: %v", method, path, err)
		}
		vreq := req
		if method == http.MethodHead {
			vreq = req.Clone(req.Context())
			vreq.Method = http.MethodGet // openapi3filter skips HEAD: validate its headers as GET's
		}
		in := &openapi3filter.ResponseValidationInput{
			RequestValidationInput: &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route},
			Status:                 r.status,
			Header:                 r.header,
			Options:                &openapi3filter.Options{IncludeResponseStatus: true, ExcludeResponseBody: method == http.MethodHead},
		}
		in.SetBodyBytes(r.body)
		if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
			t.Errorf("%s %s: %d %.200s: %v", method, target, r.status, r.body, err)
		}
		reached[strings.ToUpper(method)+" "+route.Path+" "+strconv.Itoa(r.status)] = true
	}
	long := "x=" + strings.Repeat("y", 20<<10)
	big := "X-Big: " + strings.Repeat("z", 40<<10)
	for path, item := range doc.Paths.Map() {
		concrete := strings.ReplaceAll(path, "{id}", "10")
		if strings.HasPrefix(path, "/api/conversation-messages/") {
			concrete = strings.ReplaceAll(path, "{id}", "1001")
		}
		missing := strings.ReplaceAll(path, "{id}", "999999")
		for method := range item.Operations() {
			var form url.Values
			if method == http.MethodPost {
				form = url.Values{}
			}
			send(e, method, concrete, "", form, key(keyAlice))
			send(e, method, concrete, long, form, key(keyAlice))
			send(e, method, concrete, "", form, key(keyAlice), big)
			// The body limit answers before the route's own checks, whatever the method: GET and
			// HEAD too, on their declared Content-Length.
			send(e, method, concrete, "", url.Values{"date": {strings.Repeat("9", 70<<10)}}, key(keyAlice))
			send(broken, method, concrete, "", form, key(keyAlice)) // 500, and 503 on /readyz
			if !strings.Contains(path, "{id}") {
				continue
			}
			send(e, method, concrete, "", form)                                          // no key: 400
			send(e, method, concrete, "", form, key("no-such-key-0123456789abcdef0123")) // 401
			send(e, method, concrete, "", form, key(keyInactive))                        // 403
			send(e, method, missing, "", form, key(keyAlice))                            // 404
			send(e, method, concrete, "page=0", form, key(keyAlice))                     // 400 invalid_page
			for range 3 {
				send(limited, method, concrete, "", form, key(keyBob)) // 429 after the burst
			}
		}
	}
	var missed []string
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status := range op.Responses.Map() {
				if !reached[method+" "+path+" "+status] {
					missed = append(missed, method+" "+path+" "+status)
				}
			}
		}
	}
	sort.Strings(missed)
	if len(missed) > 0 {
		t.Errorf("documented but never reached: %s", strings.Join(missed, ", "))
	}
}
