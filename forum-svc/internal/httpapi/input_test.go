package httpapi_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/forum-svc/internal/httpapi"
)

// formOf is n fields name=value, urlencoded.
func formOf(n int, name, value string) string {
	return strings.TrimSuffix(strings.Repeat(name+"="+value+"&", n), "&")
}

// The largest valid write (a start naming the largest maxRecipients of recipients and the current
// user, with every other field) is served; one field more, in the body or the query string, is 400
// too_many_fields, however the form is sent; and recipient ids are bounded by the forum's own
// maxRecipients before they are read.
func TestFormFieldBound(t *testing.T) {
	e := newEnv(t, envOptions{})
	if err := e.gdb.Exec("UPDATE forum_options SET max_recipients = ?", conversation.MaxRecipientsLimit).Error; err != nil {
		t.Fatal(err)
	}
	if err := e.gdb.Exec("INSERT INTO users (user_id, username) SELECT g, 'u' || g FROM generate_series(6, ?) g",
		conversation.MaxRecipientsLimit+1).Error; err != nil {
		t.Fatal(err)
	}
	if httpapi.MaxFields != conversation.MaxRecipientsLimit+5 {
		t.Fatalf("MaxFields %d; want maxRecipients at its largest + the current user + 4 fields", httpapi.MaxFields)
	}
	var recipients []string
	for id := 2; id <= conversation.MaxRecipientsLimit+1; id++ {
		recipients = append(recipients, "recipient_ids[]="+strconv.Itoa(id))
	}
	largest := strings.Join(recipients, "&") + "&recipient_ids[]=1&title=All&message=Hello&conversation_open=1&open_invite=0"
	// The same in PHP's indexed encoding, last index first, indices far apart (nothing is
	// allocated by index), and in a mix of the three encodings.
	var indexed, mixed []string
	for i := conversation.MaxRecipientsLimit + 1; i >= 1; i-- {
		indexed = append(indexed, fmt.Sprintf("recipient_ids[%d]=%d", i*9_000_000_000_000_000%(1<<62), i))
		mixed = append(mixed, [...]string{"recipient_ids[]=", "recipient_ids=", fmt.Sprintf("recipient_ids[%d]=", i)}[i%3]+strconv.Itoa(i))
	}
	rest := "&title=All&message=Hello&conversation_open=1&open_invite=0"
	largestIndexed, largestMixed := strings.Join(indexed, "&")+rest, strings.Join(mixed, "&")+rest
	var hugeIndices strings.Builder
	for i := range 20_000 {
		fmt.Fprintf(&hugeIndices, "recipient_ids[%d]=2&", 9_000_000_000_000_000_000-i)
	}
	tooMany := map[string]any{"max": httpapi.MaxFields}
	multipartOf := func(n int) (string, string) {
		var kv []string
		for i := range n {
			kv = append(kv, "f"+strconv.Itoa(i), "v")
		}
		return multipartBody(t, kv...)
	}
	for _, tt := range []struct {
		name, target, contentType, body string
		status                          int
		code                            string
		params                          map[string]any
	}{
		{"a field more than the largest start", "/api/conversations", "application/x-www-form-urlencoded", largest + "&x=1", 400, "too_many_fields", tooMany},
		{"the largest start with a query field", "/api/conversations?x=1", "application/x-www-form-urlencoded", largest, 400, "too_many_fields", tooMany},
		{"the largest start, indexed", "/api/conversations", "application/x-www-form-urlencoded", largestIndexed, 200, "", nil},
		{"the largest start, three encodings", "/api/conversations", "application/x-www-form-urlencoded", largestMixed, 200, "", nil},
		{"a field more than the largest start, indexed", "/api/conversations", "application/x-www-form-urlencoded", largestIndexed + "&recipient_ids[0]=1", 400, "too_many_fields", tooMany},
		{"20,000 huge indices", "/api/conversations", "application/x-www-form-urlencoded", hugeIndices.String() + "title=t&message=m", 400, "too_many_fields", tooMany},
		{"110,000 fields", "/api/conversations/10/mark-unread", "application/x-www-form-urlencoded", formOf(110_000, "a", "1"), 400, "too_many_fields", tooMany},
		{"58,000 copies of one recipient", "/api/conversations", "application/x-www-form-urlencoded", formOf(58_000, "recipient_ids[]", "2"), 400, "too_many_fields", tooMany},
		{"MaxFields+1 fields in the query string", "/api/conversations/10/star?" + formOf(httpapi.MaxFields+1, "z", ""), "", "", 400, "too_many_fields", tooMany},
		{"MaxFields fields in the query string", "/api/conversations/10/mark-unread?" + formOf(httpapi.MaxFields, "z", ""), "", "", 200, "", nil},
		{"empty pairs are no fields", "/api/conversations/10/mark-unread", "application/x-www-form-urlencoded", strings.Repeat("&", 100_000) + "x=1", 200, "", nil},
		// The recipients bound is the forum's: maxRecipients + 1 values (the current user may be
		// one of them), whatever they hold.
		{"maxRecipients+2 copies of one recipient", "/api/conversations", "application/x-www-form-urlencoded",
			formOf(conversation.MaxRecipientsLimit+2, "recipient_ids[]", "2") + "&title=t&message=m", 400, "too_many_recipients", map[string]any{"max": conversation.MaxRecipientsLimit}},
		{"maxRecipients+1 copies of one recipient", "/api/conversations", "application/x-www-form-urlencoded",
			formOf(conversation.MaxRecipientsLimit+1, "recipient_ids[]", "2") + "&title=t&message=m", 200, "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := e.raw("POST", tt.target, tt.contentType, tt.body, key(keyAlice))
			if tt.status == 200 {
				if r.status != 200 {
					t.Fatalf("%d %.300s", r.status, r.body)
				}
				return
			}
			wantError(t, r, tt.status, tt.code, tt.params)
		})
	}
	t.Run("multipart", func(t *testing.T) {
		ct, body := multipartOf(httpapi.MaxFields + 1)
		wantError(t, e.raw("POST", "/api/conversations/10/mark-unread", ct, body, key(keyAlice)), 400, "too_many_fields", tooMany)
		ct, body = multipartOf(httpapi.MaxFields)
		if r := e.raw("POST", "/api/conversations/10/mark-unread", ct, body, key(keyAlice)); r.status != 200 {
			t.Fatalf("MaxFields parts: %d %s", r.status, r.body)
		}
	})
	t.Run("the largest start", func(t *testing.T) {
		r := e.raw("POST", "/api/conversations", "application/x-www-form-urlencoded", largest, key(keyAlice))
		if r.status != 200 || num(t, r.json(t), "conversation", "recipient_count") != conversation.MaxRecipientsLimit {
			t.Fatalf("%d %.300s", r.status, r.body)
		}
	})
}

