package httpapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/shared/ratelimit"
)

// conv10 is conversation 10 as alice (who has read nothing) sees it.
var conv10 = fmt.Sprintf(`{"conversation_id": 10, "title": "Ten", "user_id": 1, "username": "alice",
  "start_date": %d, "reply_count": 9, "recipient_count": 2,
  "recipients": {"2": "bob", "3": "carol"},
  "first_message_id": 1001, "last_message_id": 1010, "last_message_date": %d, "last_message_user_id": 1,
  "is_unread": true, "is_starred": false, "conversation_open": true, "open_invite": false,
  "can_edit": true, "can_reply": true, "can_invite": true, "can_upload_attachment": false,
  "Starter": {"user_id": 1, "username": "alice"}}`, t0, t0+900)

func TestEveryFieldOfEveryResponse(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		wantJSON(t, e.get("/api/conversations/10/", key(keyAlice)), `{"conversation": `+conv10+`}`)

		wantJSON(t, e.get("/api/conversation-messages/1003/", key(keyAlice)), fmt.Sprintf(`{"message": {
		  "message_id": 1003, "conversation_id": 10, "message": "m1003", "message_parsed": "m1003", "message_date": %d,
		  "user_id": 3, "username": "carol", "is_unread": true, "can_edit": false, "can_react": true,
		  "attach_count": 0, "reaction_score": 0, "is_reacted_to": false, "User": {"user_id": 3, "username": "carol"},
		  "Conversation": %s}}`, t0+300, conv10))

		wantJSON(t, e.get("/api/conversations/10/messages?page=2", key(keyBob)), fmt.Sprintf(`{
		  "messages": [
		    {"message_id": 1004, "conversation_id": 10, "message": "m1004", "message_parsed": "m1004", "message_date": %d, "user_id": 1, "username": "alice", "is_unread": false,
		     "can_edit": false, "can_react": true, "attach_count": 0, "reaction_score": 0, "is_reacted_to": false, "User": {"user_id": 1, "username": "alice"}},
		    {"message_id": 1005, "conversation_id": 10, "message": "m1005", "message_parsed": "m1005", "message_date": %d, "user_id": 2, "username": "bob", "is_unread": false,
		     "can_edit": true, "can_react": false, "attach_count": 0, "reaction_score": 0, "is_reacted_to": false, "User": {"user_id": 2, "username": "bob"}},
		    {"message_id": 1006, "conversation_id": 10, "message": "m1006", "message_parsed": "m1006", "message_date": %d, "user_id": 3, "username": "carol", "is_unread": true,
		     "can_edit": false, "can_react": true, "attach_count": 0, "reaction_score": 0, "is_reacted_to": false, "User": {"user_id": 3, "username": "carol"}},
		    {"message_id": 1008, "conversation_id": 10, "message": "m1008", "message_parsed": "m1008", "message_date": %d, "user_id": 2, "username": "bob", "is_unread": true,
		     "can_edit": true, "can_react": false, "attach_count": 0, "reaction_score": 0, "is_reacted_to": false, "User": {"user_id": 2, "username": "bob"}},
		    {"message_id": 1010, "conversation_id": 10, "message": "m1010", "message_parsed": "m1010", "message_date": %d, "user_id": 1, "username": "alice", "is_unread": true,
		     "can_edit": false, "can_react": true, "attach_count": 0, "reaction_score": 0, "is_reacted_to": false, "User": {"user_id": 1, "username": "alice"}}],
		  "pagination": {"current_page": 2, "last_page": 2, "per_page": 5, "shown": 5, "total": 10}}`,
			t0+400, t0+500, t0+600, t0+800, t0+900))

		wantJSON(t, e.post("/api/conversations/10/mark-unread", url.Values{}, key(keyAlice)), `{"success": true}`)
		wantJSON(t, e.post("/api/conversations/10/mark-read", url.Values{}, key(keyAlice)), `{"success": true}`)
	})
}

