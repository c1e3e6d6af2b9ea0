package httpapi_test

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The conversations API, on both databases.

// carol has no key of her own: the super key acts as her.
var asCarol = []string{key(keySuper), user("3")}

func form(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v
}

// num reads a JSON number at a path of nested objects.
func num(t *testing.T, m map[string]any, path ...string) int64 {
	t.Helper()
	var v any = m
	for _, p := range path {
		v = v.(map[string]any)[p]
	}
	n, err := strconv.ParseInt(fmt.Sprint(v), 10, 64)
	if err != nil {
		t.Fatalf("%v at %v: %v", v, path, err)
	}
	return n
}

// listIDs returns the conversation ids of a list answer.
func listIDs(t *testing.T, r response) []int64 {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	return idsOf(t, r, "conversations", "conversation_id")
}

func TestStartConversation(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		r := e.post("/api/conversations/", form("recipient_ids[]", "3", "recipient_ids[]", "1", "recipient_ids[]", "2",
			"title", "  Plans  ", "message", "Shall we?", "open_invite", "1"), key(keyAlice))
		m := r.json(t)
		conv := m["conversation"].(map[string]any)
		id := num(t, m, "conversation", "conversation_id")
		first := num(t, m, "conversation", "first_message_id")
		// New ids are above every seeded one (conversations up to 13, messages up to 1302).
		if id <= 13 || first <= 1302 {
			t.Fatalf("ids %d, %d are not above the seeded ones", id, first)
		}
		wantJSON(t, r, fmt.Sprintf(`{"success": true, "conversation": {"conversation_id": %d, "title": "Plans",
		  "user_id": 1, "username": "alice", "start_date": %d, "reply_count": 0, "recipient_count": 2,
		  "recipients": {"2": "bob", "3": "carol"},
		  "first_message_id": %d, "last_message_id": %d, "last_message_date": %d, "last_message_user_id": 1, "is_unread": false,
		  "is_starred": false, "conversation_open": true, "open_invite": true,
		  "can_edit": true, "can_reply": true, "can_invite": true, "can_upload_attachment": false,
		  "Starter": {"user_id": 1, "username": "alice"}}}`, id, now, first, first, now))
		_ = conv
		// The starter has read it; the recipients have it unread, first in their lists.
		for _, k := range [][]string{{key(keyBob)}, asCarol} {
			got := e.get(fmt.Sprintf("/api/conversations/%d", id), k...).json(t)["conversation"].(map[string]any)
			if got["is_unread"] != true {
				t.Fatalf("a recipient has the new conversation read: %v", got)
			}
			if ids := listIDs(t, e.get("/api/conversations", k...)); len(ids) == 0 || ids[0] != id {
				t.Fatalf("list of %v: %v", k, ids)
			}
		}
		page := e.get(fmt.Sprintf("/api/conversations/%d/messages", id), key(keyAlice)).json(t)
		if msgs := page["messages"].([]any); len(msgs) != 1 || msgs[0].(map[string]any)["message"] != "Shall we?" {
			t.Fatalf("messages: %v", msgs)
		}
		// Dave is not in it.
		wantError(t, e.get(fmt.Sprintf("/api/conversations/%d", id), key(keyDave)), 404, "requested_conversation_not_found", nil)
	})
}

