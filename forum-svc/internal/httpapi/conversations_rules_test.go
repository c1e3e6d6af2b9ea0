package httpapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"forumstats.local/forum-svc/internal/conversation"
)

// Rules of the conversations API that the scenarios of conversations_test.go leave implicit, on
// both databases.

// asErin: erin has no key of her own either.
var asErin = []string{key(keySuper), user("5")}

// participant is a user's row in a conversation (read date, left state), read from the database.
func (e *env) participant(conversationID, userID int) (lastRead, leftState int64) {
	e.t.Helper()
	if err := e.gdb.Raw("SELECT last_read_date, left_state FROM conversation_participants WHERE conversation_id = ? AND user_id = ?",
		conversationID, userID).Row().Scan(&lastRead, &leftState); err != nil {
		e.t.Fatalf("participant %d of %d: %v", userID, conversationID, err)
	}
	return lastRead, leftState
}

func TestListOrderTiesAndDefaultPageSize(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		r := e.get("/api/conversations", key(keyAlice))
		if got := num(t, r.json(t), "pagination", "per_page"); got != 20 {
			t.Fatalf("default page size %d; want 20 (discussionsPerPage)", got)
		}
		// Two conversations started in the same second tie on last_message_date: the larger id first.
		var ids []int64
		for range 2 {
			r := e.post("/api/conversations", form("recipient_ids[]", "2", "title", "tie", "message", "x"), key(keyAlice))
			ids = append(ids, num(t, r.json(t), "conversation", "conversation_id"))
		}
		want := []int64{ids[1], ids[0], 12, 11, 10}
		for _, k := range [][]string{{key(keyAlice)}, {key(keyBob)}} {
			if got := listIDs(t, e.get("/api/conversations", k...)); !slices.Equal(got[:2], want[:2]) {
				t.Fatalf("list of %v: %v; want %v first", k, got, want[:2])
			}
		}
		// Also across pages: one to a page, the tie splits in the same order.
		if err := e.gdb.Exec("UPDATE forum_options SET discussions_per_page = 1").Error; err != nil {
			t.Fatal(err)
		}
		for page, id := range want {
			if got := listIDs(t, e.get(fmt.Sprintf("/api/conversations?page=%d", page+1), key(keyAlice))); !slices.Equal(got, []int64{id}) {
				t.Fatalf("page %d: %v; want [%d]", page+1, got, id)
			}
		}
		wantError(t, e.get("/api/conversations?page=6", key(keyAlice)), 400, "invalid_page", map[string]any{"max": 5})
	})
}

// Inviting leaves every participant as they are (there, left, or left ignoring it); only the new
// ones join, with everything unread.
func TestInviteLeavesParticipantsAsTheyAre(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		wantJSON(t, e.post("/api/conversations/10/invite", form("recipient_ids[]", "5"), key(keyAlice)), `{"success": true}`)
		wantJSON(t, e.req(http.MethodDelete, "/api/conversations/10", nil, asCarol...), `{"success": true}`)
		wantJSON(t, e.req(http.MethodDelete, "/api/conversations/10?ignore=1", nil, asErin...), `{"success": true}`)
		e.post("/api/conversations/10/mark-read", form("date", fmt.Sprint(t0+700)), key(keyBob))
		type state struct{ lastRead, left int64 }
		before := map[int]state{}
		for _, u := range []int{1, 2, 3, 5} {
			r, l := e.participant(10, u)
			before[u] = state{r, l}
		}
		e.clock.Add(1e9)
		wantJSON(t, e.post("/api/conversations/10/invite/", form("recipient_ids[]", "2", "recipient_ids[]", "3",
			"recipient_ids[]", "5", "recipient_ids[]", "4", "recipient_ids[]", "1"), key(keyAlice)), `{"success": true}`)
		for u, b := range before {
			if r, l := e.participant(10, u); r != b.lastRead || l != b.left {
				t.Fatalf("user %d: read %d, left %d after the invite; was %d, %d", u, r, l, b.lastRead, b.left)
			}
		}
		for _, k := range [][]string{asCarol, asErin} {
			wantError(t, e.get("/api/conversations/10", k...), 404, "requested_conversation_not_found", nil)
		}
		// Dave joins with everything unread, the conversation in his list.
		c := e.get("/api/conversations/10", key(keyDave)).json(t)["conversation"].(map[string]any)
		if c["is_unread"] != true || num(t, c, "recipient_count") != 4 {
			t.Fatalf("dave's view: %v", c)
		}
		for page := 1; page <= 2; page++ {
			for _, m := range e.get(fmt.Sprintf("/api/conversations/10/messages?page=%d", page), key(keyDave)).json(t)["messages"].([]any) {
				if m.(map[string]any)["is_unread"] != true {
					t.Fatalf("an invited user has read %v", m)
				}
			}
		}
		if got := listIDs(t, e.get("/api/conversations", key(keyDave))); !slices.Contains(got, 10) {
			t.Fatalf("dave's list: %v", got)
		}
		// A reply brings carol back, not erin, who ignored it.
		e.post("/api/conversation-messages", form("conversation_id", "10", "message", "welcome"), key(keyDave))
		if r := e.get("/api/conversations/10", asCarol...); r.status != 200 {
			t.Fatalf("carol after a reply: %d %s", r.status, r.body)
		}
		wantError(t, e.get("/api/conversations/10", asErin...), 404, "requested_conversation_not_found", nil)
	})
}