func TestOrderingTiesOnMessageDate(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		var all []int64
		for page := 1; page <= 2; page++ {
			all = append(all, messageIDs(t, e.get(fmt.Sprintf("/api/conversations/10/messages?page=%d", page), key(keyAlice)))...)
		}
		want := []int64{1001, 1009, 1002, 1003, 1007, 1004, 1005, 1006, 1008, 1010} // 1003 and 1007 share a date
		if !slices.Equal(all, want) {
			t.Fatalf("order %v; want %v", all, want)
		}
	})
}

func TestPaginationEdges(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		type pg struct{ cur, last, shown, total int64 }
		check := func(path string, want pg, ids []int64) {
			t.Helper()
			r := e.get(path, key(keyAlice))
			m := r.json(t)
			p := m["pagination"].(map[string]any)
			got := pg{}
			for name, dst := range map[string]*int64{"current_page": &got.cur, "last_page": &got.last, "shown": &got.shown, "total": &got.total} {
				v, err := strconv.ParseInt(fmt.Sprint(p[name]), 10, 64)
				if err != nil {
					t.Fatalf("%s: %s is not an integer: %v", path, name, p[name])
				}
				*dst = v
			}
			if got != want || fmt.Sprint(p["per_page"]) != "5" {
				t.Fatalf("%s: pagination %v; want %+v per_page 5", path, p, want)
			}
			if ids != nil && !slices.Equal(messageIDs(t, r), ids) {
				t.Fatalf("%s: ids %v; want %v", path, messageIDs(t, r), ids)
			}
		}
		// 10 messages, page size 5: exactly two full pages.
		check("/api/conversations/10/messages", pg{1, 2, 5, 10}, []int64{1001, 1009, 1002, 1003, 1007})
		check("/api/conversations/10/messages?page=2", pg{2, 2, 5, 10}, nil)
		wantError(t, e.get("/api/conversations/10/messages?page=3", key(keyAlice)), 400, "invalid_page", map[string]any{"max": 2})
		// 11 messages: one more, alone on page 3.
		check("/api/conversations/11/messages?page=2", pg{2, 3, 5, 11}, []int64{1106, 1107, 1108, 1109, 1110})
		check("/api/conversations/11/messages?page=3", pg{3, 3, 1, 11}, []int64{1111})
		wantError(t, e.get("/api/conversations/11/messages?page=4", key(keyAlice)), 400, "invalid_page", map[string]any{"max": 3})
		// 3 messages: a single page.
		check("/api/conversations/12/messages", pg{1, 1, 3, 3}, []int64{1201, 1202, 1203})
		check("/api/conversations/12/messages?page=1", pg{1, 1, 3, 3}, nil)
		check("/api/conversations/12/messages?page=0001", pg{1, 1, 3, 3}, nil)
		wantError(t, e.get("/api/conversations/12/messages?page=2", key(keyAlice)), 400, "invalid_page", map[string]any{"max": 1})
		// A page beyond int64 is past the last page too.
		wantError(t, e.get("/api/conversations/12/messages?page=99999999999999999999999", key(keyAlice)), 400, "invalid_page", map[string]any{"max": 1})
		wantError(t, e.get("/api/conversations/12/messages?page=9223372036854775807", key(keyAlice)), 400, "invalid_page", map[string]any{"max": 1})

		for _, bad := range []string{"0", "-1", "1.5", "abc", "", "%2B1", "1e2", "1&page=1"} {
			wantError(t, e.get("/api/conversations/12/messages?page="+bad, key(keyAlice)), 400, "invalid_page", nil)
		}
		// A malformed page is refused before the object is looked up (it does not depend on it).
		wantError(t, e.get("/api/conversations/13/messages?page=abc", key(keyAlice)), 400, "invalid_page", nil)
		// A page number out of range is only known once the conversation is: a stranger gets 404.
		wantError(t, e.get("/api/conversations/13/messages?page=99", key(keyAlice)), 404, "requested_conversation_not_found", nil)

		// The page size is the forum option, changed in the database, in force at once.
		if err := e.gdb.Exec("UPDATE forum_options SET messages_per_page = 4").Error; err != nil {
			t.Fatal(err)
		}
		r := e.get("/api/conversations/11/messages?page=3", key(keyAlice))
		if p := r.json(t)["pagination"].(map[string]any); fmt.Sprintf("%v %v %v", p["per_page"], p["last_page"], p["shown"]) != "4 3 3" {
			t.Fatalf("after messagesPerPage=4: %v", p)
		}
		// No request can choose the page size.
		r = e.get("/api/conversations/11/messages?per_page=50&limit=50", key(keyAlice))
		if got := len(messageIDs(t, r)); got != 4 {
			t.Fatalf("per_page in the query changed the page size: %d messages", got)
		}
	})
}