func TestWriteErrors(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		if err := e.gdb.Exec("UPDATE forum_options SET max_recipients = 2, message_max_length = 5").Error; err != nil {
			t.Fatal(err)
		}
		start := func(kv ...string) response { return e.post("/api/conversations", form(kv...), key(keyAlice)) }
		wantError(t, start(), 400, "required_input_missing", map[string]any{"missing": []any{"recipient_ids", "title", "message"}})
		wantError(t, start("recipient_ids[]", "1", "title", " ", "message", "x"), 400, "required_input_missing",
			map[string]any{"missing": []any{"recipient_ids", "title"}})
		wantError(t, start("recipient_ids[]", "2", "recipient_ids[]", "abc", "recipient_ids[]", "-1", "title", "t", "message", "x"),
			400, "invalid_recipients", map[string]any{"user_ids": []any{"abc", "-1"}})
		wantError(t, start("recipient_ids[]", "2", "recipient_ids[]", "99", "title", "t", "message", "x"),
			400, "invalid_recipients", map[string]any{"user_ids": []any{"99"}})
		wantError(t, start("recipient_ids[]", "2", "recipient_ids[]", "3", "recipient_ids[]", "4", "title", "t", "message", "x"),
			400, "too_many_recipients", map[string]any{"max": 2})
		wantError(t, start("recipient_ids[]", "2", "title", strings.Repeat("т", 101), "message", "x"), 400, "title_too_long", map[string]any{"max": 100})
		// Code points: five 4-byte characters fit, six do not.
		if r := start("recipient_ids[]", "2", "title", strings.Repeat("т", 100), "message", "😀😀😀😀😀"); r.status != 200 {
			t.Fatalf("100-character title, 5-character message: %d %s", r.status, r.body)
		}
		wantError(t, start("recipient_ids[]", "2", "title", "t", "message", "😀😀😀😀😀😀"), 400, "message_too_long", map[string]any{"max": 5})
		wantError(t, start("recipient_ids[]", "2", "title", "t", "message", "x", "conversation_open", "maybe"), 400, "invalid_input", map[string]any{"field": "conversation_open"})
		wantError(t, start("recipient_ids[]", "2", "title", "t", "message", "\xff"), 400, "invalid_input", map[string]any{"field": "message"})
		wantError(t, start("recipient_ids[]", "2", "title", "t\x00", "message", "x"), 400, "invalid_input", map[string]any{"field": "title"})
		// 1,000 recipients (within the field bound): refused without a query of them.
		many := []string{"title", "t", "message", "x"}
		for i := range 1_000 {
			many = append(many, "recipient_ids[]", strconv.Itoa(i+2))
		}
		wantError(t, start(many...), 400, "too_many_recipients", map[string]any{"max": 2})

		reply := func(k string, kv ...string) response {
			return e.post("/api/conversation-messages", form(kv...), key(k))
		}
		wantError(t, reply(keyAlice), 400, "required_input_missing", map[string]any{"missing": []any{"conversation_id", "message"}})
		for _, id := range []string{"abc", "0", "-1", "999999", "13", "99999999999999999999"} {
			wantError(t, reply(keyAlice, "conversation_id", id, "message", "hi"), 404, "requested_conversation_not_found", nil)
		}
		wantError(t, reply(keyAlice, "conversation_id", "10", "message", "123456"), 400, "message_too_long", map[string]any{"max": 5})
		// Scopes: a read-only key writes nothing; a write-only key reads no list.
		wantError(t, reply(keyAliceRead, "conversation_id", "10", "message", "hi"), 403, "missing_scope", map[string]any{"scope": "conversation:write"})
		wantError(t, e.get("/api/conversations", key(keyAliceWrite)), 403, "missing_scope", map[string]any{"scope": "conversation:read"})
		wantError(t, e.get("/api/me", key(keyGuest)), 403, "login_required", nil)
		if r := e.get("/api/me", key(keyAliceWrite)); r.status != 200 { // no particular scope
			t.Fatalf("/api/me with a write-only key: %d", r.status)
		}
		// Permissions.
		wantError(t, e.post("/api/conversation-messages/1002", form("message", "mine"), key(keyAlice)), 403, "no_permission", nil)
		wantError(t, e.post("/api/conversation-messages/1301", form("message", "x"), key(keyAlice)), 404, "requested_message_not_found", nil)
		wantError(t, e.post("/api/conversations/11", form("title", "Mine"), key(keyAlice)), 403, "no_permission", nil)
		wantError(t, e.post("/api/conversations/13", form("title", "Mine"), key(keyAlice)), 404, "requested_conversation_not_found", nil)
		wantError(t, e.post("/api/conversations/11/invite", form("recipient_ids[]", "3"), key(keyAlice)), 403, "no_permission", nil)
		wantError(t, e.post("/api/conversations/13/star", nil, key(keyAlice)), 404, "requested_conversation_not_found", nil)
		wantError(t, e.req(http.MethodDelete, "/api/conversations/13", nil, key(keyAlice)), 404, "requested_conversation_not_found", nil)
		wantError(t, e.post("/api/conversations/10/star", form("star", "maybe"), key(keyAlice)), 400, "invalid_input", map[string]any{"field": "star"})
		wantError(t, e.req(http.MethodDelete, "/api/conversations/10?ignore=2", nil, key(keyAlice)), 400, "invalid_input", map[string]any{"field": "ignore"})
	})
}