// A closed conversation takes no invite even from a participant whom open_invite allows.
func TestClosedConversationRefusesInvitesFromAnyone(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		e.post("/api/conversations/12", form("open_invite", "1"), key(keyAlice))
		wantJSON(t, e.post("/api/conversations/12/invite", form("recipient_ids[]", "4"), key(keyBob)), `{"success": true}`)
		c := e.post("/api/conversations/12", form("conversation_open", "0"), key(keyAlice)).json(t)["conversation"].(map[string]any)
		if c["conversation_open"] != false || c["open_invite"] != true {
			t.Fatalf("closed: %v", c)
		}
		for _, k := range []string{keyBob, keyDave, keyAlice} {
			wantError(t, e.post("/api/conversations/12/invite", form("recipient_ids[]", "5"), key(k)), 403, "conversation_closed", nil)
			wantError(t, e.post("/api/conversation-messages", form("conversation_id", "12", "message", "x"), key(k)), 403, "conversation_closed", nil)
		}
		wantError(t, e.get("/api/conversations/12", asErin...), 404, "requested_conversation_not_found", nil)
	})
}

// conversations_unread counts the conversations not left that are unread.
func TestMeCountsConversationsNotLeft(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		unread := func() int64 { return num(t, e.get("/api/me/", key(keyAlice)).json(t), "me", "conversations_unread") }
		if got := unread(); got != 3 {
			t.Fatalf("unread %d; want 3 (10, 11, 12)", got)
		}
		e.req(http.MethodDelete, "/api/conversations/11", nil, key(keyAlice))
		if got := unread(); got != 2 {
			t.Fatalf("unread %d after leaving 11; want 2", got)
		}
		e.req(http.MethodDelete, "/api/conversations/10", form("ignore", "true"), key(keyAlice))
		if got := unread(); got != 1 {
			t.Fatalf("unread %d after leaving 10 for good; want 1", got)
		}
		e.clock.Add(1e9)
		e.post("/api/conversation-messages", form("conversation_id", "11", "message", "back?"), key(keyBob))
		e.post("/api/conversation-messages", form("conversation_id", "10", "message", "back?"), key(keyBob))
		if got := unread(); got != 2 {
			t.Fatalf("unread %d after replies to 11 (left) and 10 (ignored); want 2", got)
		}
		// Her own reply leaves it read for her.
		e.post("/api/conversation-messages", form("conversation_id", "12", "message", "mine"), key(keyAlice))
		if got := unread(); got != 1 {
			t.Fatalf("unread %d after her reply to 12; want 1", got)
		}
	})
}