// Every write reads its fields from the body and the query string: a field the body names takes
// the body's values, one it lacks the query string's.
func TestWriteFieldsFromBodyOrQuery(t *testing.T) {
	e := newEnv(t, envOptions{})
	star := func(target, body string) response {
		t.Helper()
		return e.raw("POST", target, "application/x-www-form-urlencoded", body, key(keyAlice))
	}
	for _, tt := range []struct {
		name, target, body string
		want               string
	}{
		{"star=1 in the query sets the star", "/api/conversations/10/star?star=1", "", `{"success": true, "is_starred": true}`},
		{"and again: set, not toggled", "/api/conversations/10/star?star=1", "", `{"success": true, "is_starred": true}`},
		{"star=0 in the query", "/api/conversations/10/star?star=0", "", `{"success": true, "is_starred": false}`},
		{"star=1 in the body", "/api/conversations/10/star", "star=1", `{"success": true, "is_starred": true}`},
		{"the body's field over the query's", "/api/conversations/10/star?star=1", "star=0", `{"success": true, "is_starred": false}`},
		{"a reply from the query string", "/api/conversation-messages?conversation_id=12&message=from%20the%20query", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := star(tt.target, tt.body)
			if tt.want == "" {
				if r.status != 200 || !strings.Contains(string(r.body), `"message":"from the query"`) {
					t.Fatalf("%d %s", r.status, r.body)
				}
				return
			}
			wantJSON(t, r, tt.want)
		})
	}
	// DELETE: the body's ignore=0 over the query's ignore=1 (sent twice, it would be malformed).
	if r := e.raw("DELETE", "/api/conversations/12?ignore=1", "application/x-www-form-urlencoded", "ignore=0", key(keyAlice)); r.status != 200 {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	var state int
	e.gdb.Raw("SELECT left_state FROM conversation_participants WHERE conversation_id = 12 AND user_id = 1").Scan(&state)
	if state != 1 {
		t.Fatalf("left_state %d; want 1 (left, not ignoring: the body's ignore=0)", state)
	}
}