func TestReplyEditUpdate(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		wantJSON(t, e.post("/api/conversations/12/mark-read", nil, key(keyAlice)), `{"success": true}`)
		e.clock.Add(60e9)
		r := e.post("/api/conversation-messages/", form("conversation_id", "12", "message", " later "), key(keyBob))
		m := r.json(t)["message"].(map[string]any)
		id := num(t, map[string]any{"m": m}, "m", "message_id")
		if m["message"] != "later" || m["is_unread"] != false || num(t, m, "message_date") != now+60 || id <= 1302 {
			t.Fatalf("reply: %s", r.body)
		}
		c := m["Conversation"].(map[string]any)
		if num(t, c, "reply_count") != 3 || num(t, c, "last_message_id") != id || num(t, c, "last_message_date") != now+60 || c["is_unread"] != false {
			t.Fatalf("conversation after the reply: %v", c)
		}
		// Last in position order, on the last page; unread for alice, who had read everything.
		if ids := messageIDs(t, e.get("/api/conversations/12/messages", key(keyAlice))); !slices.Equal(ids, []int64{1201, 1202, 1203, id}) {
			t.Fatalf("messages %v", ids)
		}
		if e.get("/api/conversations/12", key(keyAlice)).json(t)["conversation"].(map[string]any)["is_unread"] != true {
			t.Fatal("the reply is not unread for alice")
		}
		// Edit: the author only.
		r = e.post(fmt.Sprintf("/api/conversation-messages/%d/", id), form("message", "edited"), key(keyBob))
		if r.json(t)["message"].(map[string]any)["message"] != "edited" {
			t.Fatalf("edit: %s", r.body)
		}
		wantError(t, e.post(fmt.Sprintf("/api/conversation-messages/%d", id), form("message", "x"), key(keyAlice)), 403, "no_permission", nil)
		// Update: the starter only; closing stops replies and invites from anyone.
		r = e.post("/api/conversations/12", form("title", "Renamed", "conversation_open", "false"), key(keyAlice))
		c = r.json(t)["conversation"].(map[string]any)
		if c["title"] != "Renamed" || c["conversation_open"] != false || c["open_invite"] != false {
			t.Fatalf("update: %s", r.body)
		}
		wantError(t, e.post("/api/conversation-messages", form("conversation_id", "12", "message", "x"), key(keyBob)), 403, "conversation_closed", nil)
		wantError(t, e.post("/api/conversation-messages", form("conversation_id", "12", "message", "x"), key(keyAlice)), 403, "conversation_closed", nil)
		wantError(t, e.post("/api/conversations/12/invite", form("recipient_ids[]", "3"), key(keyAlice)), 403, "conversation_closed", nil)
		wantError(t, e.post("/api/conversations/12", form("conversation_open", "1"), key(keyBob)), 403, "no_permission", nil)
		// An update with nothing to change answers the conversation as it is.
		if r := e.post("/api/conversations/12", nil, key(keyAlice)); r.json(t)["conversation"].(map[string]any)["title"] != "Renamed" {
			t.Fatalf("empty update: %s", r.body)
		}
	})
}