func TestReadStateTransitions(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		unread := func(r response) []bool {
			t.Helper()
			var out []bool
			for _, m := range r.json(t)["messages"].([]any) {
				out = append(out, m.(map[string]any)["is_unread"].(bool))
			}
			return out
		}
		convUnread := func() bool {
			return e.get("/api/conversations/10", key(keyAlice)).json(t)["conversation"].(map[string]any)["is_unread"].(bool)
		}
		allAre := func(want bool) {
			t.Helper()
			for page := 1; page <= 2; page++ {
				for i, u := range unread(e.get(fmt.Sprintf("/api/conversations/10/messages?page=%d", page), key(keyAlice))) {
					if u != want {
						t.Fatalf("page %d message %d is_unread=%v; want %v", page, i, u, want)
					}
				}
			}
			if convUnread() != want {
				t.Fatalf("conversation is_unread=%v; want %v", !want, want)
			}
			m := e.get("/api/conversation-messages/1001", key(keyAlice)).json(t)["message"].(map[string]any)
			if m["is_unread"].(bool) != want || m["Conversation"].(map[string]any)["is_unread"].(bool) != want {
				t.Fatalf("single message read state: %v", m)
			}
		}
		allAre(true) // alice has read nothing
		wantJSON(t, e.post("/api/conversations/10/mark-read", nil, key(keyAlice)), `{"success": true}`)
		allAre(false)
		allAre(false) // reading pages does not change anything
		wantJSON(t, e.post("/api/conversations/10/mark-unread", nil, key(keyAlice)), `{"success": true}`)
		allAre(true)
		wantJSON(t, e.post("/api/conversations/10/mark-unread", nil, key(keyAlice)), `{"success": true}`) // idempotent
		allAre(true)

		// mark-read with a date: messages up to it are read, later ones unread.
		wantJSON(t, e.post("/api/conversations/10/mark-read", url.Values{"date": {strconv.Itoa(t0 + 300)}}, key(keyAlice)), `{"success": true}`)
		got := unread(e.get("/api/conversations/10/messages", key(keyAlice)))
		if !slices.Equal(got, []bool{false, false, false, false, false}) {
			t.Fatalf("after mark-read at t0+300, page 1: %v", got)
		}
		got = unread(e.get("/api/conversations/10/messages?page=2", key(keyAlice)))
		if !slices.Equal(got, []bool{true, true, true, true, true}) {
			t.Fatalf("after mark-read at t0+300, page 2: %v", got)
		}
		// Only forward: an earlier date changes nothing.
		e.post("/api/conversations/10/mark-read", url.Values{"date": {strconv.Itoa(t0 + 100)}}, key(keyAlice))
		if got := unread(e.get("/api/conversations/10/messages", key(keyAlice))); slices.Contains(got, true) {
			t.Fatalf("mark-read moved backwards: %v", got)
		}
		// A future date counts as now, so a message dated later than now is still unread.
		e.post("/api/conversations/10/mark-read", url.Values{"date": {strconv.Itoa(now + 10_000)}}, key(keyAlice))
		if lastRead, _ := e.participant(10, 1); lastRead != now {
			t.Fatalf("last_read_date %d after a future date; want now (%d)", lastRead, now)
		}
		// date=0 means now too; bad dates are refused and change nothing.
		wantJSON(t, e.post("/api/conversations/10/mark-read", url.Values{"date": {"0"}}, key(keyAlice)), `{"success": true}`)
		for _, bad := range []string{"-1", "abc", "1.5", "99999999999999999999"} {
			wantError(t, e.post("/api/conversations/10/mark-read", url.Values{"date": {bad}}, key(keyAlice)), 400, "invalid_date", nil)
		}
		// Read state is per user: bob's is untouched by alice's.
		got = unread(e.get("/api/conversations/10/messages?page=2", key(keyBob)))
		if !slices.Equal(got, []bool{false, false, true, true, true}) {
			t.Fatalf("bob's read state changed: %v", got)
		}
	})
}