// A conversation the user left answers every route exactly as one that does not exist, and
// none of them changes anything.
func TestLeftConversationIsAbsentEverywhere(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		wantJSON(t, e.req(http.MethodDelete, "/api/conversations/10", nil, key(keyAlice)), `{"success": true}`)
		type op struct {
			method, path string
			form         url.Values
		}
		conv := []op{
			{"GET", "/api/conversations/%d", nil},
			{"GET", "/api/conversations/%d/messages", nil},
			{"POST", "/api/conversations/%d/mark-read", nil},
			{"POST", "/api/conversations/%d/mark-unread", nil},
			{"POST", "/api/conversations/%d", form("title", "Mine")},
			{"DELETE", "/api/conversations/%d", nil},
			{"POST", "/api/conversations/%d/invite", form("recipient_ids[]", "4")},
			{"POST", "/api/conversations/%d/star", form("star", "1")},
		}
		for _, o := range conv {
			left := e.req(o.method, fmt.Sprintf(o.path, 10), o.form, key(keyAlice))
			absent := e.req(o.method, fmt.Sprintf(o.path, 999), o.form, key(keyAlice))
			wantError(t, left, 404, "requested_conversation_not_found", nil)
			if string(left.body) != string(absent.body) {
				t.Fatalf("%s %s: left %s, absent %s", o.method, o.path, left.body, absent.body)
			}
		}
		wantError(t, e.post("/api/conversation-messages", form("conversation_id", "10", "message", "x"), key(keyAlice)), 404, "requested_conversation_not_found", nil)
		// 1001 is alice's own message.
		for _, o := range []op{{"GET", "/api/conversation-messages/%d", nil}, {"POST", "/api/conversation-messages/%d", form("message", "x")}} {
			left := e.req(o.method, fmt.Sprintf(o.path, 1001), o.form, key(keyAlice))
			absent := e.req(o.method, fmt.Sprintf(o.path, 999999), o.form, key(keyAlice))
			wantError(t, left, 404, "requested_message_not_found", nil)
			if string(left.body) != string(absent.body) {
				t.Fatalf("%s %s: left %s, absent %s", o.method, o.path, left.body, absent.body)
			}
		}
		var changed int64
		err := e.gdb.Raw(`SELECT (SELECT COUNT(*) FROM conversation_participants WHERE conversation_id = 10 AND (user_id = 4 OR starred))
  + (SELECT COUNT(*) FROM conversations WHERE conversation_id = 10 AND title <> 'Ten')
  + (SELECT COUNT(*) FROM conversation_messages WHERE message_id = 1001 AND message <> 'm1001')
  + (SELECT COUNT(*) FROM conversation_participants WHERE conversation_id = 10 AND user_id = 1 AND (left_state <> 1 OR last_read_date <> 0))`).Scan(&changed).Error
		if err != nil || changed != 0 {
			t.Fatalf("the routes of a left conversation changed %d things (%v)", changed, err)
		}
		// Bob sees no change.
		c := e.get("/api/conversations/10", key(keyBob)).json(t)["conversation"].(map[string]any)
		if c["title"] != "Ten" || num(t, c, "recipient_count") != 2 || num(t, c, "reply_count") != 9 {
			t.Fatalf("bob's view: %v", c)
		}
	})
}

// The recipients that name no user are named as sent, in the order sent.
func TestInvalidRecipientsAsSent(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		want := map[string]any{"user_ids": []any{"99", "0100", "7"}}
		f := form("recipient_ids[]", "99", "recipient_ids[]", "2", "recipient_ids[]", "0100", "recipient_ids[]", "7", "recipient_ids[]", "3")
		start := url.Values{"title": {"t"}, "message": {"m"}, "recipient_ids[]": f["recipient_ids[]"]}
		wantError(t, e.post("/api/conversations", start, key(keyAlice)), 400, "invalid_recipients", want)
		wantError(t, e.post("/api/conversations/10/invite", f, key(keyAlice)), 400, "invalid_recipients", want)
	})
}