func TestListPaginationAndFilters(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		if err := e.gdb.Exec("UPDATE forum_options SET discussions_per_page = 2").Error; err != nil {
			t.Fatal(err)
		}
		// alice is in 10, 11, 12: newest activity first (12 at t0+5200, 11 at t0+1100, 10 at t0+900).
		list := func(q string, k ...string) []int64 { return listIDs(t, e.get("/api/conversations?"+q, k...)) }
		if got := list("", key(keyAlice)); !slices.Equal(got, []int64{12, 11}) {
			t.Fatalf("page 1: %v", got)
		}
		// Every conversation of the list is the one GET answers, recipients included.
		for page := 1; page <= 2; page++ {
			for _, c := range e.get(fmt.Sprintf("/api/conversations?page=%d", page), key(keyAlice)).json(t)["conversations"].([]any) {
				id := num(t, c.(map[string]any), "conversation_id")
				one := e.get(fmt.Sprintf("/api/conversations/%d", id), key(keyAlice)).json(t)["conversation"]
				if fmt.Sprint(one) != fmt.Sprint(c) {
					t.Fatalf("conversation %d in the list:\n%v\nalone:\n%v", id, c, one)
				}
			}
		}
		r := e.get("/api/conversations?page=2", key(keyAlice))
		if got := listIDs(t, r); !slices.Equal(got, []int64{10}) {
			t.Fatalf("page 2: %v", got)
		}
		p := r.json(t)["pagination"].(map[string]any)
		if fmt.Sprint(p) != "map[current_page:2 last_page:2 per_page:2 shown:1 total:3]" {
			t.Fatalf("pagination %v", p)
		}
		wantError(t, e.get("/api/conversations?page=3", key(keyAlice)), 400, "invalid_page", map[string]any{"max": 2})
		wantError(t, e.get("/api/conversations?page=0", key(keyAlice)), 400, "invalid_page", nil)
		// A reply moves a conversation to the front.
		e.clock.Add(1e9)
		e.post("/api/conversation-messages", form("conversation_id", "10", "message", "bump"), key(keyBob))
		if got := list("", key(keyAlice)); !slices.Equal(got, []int64{10, 12}) {
			t.Fatalf("after a reply to 10: %v", got)
		}
		// Filters.
		if got := list("starter_id=2", key(keyAlice)); !slices.Equal(got, []int64{11}) {
			t.Fatalf("starter_id=2: %v", got)
		}
		if got := list("receiver_id=3", key(keyAlice)); !slices.Equal(got, []int64{10}) {
			t.Fatalf("receiver_id=3: %v", got)
		}
		if got := list("receiver_id=1", key(keyAlice)); !slices.Equal(got, []int64{11}) { // alice receives only 11
			t.Fatalf("receiver_id=1: %v", got)
		}
		e.post("/api/conversations/11/star", nil, key(keyAlice))
		if got := list("starred=1", key(keyAlice)); !slices.Equal(got, []int64{11}) {
			t.Fatalf("starred=1: %v", got)
		}
		if got := list("starred=false", key(keyAlice)); !slices.Equal(got, []int64{10, 12}) {
			t.Fatalf("starred=false: %v", got)
		}
		e.post("/api/conversations/12/mark-read", nil, key(keyAlice))
		if got := list("unread=true", key(keyAlice)); !slices.Equal(got, []int64{10, 11}) {
			t.Fatalf("unread=true: %v", got)
		}
		if got := list("unread=0&starred=0", key(keyAlice)); !slices.Equal(got, []int64{12}) {
			t.Fatalf("unread=0&starred=0: %v", got)
		}
		for q, field := range map[string]string{"starter_id=x": "starter_id", "receiver_id=0": "receiver_id", "starred=2": "starred", "unread=": "unread"} {
			wantError(t, e.get("/api/conversations?"+q, key(keyAlice)), 400, "invalid_input", map[string]any{"field": field})
		}
		// An empty list is page 1 of 1.
		r = e.get("/api/conversations?starter_id=5", key(keyAlice))
		wantJSON(t, r, `{"conversations": [], "pagination": {"current_page": 1, "last_page": 1, "per_page": 2, "shown": 0, "total": 0}}`)
		wantError(t, e.get("/api/conversations?starter_id=5&page=2", key(keyAlice)), 400, "invalid_page", map[string]any{"max": 1})
	})
}