func TestKeyTypes(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		// A user key acts as its user; naming itself is fine.
		if r := e.get("/api/conversations/10", key(keyAlice)); r.status != 200 {
			t.Fatalf("user key: %d %s", r.status, r.body)
		}
		if r := e.get("/api/conversations/10", key(keyAlice), user("1")); r.status != 200 {
			t.Fatalf("user key naming itself: %d %s", r.status, r.body)
		}
		wantError(t, e.get("/api/conversations/10", key(keyAlice), user("2")), 403, "user_id_not_allowed", nil)
		// A super key acts as the named user, with that user's access and read state.
		if r := e.get("/api/conversations/13", key(keySuper), user("4")); r.status != 200 {
			t.Fatalf("super key as dave: %d %s", r.status, r.body)
		}
		wantError(t, e.get("/api/conversations/13", key(keySuper), user("1")), 404, "requested_conversation_not_found", nil)
		r := e.get("/api/conversations/10/messages?page=2", key(keySuper), user("2"))
		if got := r.json(t)["messages"].([]any)[0].(map[string]any)["is_unread"]; got != false {
			t.Fatalf("super key as bob does not see bob's read state: %v", got)
		}
		wantJSON(t, e.post("/api/conversations/10/mark-read", nil, key(keySuper), user("3")), `{"success": true}`)
		if carol, _ := e.participant(10, 3); carol != now {
			t.Fatalf("super key's mark-read did not act for carol: %d", carol)
		}
		wantError(t, e.get("/api/conversations/10", key(keySuper)), 403, "login_required", nil)
		// A guest key has no user.
		wantError(t, e.get("/api/conversations/10", key(keyGuest)), 403, "login_required", nil)
		wantError(t, e.get("/api/conversations/10", key(keyGuest), user("1")), 403, "user_id_not_allowed", nil)
	})
}