// The body limit is exactly BodyLimit bytes, 1 MiB: a body of that size is read, one byte more is
// 413, whether its length is declared or not.
func TestBodyLimitBoundary(t *testing.T) {
	e := newEnv(t, envOptions{})
	if httpapi.BodyLimit != 1<<20 {
		t.Fatalf("BodyLimit %d; the README says 1 MiB", httpapi.BodyLimit)
	}
	body := func(n int) string {
		prefix := "date=1&pad="
		return prefix + strings.Repeat("x", n-len(prefix))
	}
	for _, chunked := range []bool{false, true} {
		for _, tt := range []struct {
			size   int
			status int
		}{{httpapi.BodyLimit, 200}, {httpapi.BodyLimit + 1, 413}} {
			t.Run(fmt.Sprintf("%d bytes, chunked %v", tt.size, chunked), func(t *testing.T) {
				r := request("POST", "/api/conversations/10/mark-read", "application/x-www-form-urlencoded", body(tt.size), key(keyAlice))
				if chunked {
					r.ContentLength = -1
					r.TransferEncoding = []string{"chunked"}
				}
				res := e.serve(r)
				if tt.status == 413 {
					wantError(t, res, 413, "request_entity_too_large", nil)
				} else if res.status != 200 {
					t.Fatalf("%d %s", res.status, res.body)
				}
			})
		}
	}
}

// Every answer says no-store and nosniff: successes, errors of every kind, probes, the document.
func TestProtectiveHeaders(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, tt := range []struct {
		method, target string
		headers        []string
		status         int
	}{
		{"GET", "/api/conversations/10", []string{key(keyAlice)}, 200},
		{"HEAD", "/api/conversations/10/messages", []string{key(keyAlice)}, 200},
		{"POST", "/api/conversations/10/star", []string{key(keyAlice)}, 200},
		{"GET", "/api/conversations/10", nil, 400},
		{"GET", "/api/conversations/10", []string{key("no-such-key-0123456789abcdef0123456")}, 401},
		{"GET", "/api/conversations/13", []string{key(keyAlice)}, 404},
		{"GET", "/nowhere", nil, 404},
		{"PUT", "/api/conversations/10", nil, 405},
		{"GET", "/api/conversations/10/messages?page=0", []string{key(keyAlice)}, 400},
		{"GET", "/healthz", nil, 200},
		{"GET", "/readyz", nil, 200},
		{"GET", "/metrics", nil, 200},
		{"GET", "/api/openapi.json", nil, 200},
	} {
		t.Run(tt.method+" "+tt.target, func(t *testing.T) {
			r := e.raw(tt.method, tt.target, "", "", tt.headers...)
			if r.status != tt.status {
				t.Fatalf("status %d; want %d", r.status, tt.status)
			}
			if got := r.header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control %q; want no-store", got)
			}
			if got := r.header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options %q; want nosniff", got)
			}
		})
	}
	big := request("POST", "/api/conversations/10/mark-read", "application/x-www-form-urlencoded", strings.Repeat("x", httpapi.BodyLimit+1), key(keyAlice))
	if r := e.serve(big); r.status != http.StatusRequestEntityTooLarge || r.header.Get("Cache-Control") != "no-store" || r.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("413: %d %v", r.status, r.header)
	}
}