func TestLeaveAndComeBack(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		reads := []string{"/api/conversations/10", "/api/conversations/10/messages", "/api/conversation-messages/1001"}
		wantJSON(t, e.req(http.MethodDelete, "/api/conversations/10/", nil, key(keyAlice)), `{"success": true}`)
		for _, p := range reads {
			if r := e.get(p, key(keyAlice)); r.status != 404 {
				t.Fatalf("%s after leaving: %d", p, r.status)
			}
		}
		wantError(t, e.post("/api/conversations/10/mark-read", nil, key(keyAlice)), 404, "requested_conversation_not_found", nil)
		wantError(t, e.post("/api/conversation-messages", form("conversation_id", "10", "message", "x"), key(keyAlice)), 404, "requested_conversation_not_found", nil)
		if got := listIDs(t, e.get("/api/conversations", key(keyAlice))); slices.Contains(got, 10) {
			t.Fatalf("list after leaving: %v", got)
		}
		// Others see no change: alice is still a recipient... of her own conversation, the starter.
		c := e.get("/api/conversations/10", key(keyBob)).json(t)["conversation"].(map[string]any)
		if num(t, c, "recipient_count") != 2 || num(t, c, "user_id") != 1 {
			t.Fatalf("bob's view after alice left: %v", c)
		}
		// Inviting her back leaves her as she is (left).
		e.post("/api/conversations/10", form("open_invite", "1"), key(keyBob)) // not the starter: refused
		// A reply by another participant brings her back, with it unread.
		e.clock.Add(1e9)
		e.post("/api/conversation-messages", form("conversation_id", "10", "message", "come back"), key(keyBob))
		for _, p := range reads {
			if r := e.get(p, key(keyAlice)); r.status != 200 {
				t.Fatalf("%s after a reply: %d", p, r.status)
			}
		}
		if e.get("/api/conversations/10", key(keyAlice)).json(t)["conversation"].(map[string]any)["is_unread"] != true {
			t.Fatal("the reply that brought alice back is read")
		}
		// ignore=true (from the query string): gone for good.
		wantJSON(t, e.req(http.MethodDelete, "/api/conversations/10?ignore=true", nil, key(keyAlice)), `{"success": true}`)
		e.post("/api/conversation-messages", form("conversation_id", "10", "message", "still there?"), key(keyBob))
		wantError(t, e.get("/api/conversations/10", key(keyAlice)), 404, "requested_conversation_not_found", nil)
		// The last participant leaving deletes the conversation and its messages.
		e.req(http.MethodDelete, "/api/conversations/12", nil, key(keyAlice))
		wantJSON(t, e.req(http.MethodDelete, "/api/conversations/12", nil, key(keyBob)), `{"success": true}`)
		var n int64
		err := e.gdb.Raw("SELECT (SELECT COUNT(*) FROM conversations WHERE conversation_id = 12) + (SELECT COUNT(*) FROM conversation_messages WHERE conversation_id = 12)").Scan(&n).Error
		if err != nil || n != 0 {
			t.Fatalf("conversation 12 left by everyone: %d rows remain (%v)", n, err)
		}
	})
}

// A conversation deleted with the highest ids (its last participant left) leaves them unused: a
// replayed answer or a client's cached id never names a later conversation or message.
func TestDeletedIDsNotReused(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		start := func() (id, first int64) {
			m := e.post("/api/conversations", form("recipient_ids[]", "2", "title", "t", "message", "x"), key(keyAlice)).json(t)
			return num(t, m, "conversation", "conversation_id"), num(t, m, "conversation", "first_message_id")
		}
		reply := func(id int64) int64 {
			r := e.post("/api/conversation-messages", form("conversation_id", strconv.FormatInt(id, 10), "message", "y"), key(keyBob))
			return num(t, r.json(t), "message", "message_id")
		}
		gone, goneFirst := start()
		goneReply := reply(gone)
		for _, k := range []string{keyAlice, keyBob} {
			wantJSON(t, e.req(http.MethodDelete, fmt.Sprintf("/api/conversations/%d", gone), nil, key(k)), `{"success": true}`)
		}
		id, first := start()
		next := reply(id)
		if id <= gone || first <= goneReply || next <= first {
			t.Fatalf("after deleting conversation %d (messages %d, %d): conversation %d, messages %d, %d",
				gone, goneFirst, goneReply, id, first, next)
		}
		wantError(t, e.get(fmt.Sprintf("/api/conversations/%d", gone), key(keyAlice)), 404, "requested_conversation_not_found", nil)
	})
}