// Every row of the authentication and reading error table (README), in check order.
func TestErrorTable(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		type row struct {
			name    string
			method  string
			path    string
			headers []string
			status  int
			code    string
			params  map[string]any
		}
		rows := []row{
			{"no key", "GET", "/api/conversations/10", nil, 400, "no_api_key_in_request", nil},
			{"empty key", "GET", "/api/conversations/10", []string{key("")}, 400, "no_api_key_in_request", nil},
			{"unknown key", "GET", "/api/conversations/10", []string{key("no-such-key-0123456789abcdef0123456")}, 401, "api_key_not_found", nil},
			{"inactive key", "GET", "/api/conversations/10", []string{key(keyInactive)}, 403, "api_key_inactive", nil},
			{"expired key", "GET", "/api/conversations/10", []string{key(keyExpired)}, 403, "api_key_inactive", nil},
			{"super: user not an integer", "GET", "/api/conversations/10", []string{key(keySuper), user("abc")}, 403, "user_id_not_valid", nil},
			{"super: user zero", "GET", "/api/conversations/10", []string{key(keySuper), user("0")}, 403, "user_id_not_valid", nil},
			{"super: user negative", "GET", "/api/conversations/10", []string{key(keySuper), user("-1")}, 403, "user_id_not_valid", nil},
			{"super: user fractional", "GET", "/api/conversations/10", []string{key(keySuper), user("1.0")}, 403, "user_id_not_valid", nil},
			{"super: no such user", "GET", "/api/conversations/10", []string{key(keySuper), user("99")}, 403, "user_id_not_valid", nil},
			{"user key names another user", "GET", "/api/conversations/10", []string{key(keyAlice), user("2")}, 403, "user_id_not_allowed", nil},
			{"guest key names a user", "GET", "/api/conversations/10", []string{key(keyGuest), user("2")}, 403, "user_id_not_allowed", nil},
			{"missing read scope", "GET", "/api/conversations/10/messages", []string{key(keyAliceWrite)}, 403, "missing_scope", map[string]any{"scope": "conversation:read"}},
			{"missing read scope (message)", "GET", "/api/conversation-messages/1001", []string{key(keyAliceWrite)}, 403, "missing_scope", map[string]any{"scope": "conversation:read"}},
			{"missing read scope (super)", "GET", "/api/conversations/10", []string{key(keySuperNoRead), user("1")}, 403, "missing_scope", map[string]any{"scope": "conversation:read"}},
			{"missing write scope", "POST", "/api/conversations/10/mark-unread", []string{key(keyAliceRead)}, 403, "missing_scope", map[string]any{"scope": "conversation:write"}},
			{"missing write scope (mark-read)", "POST", "/api/conversations/10/mark-read", []string{key(keyAliceRead)}, 403, "missing_scope", map[string]any{"scope": "conversation:write"}},
			{"guest key", "GET", "/api/conversations/10/messages", []string{key(keyGuest)}, 403, "login_required", nil},
			{"super key without user", "POST", "/api/conversations/10/mark-unread", []string{key(keySuper)}, 403, "login_required", nil},
			{"no such conversation", "GET", "/api/conversations/999/messages", []string{key(keyAlice)}, 404, "requested_conversation_not_found", nil},
			{"not a participant", "GET", "/api/conversations/13/messages", []string{key(keyAlice)}, 404, "requested_conversation_not_found", nil},
			{"no such message", "GET", "/api/conversation-messages/999", []string{key(keyAlice)}, 404, "requested_message_not_found", nil},
			{"message of a foreign conversation", "GET", "/api/conversation-messages/1301", []string{key(keyAlice)}, 404, "requested_message_not_found", nil},
			{"page not a positive integer", "GET", "/api/conversations/10/messages?page=x", []string{key(keyAlice)}, 400, "invalid_page", nil},
			{"page past the last", "GET", "/api/conversations/10/messages?page=3", []string{key(keyAlice)}, 400, "invalid_page", map[string]any{"max": 2}},
			{"unknown route", "GET", "/api/nothing", []string{key(keyAlice)}, 404, "endpoint_not_found", nil},
			{"unknown route, no key", "GET", "/api/conversations/10/messages/extra", nil, 404, "endpoint_not_found", nil},
			{"non-integer id", "GET", "/api/conversations/ten/messages", []string{key(keyAlice)}, 404, "endpoint_not_found", nil},
			{"zero id, no key", "GET", "/api/conversation-messages/0", nil, 404, "endpoint_not_found", nil},
			{"negative id", "POST", "/api/conversations/-10/mark-unread", []string{key(keyAlice)}, 404, "endpoint_not_found", nil},
			{"id beyond int64", "GET", "/api/conversations/99999999999999999999", []string{key(keyAlice)}, 404, "endpoint_not_found", nil},
			{"wrong method, no key", "DELETE", "/api/conversations/10/messages", nil, 405, "method_not_allowed", nil},
			{"wrong method, bad id", "PUT", "/api/conversations/x", nil, 405, "method_not_allowed", nil},
			{"GET on a POST route", "GET", "/api/conversations/10/mark-unread", []string{key(keyAlice)}, 405, "method_not_allowed", nil},
		}
		for _, r := range rows {
			t.Run(r.name, func(t *testing.T) {
				wantError(t, e.req(r.method, r.path, nil, r.headers...), r.status, r.code, r.params)
			})
		}
		// The mark routes answer 404 for strangers too, and change nothing.
		wantError(t, e.post("/api/conversations/13/mark-read", nil, key(keyAlice)), 404, "requested_conversation_not_found", nil)
		wantError(t, e.post("/api/conversations/13/mark-unread", nil, key(keyAlice)), 404, "requested_conversation_not_found", nil)
		wantError(t, e.post("/api/conversations/999/mark-read", nil, key(keyAlice)), 404, "requested_conversation_not_found", nil)
	})
}