// Idempotency-Key: 1 to 255 printable ASCII characters; its answers are per API key and user.
func TestIdempotencyKeyEdges(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		f := form("conversation_id", "10", "message", "once")
		for _, bad := range []string{"", "a\x7fb", "a\x80b"} {
			wantError(t, e.postWithKey(f, []string{key(keyAlice)}, bad), 400, "invalid_idempotency_key", nil)
		}
		long := strings.Repeat("~", 254) + " "
		first := e.postWithKey(f, []string{key(keyAlice)}, long)
		if first.status != 200 {
			t.Fatalf("a 255-character key: %d %s", first.status, first.body)
		}
		if again := e.postWithKey(f, []string{key(keyAlice)}, long); !slices.Equal(again.body, first.body) || again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay of a 255-character key: %s", again.body)
		}
		// One super key, two users: two keys.
		for _, u := range []string{"1", "2"} {
			r := e.postWithKey(f, []string{key(keySuper), user(u)}, "shared")
			if r.status != 200 || r.header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("super key as %s: %d %s %v", u, r.status, r.body, r.header)
			}
		}
		var n int64
		e.gdb.Raw("SELECT COUNT(*) FROM conversation_messages WHERE conversation_id = 10 AND message = 'once'").Scan(&n)
		if n != 3 {
			t.Fatalf("%d replies; want 3", n)
		}
	})
}

// postWithKey posts a reply form with the headers and an Idempotency-Key set verbatim (e.req
// trims header values).
func (e *env) postWithKey(f url.Values, headers []string, idempotencyKey string) response {
	e.t.Helper()
	r := request(http.MethodPost, "/api/conversation-messages", "application/x-www-form-urlencoded", f.Encode(), headers...)
	r.Header["Idempotency-Key"] = []string{idempotencyKey}
	return e.serve(r)
}

// mark-read takes its date from a multipart body as from an urlencoded one (a body of any other
// type is 415, not a silent "now").
func TestMarkReadDateFromEveryFormBody(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		ct, body := multipartBody(t, "date", fmt.Sprint(t0+300))
		wantJSON(t, e.raw(http.MethodPost, "/api/conversations/10/mark-read/", ct, body, key(keyAlice)), `{"success": true}`)
		if got, _ := e.participant(10, 1); got != t0+300 {
			t.Fatalf("last_read_date %d after a multipart mark-read; want %d", got, t0+300)
		}
		wantJSON(t, e.post("/api/conversations/10/mark-read", form("date", fmt.Sprint(t0+400)), key(keyAlice)), `{"success": true}`)
		if got, _ := e.participant(10, 1); got != t0+400 {
			t.Fatalf("last_read_date %d after an urlencoded mark-read; want %d", got, t0+400)
		}
	})
}