func TestInviteStarMe(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		me := func(k ...string) map[string]any { return e.get("/api/me", k...).json(t)["me"].(map[string]any) }
		if got := me(key(keyAlice)); fmt.Sprint(got) != "map[conversations_unread:3 user_id:1 username:alice]" {
			t.Fatalf("me: %v", got)
		}
		e.post("/api/conversations/10/mark-read", nil, key(keyAlice))
		if got := num(t, me(key(keyAlice)), "conversations_unread"); got != 2 {
			t.Fatalf("unread after a mark-read: %d", got)
		}
		// Invite into 12 (alice's): dave joins with everything unread; bob (there) and alice
		// (herself) are untouched.
		wantJSON(t, e.post("/api/conversations/12/invite", form("recipient_ids[]", "4", "recipient_ids[]", "2", "recipient_ids[]", "1"), key(keyAlice)), `{"success": true}`)
		page := e.get("/api/conversations/12/messages", key(keyDave)).json(t)["messages"].([]any)
		for _, m := range page {
			if m.(map[string]any)["is_unread"] != true {
				t.Fatalf("an invited user has read %v", m)
			}
		}
		wantError(t, e.post("/api/conversations/12/invite", form("recipient_ids[]", "99"), key(keyAlice)), 400, "invalid_recipients", map[string]any{"user_ids": []any{"99"}})
		wantError(t, e.post("/api/conversations/12/invite", form("recipient_ids[]", "1"), key(keyAlice)), 400, "required_input_missing", map[string]any{"missing": []any{"recipient_ids"}})
		// maxRecipients counts the whole conversation: 12 has bob and dave.
		e.gdb.Exec("UPDATE forum_options SET max_recipients = 2")
		wantError(t, e.post("/api/conversations/12/invite", form("recipient_ids[]", "5"), key(keyAlice)), 400, "too_many_recipients", map[string]any{"max": 2})
		// Inviting only participants adds nothing, so it is no error even over a lowered maximum.
		e.gdb.Exec("UPDATE forum_options SET max_recipients = 1")
		wantJSON(t, e.post("/api/conversations/12/invite", form("recipient_ids[]", "4"), key(keyAlice)), `{"success": true}`)
		e.gdb.Exec("UPDATE forum_options SET max_recipients = 2")
		// A participant other than the starter invites only with open_invite.
		wantError(t, e.post("/api/conversations/12/invite", form("recipient_ids[]", "5"), key(keyBob)), 403, "no_permission", nil)
		e.gdb.Exec("UPDATE forum_options SET max_recipients = 20")
		e.post("/api/conversations/12", form("open_invite", "true"), key(keyAlice))
		wantJSON(t, e.post("/api/conversations/12/invite", form("recipient_ids[]", "5"), key(keyBob)), `{"success": true}`)
		// Star: set, toggle, unset.
		wantJSON(t, e.post("/api/conversations/12/star", form("star", "1"), key(keyBob)), `{"success": true, "is_starred": true}`)
		wantJSON(t, e.post("/api/conversations/12/star", form("star", "1"), key(keyBob)), `{"success": true, "is_starred": true}`)
		wantJSON(t, e.post("/api/conversations/12/star", nil, key(keyBob)), `{"success": true, "is_starred": false}`)
		wantJSON(t, e.post("/api/conversations/12/star", nil, key(keyBob)), `{"success": true, "is_starred": true}`)
		if e.get("/api/conversations/12", key(keyBob)).json(t)["conversation"].(map[string]any)["is_starred"] != true {
			t.Fatal("is_starred")
		}
		if e.get("/api/conversations/12", key(keyAlice)).json(t)["conversation"].(map[string]any)["is_starred"] != false {
			t.Fatal("a star is per user")
		}
	})
}

