package httpapi_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/labstack/echo/v4"

	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/forum-svc/internal/httpapi"
	"forumstats.local/shared/db"
	"forumstats.local/shared/ratelimit"
	"forumstats.local/shared/testutil/openapitest"
)

// The stream's answer is text, its events checked by the stream's own tests.
func init() { openapi3filter.RegisterBodyDecoder("text/event-stream", openapi3filter.PlainBodyDecoder) }

// Real answers, for requests that reach the statuses each documented operation lists, validate
// against the document with kin-openapi's openapi3filter.
func TestAnswersMatchOpenAPI(t *testing.T) {
	c := openapitest.New(t, httpapi.OpenAPI())
	e := newEnv(t, envOptions{})
	limited := newEnv(t, envOptions{rateLimit: ratelimit.Config{PerMinute: 1, Burst: 1}})
	// A service whose database is closed: every read of the store fails (500 in the envelope)
	// and the readiness check answers 503.
	broken := newEnv(t, envOptions{})
	db.Close(broken.gdb)
	validate := func(method, target string, r response) {
		t.Helper()
		c.Check(t, httptest.NewRequest(method, target, nil), r.status, r.header, r.body)
	}
	send := func(env *env, method, path, query string, form url.Values, headers ...string) {
		t.Helper()
		target := path
		if query != "" {
			target += "?" + query
		}
		validate(method, target, env.req(method, target, form, headers...))
	}
	// sendBody sends a body of any type.
	sendBody := func(method, target, contentType, body string, headers ...string) {
		t.Helper()
		validate(method, target, e.raw(method, target, contentType, body, headers...))
	}
	long := "x=" + strings.Repeat("y", 20<<10)
	big := "X-Big: " + strings.Repeat("z", 40<<10)
	// idFor is the object of a path's requests: alice's conversation 10 or message 1001; leaving
	// succeeds once per conversation, so each form of that path leaves its own (12, 11).
	idFor := func(path, method string) string {
		switch {
		case strings.HasPrefix(path, "/api/conversation-messages/"):
			return "1001"
		case method == http.MethodDelete && path == "/api/conversations/{id}":
			return "12"
		case method == http.MethodDelete && path == "/api/conversations/{id}/":
			return "11"
		}
		return "10"
	}
	for path, item := range c.Doc.Paths.Map() {
		missing := strings.ReplaceAll(path, "{id}", "999999")
		for method := range item.Operations() {
			concrete := strings.ReplaceAll(path, "{id}", idFor(path, method))
			var form url.Values
			if method == http.MethodPost {
				form = url.Values{}
			}
			send(e, method, concrete, "", form, key(keyAlice))
			send(e, method, concrete, long, form, key(keyAlice))
			send(e, method, concrete, "", form, key(keyAlice), big)
			// The body limit answers before the route's own checks, whatever the method: GET and
			// HEAD too, on their declared Content-Length.
			send(e, method, concrete, "", url.Values{"date": {strings.Repeat("9", 1<<20)}}, key(keyAlice))
			send(broken, method, concrete, "", form, key(keyAlice)) // 500, and 503 on /readyz
			if !strings.HasPrefix(path, "/api/") || strings.HasPrefix(path, "/api/openapi.json") {
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
	// The conversations API's answers the sweep above does not reach.
	e.gdb.Exec("INSERT INTO idempotency_keys VALUES (?, 1, 'busy', 'x', ?, 0, '')", auth.Hash(keyAlice), now)
	for _, slash := range []string{"", "/"} {
		retried := func(p, valid string) {
			sendBody("POST", p+slash, "application/json", `{}`, key(keyAlice))                                                      // 415
			sendBody("POST", p+slash, echo.MIMEApplicationForm, valid, key(keyAlice), "Idempotency-Key: busy")                      // 409
			sendBody("POST", p+slash, echo.MIMEApplicationForm, valid, key(keyAlice), "Idempotency-Key: "+strings.Repeat("k", 256)) // 400
		}
		start := "recipient_ids[]=2&title=t&message=m" + slash
		sendBody("POST", "/api/conversations"+slash, echo.MIMEApplicationForm, start, key(keyAlice), "Idempotency-Key: s"+slash)     // 200
		sendBody("POST", "/api/conversations"+slash, echo.MIMEApplicationForm, start+"!", key(keyAlice), "Idempotency-Key: s"+slash) // 422
		retried("/api/conversations", start)
		reply := "conversation_id=10&message=m" + slash
		sendBody("POST", "/api/conversation-messages"+slash, echo.MIMEApplicationForm, reply, key(keyAlice), "Idempotency-Key: r"+slash)     // 200
		sendBody("POST", "/api/conversation-messages"+slash, echo.MIMEApplicationForm, reply+"!", key(keyAlice), "Idempotency-Key: r"+slash) // 422
		sendBody("POST", "/api/conversation-messages"+slash, echo.MIMEApplicationForm, "conversation_id=999999&message=m", key(keyAlice))    // 404
		retried("/api/conversation-messages", reply)
		sendBody("POST", "/api/conversation-messages/1001"+slash, echo.MIMEApplicationForm, "message=edited", key(keyAlice))     // 200
		sendBody("POST", "/api/conversations/10/invite"+slash, echo.MIMEApplicationForm, "recipient_ids[]=4", key(keyAlice))     // 200
		sendBody("POST", "/api/conversation-messages/999999"+slash, echo.MIMEApplicationForm, "message=edited", key(keyAlice))   // 404
		sendBody("POST", "/api/conversations/999999/invite"+slash, echo.MIMEApplicationForm, "recipient_ids[]=4", key(keyAlice)) // 404
		for _, p := range []string{"/api/conversations/10", "/api/conversations/10/mark-read", "/api/conversations/10/mark-unread",
			"/api/conversations/10/invite", "/api/conversations/10/star", "/api/conversation-messages/1001"} {
			sendBody("POST", p+slash, "application/json", `{"date": 1767225600}`, key(keyAlice)) // 415
		}
		sendBody("DELETE", "/api/conversations/10"+slash, "application/json", `{}`, key(keyAlice)) // 415
		react := "/api/conversation-messages/1003/react" + slash
		sendBody("POST", react, echo.MIMEApplicationForm, "reaction_id=1", key(keyAlice), "Idempotency-Key: x"+slash)               // 200 insert
		sendBody("POST", react, echo.MIMEApplicationForm, "reaction_id=2", key(keyAlice), "Idempotency-Key: x"+slash)               // 422
		sendBody("POST", react, echo.MIMEApplicationForm, "reaction_id=1", key(keyAlice))                                           // 200 delete
		sendBody("POST", react, echo.MIMEApplicationForm, "reaction_id=1", key(keyAlice), "Idempotency-Key: busy")                  // 409
		sendBody("POST", react, echo.MIMEApplicationForm, "reaction_id=7", key(keyAlice))                                           // 400
		sendBody("POST", react, "application/json", `{"reaction_id": 1}`, key(keyAlice))                                            // 415
		sendBody("POST", "/api/conversation-messages/1001/react"+slash, echo.MIMEApplicationForm, "reaction_id=1", key(keyAlice))   // 403
		sendBody("POST", "/api/conversation-messages/999999/react"+slash, echo.MIMEApplicationForm, "reaction_id=1", key(keyAlice)) // 404
		for _, q := range []string{"with_messages=1", "with_messages=1&page=2", "with_messages=0&page=1", "with_messages=maybe", "with_messages=1&page=9"} {
			send(e, "GET", "/api/conversations/10"+slash, q, nil, key(keyAlice))
		}
	}
	// The event stream's answers the sweep above does not reach (its 200 ends at once: the
	// recorder cannot take a write deadline, which the stream sets before each write).
	for _, slash := range []string{"", "/"} {
		sendBody("POST", "/api/events/ticket"+slash, "application/json", `{}`, key(keyAlice)) // 415
		send(e, "GET", "/api/events"+slash, "last_event_id=x", nil, key(keyAlice))            // 400
	}
	// The attachments API, with a key of its scopes.
	attachmentKeys(t, e)
	for _, slash := range []string{"", "/"} {
		p := "/api/attachments" + slash
		validate("POST", "/api/attachments/new-key"+slash, e.upload("/api/attachments/new-key"+slash, attAlice,
			[][2]string{{"type", "conversation_message"}, {"context[conversation_id]", "999999"}}, "", nil)) // 404
		sendBody("POST", "/api/attachments/new-key"+slash, "application/json", `{}`, key(attAlice)) // 415
		sendBody("POST", p, "application/json", `{}`, key(attAlice))                                // 415
		nk := e.upload("/api/attachments/new-key"+slash, attAlice, [][2]string{{"type", "conversation_message"}}, "a.png",
			bytes.NewReader(pngOf(t, 20, 10)))
		validate("POST", "/api/attachments/new-key"+slash, nk) // 200
		k := nk.json(t)["key"].(string)
		up := e.upload(p, attAlice, [][2]string{{"key", k}}, "b.txt", strings.NewReader("hello"))
		validate("POST", p, up) // 200
		for _, m := range []string{"GET", "HEAD"} {
			send(e, m, p, "key="+k, nil, key(attAlice)) // 200
		}
		img := fmt.Sprint(attachmentID(t, nk))
		txt := fmt.Sprint(attachmentID(t, up))
		for _, m := range []string{"GET", "HEAD"} {
			send(e, m, "/api/attachments/"+img+slash, "", nil, key(attAlice))                                 // 200
			send(e, m, "/api/attachments/999999"+slash, "", nil, key(attAlice))                               // 404
			send(e, m, "/api/attachments/"+img+"/data"+slash, "", nil, key(attAlice))                         // 200
			send(e, m, "/api/attachments/999999/data"+slash, "", nil, key(attAlice))                          // 404
			send(e, m, "/api/attachments/"+img+"/data"+slash, "", nil, key(attAlice), "Range: bytes=0-3")     // 206
			send(e, m, "/api/attachments/"+img+"/data"+slash, "", nil, key(attAlice), "Range: bytes=999999-") // 416
			etag := e.get("/api/attachments/"+img+"/data", key(attAlice)).header.Get("ETag")
			send(e, m, "/api/attachments/"+img+"/data"+slash, "", nil, key(attAlice), "If-None-Match: "+etag) // 304
			send(e, m, "/api/attachments/"+img+"/thumbnail"+slash, "", nil, key(attAlice))                    // 200
			send(e, m, "/api/attachments/"+txt+"/thumbnail"+slash, "", nil, key(attAlice))                    // 404
		}
		send(e, "DELETE", "/api/attachments/"+txt+slash, "", nil, key(attAlice))   // 200
		send(e, "DELETE", "/api/attachments/999999"+slash, "", nil, key(attAlice)) // 404
	}
	if missed := c.Unreached(); len(missed) > 0 {
		t.Errorf("documented but never reached: %s", strings.Join(missed, ", "))
	}
}