// A stranger learns nothing: a foreign conversation and its messages answer exactly as absent
// ones do.
func TestNoExistenceLeak(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		strip := func(r response) string {
			return fmt.Sprint(r.status, " ", string(r.body))
		}
		if a, b := strip(e.get("/api/conversations/13", key(keyAlice))), strip(e.get("/api/conversations/999999", key(keyAlice))); a != b {
			t.Fatalf("foreign %s vs absent %s", a, b)
		}
		if a, b := strip(e.get("/api/conversations/13/messages", key(keyAlice))), strip(e.get("/api/conversations/999999/messages", key(keyAlice))); a != b {
			t.Fatalf("foreign %s vs absent %s", a, b)
		}
		absent := strip(e.get("/api/conversation-messages/999999", key(keyAlice)))
		for _, id := range []int{1301, 1302} {
			if got := strip(e.get(fmt.Sprintf("/api/conversation-messages/%d", id), key(keyAlice))); got != absent {
				t.Fatalf("foreign message %d: %s; absent: %s", id, got, absent)
			}
		}
		// And every message of a conversation alice is in is hers to read; none of dave's is.
		for id := 1001; id <= 1010; id++ {
			if r := e.get(fmt.Sprintf("/api/conversation-messages/%d", id), key(keyAlice)); r.status != 200 {
				t.Fatalf("message %d: %d", id, r.status)
			}
			wantError(t, e.get(fmt.Sprintf("/api/conversation-messages/%d", id), key(keyDave)), 404, "requested_message_not_found", nil)
		}
		wantError(t, e.get("/api/conversations/10", key(keyDave)), 404, "requested_conversation_not_found", nil)
		wantError(t, e.get("/api/conversations/10/messages", key(keyDave)), 404, "requested_conversation_not_found", nil)
	})
}

func TestRoutesSlashesMethods(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, rt := range []struct{ path, allow string }{
		{"/api/conversations", "GET, HEAD, POST"},
		{"/api/conversations/10", "GET, HEAD, POST, DELETE"},
		{"/api/conversations/10/messages", "GET, HEAD"},
		{"/api/conversations/10/mark-read", "POST"},
		{"/api/conversations/10/mark-unread", "POST"},
		{"/api/conversations/10/invite", "POST"},
		{"/api/conversations/10/star", "POST"},
		{"/api/conversation-messages", "POST"},
		{"/api/conversation-messages/1001", "GET, HEAD, POST"},
		{"/api/me", "GET, HEAD"},
		{"/api/openapi.json", "GET, HEAD"},
	} {
		allowed := strings.Split(rt.allow, ", ")
		for _, path := range []string{rt.path, rt.path + "/"} {
			for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
				switch {
				case !slices.Contains(allowed, m):
					r := e.req(m, path, nil, key(keyAlice))
					wantError(t, r, 405, "method_not_allowed", nil)
					if got := r.header.Get("Allow"); got != rt.allow {
						t.Errorf("%s %s: Allow %q; want %q", m, path, got, rt.allow)
					}
				case m == "GET":
					g := e.get(path, key(keyAlice))
					if g.status != 200 {
						t.Errorf("GET %s: %d %s", path, g.status, g.body)
					}
					r := e.req(http.MethodHead, path, nil, key(keyAlice))
					if r.status != 200 || r.header.Get("Content-Type") != g.header.Get("Content-Type") ||
						r.header.Get("Content-Length") == "" || r.header.Get("Content-Length") != strconv.Itoa(len(g.body)) {
						t.Errorf("HEAD %s: %d %v; GET has %d bytes", path, r.status, r.header, len(g.body))
					}
				case m != "HEAD" && path != "/api/openapi.json" && path != "/api/openapi.json/":
					// Served: without a key, the key check answers (it comes after the route's).
					wantError(t, e.req(m, path, nil), 400, "no_api_key_in_request", nil)
				}
			}
		}
	}
	for _, p := range []string{"/api/conversations/10/mark-read", "/api/conversations/10/mark-unread"} {
		for _, path := range []string{p, p + "/"} {
			if r := e.post(path, nil, key(keyAlice)); r.status != 200 {
				t.Errorf("POST %s: %d %s", path, r.status, r.body)
			}
		}
	}
	// Wrong method is answered before the key is looked at.
	wantError(t, e.req("PUT", "/api/conversations/10", nil), 405, "method_not_allowed", nil)
}