// multipartBody encodes fields as multipart/form-data.
func multipartBody(t *testing.T, kv ...string) (contentType, body string) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for i := 0; i+1 < len(kv); i += 2 {
		if err := w.WriteField(kv[i], kv[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	return w.FormDataContentType(), b.String()
}

func TestBodiesAndMediaTypes(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		send := func(method, path, contentType, body string) response {
			return e.raw(method, path, contentType, body, key(keyAlice))
		}
		ct, body := multipartBody(t, "recipient_ids[]", "2", "recipient_ids[]", "3", "title", "Multi", "message", "part")
		r := send(http.MethodPost, "/api/conversations", ct, body)
		if r.status != 200 || num(t, r.json(t), "conversation", "recipient_count") != 2 {
			t.Fatalf("multipart start: %d %s", r.status, r.body)
		}
		// A non-empty body of another type is 415 on every write, mark-read included (its date is
		// not silently dropped); an empty body of any type is no body.
		lastRead, _ := e.participant(10, 1)
		for _, w := range []struct{ method, path string }{
			{"POST", "/api/conversations"}, {"POST", "/api/conversations/10"}, {"DELETE", "/api/conversations/10"},
			{"POST", "/api/conversations/10/mark-read"}, {"POST", "/api/conversations/10/mark-unread"},
			{"POST", "/api/conversations/10/invite"}, {"POST", "/api/conversations/10/star"},
			{"POST", "/api/conversation-messages"}, {"POST", "/api/conversation-messages/1001"},
		} {
			for _, ct := range []string{"application/json", "text/plain", "", "multipart/form-data", "nonsense/"} {
				r := send(w.method, w.path, ct, `{"date": 1767225600}`)
				if ct == "multipart/form-data" { // the right type without a boundary: a broken body
					wantError(t, r, 400, "invalid_input", map[string]any{"field": "body"})
					continue
				}
				wantError(t, r, 415, "unsupported_media_type", nil)
			}
		}
		if after, _ := e.participant(10, 1); after != lastRead {
			t.Fatalf("a refused mark-read moved last_read_date %d -> %d", lastRead, after)
		}
		if r := send(http.MethodPost, "/api/conversations/10/mark-unread", "application/json", ""); r.status != 200 {
			t.Fatalf("empty JSON body: %d %s", r.status, r.body)
		}
		// DELETE reads a form body too.
		if r := send(http.MethodDelete, "/api/conversations/10", "application/x-www-form-urlencoded", "ignore=1"); r.status != 200 {
			t.Fatalf("DELETE with a form: %d %s", r.status, r.body)
		}
	})
}

func TestIdempotencyKey(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		count := func() (n int64) {
			e.gdb.Raw("SELECT COUNT(*) FROM conversation_messages WHERE conversation_id = 10").Scan(&n)
			return n
		}
		before := count()
		f := form("conversation_id", "10", "message", "once")
		first := e.post("/api/conversation-messages", f, key(keyAlice), "Idempotency-Key: retry-1")
		if first.status != 200 {
			t.Fatalf("first: %d %s", first.status, first.body)
		}
		e.clock.Add(5e9)
		again := e.post("/api/conversation-messages/", f, key(keyAlice), "Idempotency-Key: retry-1")
		if again.status != 200 || !bytes.Equal(again.body, first.body) || again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay: %d %s (first %s)", again.status, again.body, first.body)
		}
		if got := count(); got != before+1 {
			t.Fatalf("%d messages after a retried reply; want %d", got, before+1)
		}
		// The same key with another request; another user or another API key has its own keys.
		wantError(t, e.post("/api/conversation-messages", form("conversation_id", "10", "message", "other"), key(keyAlice), "Idempotency-Key: retry-1"),
			422, "idempotency_key_reused", nil)
		wantError(t, e.post("/api/conversations", form("recipient_ids[]", "2", "title", "t", "message", "once"), key(keyAlice), "Idempotency-Key: retry-1"),
			422, "idempotency_key_reused", nil)
		if r := e.post("/api/conversation-messages", f, key(keyBob), "Idempotency-Key: retry-1"); r.status != 200 || r.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("bob's own key: %d %s", r.status, r.body)
		}
		if r := e.post("/api/conversation-messages", f, key(keySuper), user("1"), "Idempotency-Key: retry-1"); r.status != 200 || r.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("another API key: %d %s", r.status, r.body)
		}
		// After 24 hours the key is free again.
		e.clock.Add(24 * 3600e9)
		if r := e.post("/api/conversation-messages", f, key(keyAlice), "Idempotency-Key: retry-1"); r.status != 200 || r.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("after 24 h: %d %s", r.status, r.body)
		}
		// A refused write records nothing: its retry is judged again.
		e.post("/api/conversations/10", form("conversation_open", "0"), key(keyAlice))
		closed := form("conversation_id", "10", "message", "closed")
		wantError(t, e.post("/api/conversation-messages", closed, key(keyAlice), "Idempotency-Key: k2"), 403, "conversation_closed", nil)
		e.post("/api/conversations/10", form("conversation_open", "1"), key(keyAlice))
		if r := e.post("/api/conversation-messages", closed, key(keyAlice), "Idempotency-Key: k2"); r.status != 200 {
			t.Fatalf("retry after reopening: %d %s", r.status, r.body)
		}
		for _, bad := range []string{"Idempotency-Key: " + strings.Repeat("k", 256), "Idempotency-Key: caf\xc3\xa9", "Idempotency-Key: a\x01b"} {
			wantError(t, e.post("/api/conversation-messages", f, key(keyAlice), bad), 400, "invalid_idempotency_key", nil)
		}
		r := request(http.MethodPost, "/api/conversations", "", "", key(keyAlice))
		r.Header["Idempotency-Key"] = []string{"a", "b"}
		wantError(t, e.serve(r), 400, "invalid_idempotency_key", nil)
	})
}