// The order of checks on every route of the conversations API's writes and list: route, key, rate limit (TestRateLimit), acting
// user, scope, registered user; then the Idempotency-Key, the body's type, the fields, and last
// the object. Each request below fails every later check too, so it answers the first.
func TestConversationsOrderOfChecks(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		routes := []struct {
			method, path string
			retry        bool // honours Idempotency-Key
			form         url.Values
			field        string // the field form makes malformed
		}{
			{"GET", "/api/conversations?starred=maybe", false, nil, "starred"},
			{"POST", "/api/conversations", true, form("recipient_ids[]", "2", "title", "t", "message", "m", "open_invite", "maybe"), "open_invite"},
			{"POST", "/api/conversations/13", false, form("open_invite", "maybe"), "open_invite"},
			{"DELETE", "/api/conversations/13", false, form("ignore", "maybe"), "ignore"},
			{"POST", "/api/conversations/13/invite", false, form("recipient_ids[]", "2", "x", "1"), ""},
			{"POST", "/api/conversations/13/star", false, form("star", "maybe"), "star"},
			{"POST", "/api/conversation-messages", true, form("conversation_id", "13", "message", "\xff"), "message"},
			{"POST", "/api/conversation-messages/1301", false, form("message", "\xff"), "message"},
			{"GET", "/api/me", false, nil, ""},
		}
		send := e.raw
		const badKey = "Idempotency-Key: " // empty: invalid
		for _, rt := range routes {
			write := rt.method != "GET"
			path := strings.Replace(rt.path, "13", "x13", 1)
			if path != rt.path {
				wantError(t, send(rt.method, path, "application/json", `{}`), 404, "endpoint_not_found", nil)
			}
			wantError(t, send("PUT", rt.path, "application/json", `{}`), 405, "method_not_allowed", nil)
			wantError(t, send(rt.method, rt.path, "application/json", `{}`, badKey), 400, "no_api_key_in_request", nil)
			wantError(t, send(rt.method, rt.path, "application/json", `{}`, key(keyAlice), user("2"), badKey), 403, "user_id_not_allowed", nil)
			if rt.path != "/api/me" {
				scope, k := "conversation:read", keyAliceWrite
				if write {
					scope, k = "conversation:write", keyAliceRead
				}
				wantError(t, send(rt.method, rt.path, "application/json", `{}`, key(k), badKey), 403, "missing_scope", map[string]any{"scope": scope})
			}
			wantError(t, send(rt.method, rt.path, "application/json", `{}`, key(keyGuest), badKey), 403, "login_required", nil)
			if !write {
				continue
			}
			if rt.retry {
				wantError(t, send(rt.method, rt.path, "application/json", `{}`, key(keyAlice), badKey), 400, "invalid_idempotency_key", nil)
			}
			wantError(t, send(rt.method, rt.path, "application/json", `{}`, key(keyAlice)), 415, "unsupported_media_type", nil)
			// The fields before the object (13 and 1301 are not alice's): as for an absent one.
			r := e.req(rt.method, rt.path, rt.form, key(keyAlice))
			if rt.field == "" {
				wantError(t, r, 404, "requested_conversation_not_found", nil)
				continue
			}
			wantError(t, r, 400, "invalid_input", map[string]any{"field": rt.field})
		}
		wantError(t, e.get("/api/conversations?starred=maybe", key(keyAlice)), 400, "invalid_input", map[string]any{"field": "starred"})
	})
}

// The options' defaults: maxRecipients 20, messageMaxLength 10,000 code points.
func TestOptionDefaults(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		recipients := url.Values{"title": {"t"}, "message": {"m"}}
		for i := range 21 {
			recipients.Add("recipient_ids[]", fmt.Sprint(100+i))
		}
		wantError(t, e.post("/api/conversations", recipients, key(keyAlice)), 400, "too_many_recipients", map[string]any{"max": 20})
		reply := func(s string) response {
			return e.post("/api/conversation-messages", form("conversation_id", "12", "message", s), key(keyAlice))
		}
		wantError(t, reply(strings.Repeat("é", 10_001)), 400, "message_too_long", map[string]any{"max": 10000})
		if r := reply(strings.Repeat("é", 10_000)); r.status != 200 {
			t.Fatalf("a message of 10,000 characters: %d %s", r.status, r.body)
		}
	})
}

// The longest message any forum allows (messageMaxLength at its largest, in 4-byte characters,
// percent-encoded: 768 KiB) fits within the 1 MiB body limit: one more character is
// message_too_long, not the body limit's 413.
func TestLongestMessageFitsTheBodyLimit(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		if err := e.gdb.Exec("UPDATE forum_options SET message_max_length = ?", conversation.MaxMessageLength).Error; err != nil {
			t.Fatal(err)
		}
		reply := func(n int) response {
			return e.post("/api/conversation-messages", form("conversation_id", "12", "message", strings.Repeat("😀", n)), key(keyAlice))
		}
		wantError(t, reply(conversation.MaxMessageLength+1), 400, "message_too_long", map[string]any{"max": conversation.MaxMessageLength})
		if r := reply(conversation.MaxMessageLength); r.status != 200 {
			t.Fatalf("a message of %d 4-byte characters: %d %.200s", conversation.MaxMessageLength, r.status, r.body)
		}
	})
}