func TestRateLimit(t *testing.T) {
	e := newEnv(t, envOptions{rateLimit: ratelimit.Config{PerMinute: 60, Burst: 3}})
	for i := range 3 {
		if r := e.get("/api/conversations/10", key(keyAlice)); r.status != 200 {
			t.Fatalf("request %d: %d", i, r.status)
		}
	}
	r := e.get("/api/conversations/10", key(keyAlice))
	wantError(t, r, 429, "too_many_requests", nil)
	if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	// Every request of the key counts, whatever it asks; other keys have their own buckets.
	wantError(t, e.get("/api/conversations/13", key(keyAlice)), 429, "too_many_requests", nil)
	if r := e.get("/api/conversations/10", key(keyBob)); r.status != 200 {
		t.Fatalf("another key: %d", r.status)
	}
	// The limit comes after the key checks (an unknown key is 401, not 429) and before the user,
	// the scope and the object.
	wantError(t, e.get("/api/conversations/10", key("no-such-key-0123456789abcdef0123456")), 401, "api_key_not_found", nil)
	wantError(t, e.get("/api/conversations/10", key(keyAlice), user("2")), 429, "too_many_requests", nil)
	wantError(t, e.get("/api/conversations/10", key(keyInactive)), 403, "api_key_inactive", nil)
	// Routes are checked before everything.
	wantError(t, e.get("/api/nothing", key(keyAlice)), 404, "endpoint_not_found", nil)
}

// A key changed in the database (as the CLI does) takes effect within 30 s, and not by a query
// per request before that.
func TestKeyChangeTakesEffectWithin30s(t *testing.T) {
	e := newEnv(t, envOptions{})
	if r := e.get("/api/conversations/10", key(keyAlice)); r.status != 200 {
		t.Fatal(r.status)
	}
	if err := e.gdb.Exec("UPDATE api_keys SET active = FALSE WHERE key_hash = ?", auth.Hash(keyAlice)).Error; err != nil {
		t.Fatal(err)
	}
	e.clock.Add(30 * time.Second)
	wantError(t, e.get("/api/conversations/10", key(keyAlice)), 403, "api_key_inactive", nil)
}

func TestKeysStoredOnlyAsHashes(t *testing.T) {
	e := newEnv(t, envOptions{})
	var rows []struct {
		KeyHash string
		KeyType string
		Scopes  string
	}
	if err := e.gdb.Raw("SELECT key_hash, key_type, scopes FROM api_keys").Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(allKeys) {
		t.Fatalf("%d keys stored; want %d", len(rows), len(allKeys))
	}
	hashes := map[string]bool{}
	for _, r := range rows {
		hashes[r.KeyHash] = true
		for _, k := range allKeys {
			if strings.Contains(r.KeyHash+r.KeyType+r.Scopes, k) {
				t.Fatalf("a plain key is stored: %+v", r)
			}
		}
	}
	for _, k := range allKeys {
		if !hashes[auth.Hash(k)] {
			t.Fatalf("key %s not stored as its SHA-256", k[:8])
		}
	}
	// No column of the whole database holds a plain key.
	var dump string
	e.gdb.Raw(`SELECT string_agg(t::text, ' ') FROM api_keys t`).Scan(&dump)
	for _, k := range allKeys {
		if strings.Contains(dump, k) {
			t.Fatal("a plain key is stored")
		}
	}
}