// Concurrent identical requests with one key: one writes, the others replay it or are told it is
// in progress; never two rows.
func TestIdempotencyKeyRace(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		const n = 8
		statuses := make([]int, n)
		bodies := make([][]byte, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				r := e.post("/api/conversations", form("recipient_ids[]", "2", "title", "race", "message", "once"), key(keyAlice), "Idempotency-Key: race")
				statuses[i], bodies[i] = r.status, r.body
			})
		}
		wg.Wait()
		var created int64
		e.gdb.Raw("SELECT COUNT(*) FROM conversations WHERE title = 'race'").Scan(&created)
		if created != 1 {
			t.Fatalf("%d conversations from one key (statuses %v)", created, statuses)
		}
		var ok []byte
		for i, s := range statuses {
			switch s {
			case 200:
				if ok != nil && !bytes.Equal(ok, bodies[i]) {
					t.Fatalf("two different answers:\n%s\n%s", ok, bodies[i])
				}
				ok = bodies[i]
			case 409:
				wantError(t, response{status: s, header: http.Header{"Content-Type": {"application/json"}}, body: bodies[i]}, 409, "request_in_progress", nil)
			default:
				t.Fatalf("status %d: %s", s, bodies[i])
			}
		}
	})
}

// 16 clients × 50 replies to one conversation: positions 1..N without gaps, every reply once,
// reply_count right, and pages consistent.
func TestConcurrentReplies(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		const clients, each = 16, 50
		var wg sync.WaitGroup
		errs := make(chan string, clients*each)
		for c := range clients {
			wg.Go(func() {
				for i := range each {
					k := []string{key(keyAlice)}
					if c%2 == 1 {
						k = []string{key(keyBob)}
					}
					r := e.post("/api/conversation-messages", form("conversation_id", "12", "message", fmt.Sprintf("c%d-%d", c, i)), k...)
					if r.status != 200 {
						errs <- fmt.Sprintf("%d %s", r.status, r.body)
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		const total = 3 + clients*each
		var rows []struct {
			Position int64
			Message  string
		}
		e.gdb.Raw("SELECT position, message FROM conversation_messages WHERE conversation_id = 12 ORDER BY position").Scan(&rows)
		seen := map[string]bool{}
		for i, r := range rows {
			if r.Position != int64(i+1) || seen[r.Message] {
				t.Fatalf("row %d: position %d, message %q (seen: %v)", i, r.Position, r.Message, seen[r.Message])
			}
			seen[r.Message] = true
		}
		if len(rows) != total {
			t.Fatalf("%d messages; want %d", len(rows), total)
		}
		c := e.get("/api/conversations/12", key(keyAlice)).json(t)["conversation"].(map[string]any)
		if num(t, c, "reply_count") != total-1 {
			t.Fatalf("reply_count %v; want %d", c["reply_count"], total-1)
		}
		// Per client, the replies are in the order it sent them.
		last := map[string]int{}
		for _, r := range rows[3:] {
			var cl, i int
			fmt.Sscanf(r.Message, "c%d-%d", &cl, &i)
			k := strconv.Itoa(cl)
			if prev, ok := last[k]; ok && i != prev+1 {
				t.Fatalf("client %d: reply %d after %d", cl, i, prev)
			}
			last[k] = i
		}
	})
}