func TestLogsNeverPrintKeys(t *testing.T) {
	e := newEnv(t, envOptions{rateLimit: ratelimit.Config{PerMinute: 60, Burst: 2}})
	paths := []string{"/api/conversations/10", "/api/conversations/10/messages?page=abc", "/api/nothing",
		"/api/conversations/13", "/api/conversation-messages/1001"}
	for _, k := range allKeys {
		for _, p := range paths {
			e.get(p, key(k))
			e.get(p+"?key="+k, key(k), user("2"))
			e.post(p, url.Values{"key": {k}}, key(k))
		}
	}
	unknown := "unknown-key-0123456789abcdef0123456"
	e.get("/api/conversations/10", key(unknown))
	logs := e.logs.String()
	if !strings.Contains(logs, `"msg":"request"`) {
		t.Fatalf("no request logs captured: %.200s", logs)
	}
	for _, k := range append(allKeys, unknown) {
		if strings.Contains(logs, k) {
			t.Fatalf("the log prints a key: %s", k)
		}
	}
}

func TestBodyLimit(t *testing.T) {
	e := newEnv(t, envOptions{})
	big := url.Values{"date": {"1"}, "pad": {strings.Repeat("x", 1<<20)}}
	wantError(t, e.post("/api/conversations/10/mark-read", big, key(keyAlice)), 413, "request_entity_too_large", nil)
}

// Anything unexpected is 500 server_error_occurred, with no internals in the answer.
func TestServerError(t *testing.T) {
	e := newEnv(t, envOptions{})
	if r := e.get("/api/conversations/10", key(keyAlice)); r.status != 200 {
		t.Fatal(r.status)
	}
	if err := e.gdb.Exec("DROP TABLE conversation_messages CASCADE").Error; err != nil {
		t.Fatal(err)
	}
	r := e.get("/api/conversations/10/messages", key(keyAlice))
	wantError(t, r, 500, "server_error_occurred", nil)
	if strings.Contains(string(r.body), "conversation_messages") || strings.Contains(string(r.body), "relation") {
		t.Fatalf("internals in the answer: %s", r.body)
	}
	if !strings.Contains(e.logs.String(), "request failed") {
		t.Fatal("the unexpected error is not logged")
	}
}

func TestHealthAndReadiness(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		if r := e.get(p); r.status != 200 {
			t.Errorf("%s: %d", p, r.status)
		}
	}
}

// Malformed input is refused with its own error, never read as "absent" (which would mean the
// default page, or "now" for mark-read).
func TestMalformedInputIsNotAbsent(t *testing.T) {
	e := newEnv(t, envOptions{})
	for _, q := range []string{"page=%zz", "page=%", "page=1%", "x=1&page=%G1"} {
		wantError(t, e.get("/api/conversations/10/messages?"+q, key(keyAlice)), 400, "invalid_page", nil)
	}
	// A broken unrelated parameter is ignored, as unknown parameters are.
	if r := e.get("/api/conversations/10/messages?x=%zz&page=1", key(keyAlice)); r.status != 200 {
		t.Fatalf("unrelated broken parameter: %d %s", r.status, r.body)
	}

	post := func(body string, chunked bool) response {
		r := request(http.MethodPost, "/api/conversations/10/mark-read", "application/x-www-form-urlencoded", body, key(keyAlice))
		if chunked {
			r.ContentLength = -1 // unknown length: only reading the body finds it too large
		}
		return e.serve(r)
	}
	wantError(t, post("date=%zz", false), 400, "invalid_date", nil)
	wantError(t, post("date=1&date=2", false), 400, "invalid_date", nil)
	wantError(t, post("date=1&pad="+strings.Repeat("x", 1<<20), true), 413, "request_entity_too_large", nil)
	// None of the refusals moved the read state: the whole conversation is still unread for alice.
	r := e.get("/api/conversations/10/", key(keyAlice))
	if got := r.json(t)["conversation"].(map[string]any)["is_unread"]; got != true {
		t.Fatalf("is_unread after refused mark-reads: %v", got)
	}
}
