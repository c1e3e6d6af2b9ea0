package xfclient_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"forumstats.local/forum-svc/internal/httpapi/xenforotest"
)

// A XenForo client works against forum-svc with the base URL and the key headers changed: the
// test drives a whole conversation through each generated client (a session each) and checks, at
// every step, the answer's meaning through the generated types and its shape against XenForo's
// schema of the operation (xenforotest). Alice starts a conversation with Bob and Carol; Bob
// replies with a file (an attachment key, an upload, the key on the reply); Carol reacts to Bob's
// reply and replies; Carol lists her conversations; Alice reads both pages with the conversation
// (with_messages); Alice edits her message and renames the conversation; Carol stars it, lists
// her starred conversations and reads Bob's reply alone; Alice invites Dave, who then sees the
// conversation; Bob leaves it, after which it is gone from his list and his reads.

const xenforoDocument = "../testdata/xenforo/conversations.json"

// The conversation as the steps read it from the generated types, whichever client.
type (
	conv struct {
		id, starter, recipientCount, replyCount int64
		title                                   string
		recipients                              map[string]string
	}
	msg struct {
		id, conversationID, author, attachCount, reactionScore int64
		message, parsed                                        string
		files                                                  []string
	}
	pagination struct{ current, last, total int64 }
)

// session is a generated client driving the conversation. Each method sends one request as user
// `as`, through the generated request builder and response parser, and fails the test unless the
// answer is 200, parses into the generated type (with no field the type lacks) and matches
// XenForo's schema of the operation.
type session interface {
	start(t *testing.T, as int64, recipients []int64, title, message string) conv
	newKey(t *testing.T, as, conversationID int64) string
	upload(t *testing.T, as int64, key, filename string, data []byte) string
	reply(t *testing.T, as, conversationID int64, message, attachmentKey string) msg
	react(t *testing.T, as, messageID, reactionID int64) string
	// list is the first page of the user's conversations; starred: only those they starred.
	list(t *testing.T, as int64, starred bool) []conv
	withMessages(t *testing.T, as, conversationID, page int64) (conv, []msg, pagination)
	edit(t *testing.T, as, messageID int64, message string) msg
	update(t *testing.T, as, conversationID int64, title string) conv
	star(t *testing.T, as, conversationID int64)
	// message is one message, with the conversation it embeds.
	message(t *testing.T, as, messageID int64) (msg, conv)
	invite(t *testing.T, as, conversationID int64, users []int64)
	leave(t *testing.T, as, conversationID int64)
	// status is the status of a read of the conversation, whatever it is.
	status(t *testing.T, as, conversationID int64) int
}

func TestXenForoClientConversation(t *testing.T) {
	doc := xenforotest.Load(t, xenforoDocument)
	dialects(t, func(t *testing.T, baseURL string) {
		rec := newRecorder()
		converse(t, newXenForoSession(t, doc, baseURL, rec), rec)
	})
}

func TestForumClientConversation(t *testing.T) {
	doc := xenforotest.Load(t, xenforoDocument)
	dialects(t, func(t *testing.T, baseURL string) {
		rec := newRecorder()
		converse(t, newForumSession(t, doc, baseURL, rec), rec)
	})
}

// converse is the conversation, the same through every client.
func converse(t *testing.T, s session, rec *recorder) {
	c := s.start(t, alice, []int64{bob, carol}, "Dinner", "Friday at [b]8[/b]?")
	if c.id <= 0 || c.starter != alice || c.title != "Dinner" || c.recipientCount != 2 || c.replyCount != 0 ||
		!maps.Equal(c.recipients, map[string]string{"2": "bob", "3": "carol"}) {
		t.Fatalf("start: %+v", c)
	}
	// The generated clients write an array field as PHP's indexed pairs, as XenForo's PHP clients
	// (http_build_query, Guzzle) do: recipient_ids[0]=2&recipient_ids[1]=3.
	wantIndexedArray(t, rec.lastSent(), "recipient_ids", "2", "3")

	key := s.newKey(t, bob, c.id)
	if key == "" {
		t.Fatal("new-key: no key")
	}
	if name := s.upload(t, bob, key, "menu.txt", []byte("soup, bread, pears")); name != "menu.txt" {
		t.Fatalf("upload: filename %q", name)
	}
	r := s.reply(t, bob, c.id, "Menu attached.", key)
	if r.id <= 0 || r.conversationID != c.id || r.author != bob || r.attachCount != 1 || !slices.Equal(r.files, []string{"menu.txt"}) {
		t.Fatalf("reply with a file: %+v", r)
	}
	if action := s.react(t, carol, r.id, 1); action != "insert" {
		t.Fatalf("react: action %q", action)
	}
	last := s.reply(t, carol, c.id, "See you there", "")
	if last.attachCount != 0 || last.files != nil {
		t.Fatalf("reply without a file: %+v", last)
	}

	listed := s.list(t, carol, false)
	if len(listed) == 0 || listed[0].id != c.id || listed[0].replyCount != 2 {
		t.Fatalf("carol's list: %+v", listed)
	}

	got, page2, p := s.withMessages(t, alice, c.id, 2)
	if got.id != c.id || p != (pagination{current: 2, last: 2, total: 3}) || len(page2) != 1 || page2[0].id != last.id {
		t.Fatalf("page 2 with the conversation: %+v %+v %+v", got, p, page2)
	}
	_, page1, p := s.withMessages(t, alice, c.id, 1)
	if p.current != 1 || len(page1) != 2 || page1[1].id != r.id || page1[1].reactionScore != 1 || page1[1].attachCount != 1 ||
		!slices.Equal(page1[1].files, []string{"menu.txt"}) {
		t.Fatalf("page 1 with the conversation: %+v %+v", p, page1)
	}

	first := page1[0]
	edited := s.edit(t, alice, first.id, "Friday at [i]9[/i]?")
	if edited.id != first.id || edited.message != "Friday at [i]9[/i]?" || edited.parsed != "Friday at <i>9</i>?" {
		t.Fatalf("edit: %+v", edited)
	}

	if renamed := s.update(t, alice, c.id, "Dinner on Friday"); renamed.id != c.id || renamed.title != "Dinner on Friday" {
		t.Fatalf("update: %+v", renamed)
	}
	s.star(t, carol, c.id)
	if starred := s.list(t, carol, true); len(starred) != 1 || starred[0].id != c.id {
		t.Fatalf("carol's starred conversations: %+v", starred)
	}
	if starred := s.list(t, alice, true); len(starred) != 0 {
		t.Fatalf("alice starred nothing, and her starred list holds %+v", starred)
	}
	one, in := s.message(t, carol, r.id)
	if one.id != r.id || one.reactionScore != 1 || !slices.Equal(one.files, []string{"menu.txt"}) || in.id != c.id || in.title != "Dinner on Friday" {
		t.Fatalf("bob's reply read alone: %+v in %+v", one, in)
	}

	s.invite(t, alice, c.id, []int64{dave})
	wantIndexedArray(t, rec.lastSent(), "recipient_ids", "4")
	seen, _, _ := s.withMessages(t, dave, c.id, 1)
	if seen.recipientCount != 3 || seen.recipients["4"] != "dave" {
		t.Fatalf("dave's view after the invite: %+v", seen)
	}

	s.leave(t, bob, c.id)
	for _, other := range s.list(t, bob, false) {
		if other.id == c.id {
			t.Fatalf("bob left conversation %d, and his list still holds it", c.id)
		}
	}
	if st := s.status(t, bob, c.id); st != http.StatusNotFound {
		t.Fatalf("bob reads the conversation he left: status %d, want 404", st)
	}
	if st := s.status(t, carol, c.id); st != http.StatusOK {
		t.Fatalf("carol reads the conversation bob left: status %d, want 200", st)
	}
}

// wantIndexedArray checks that the form body s sent holds field as PHP's indexed pairs
// field[0], field[1], ... with values, and in no other encoding.
func wantIndexedArray(t *testing.T, s sent, field string, values ...string) {
	t.Helper()
	form, err := url.ParseQuery(string(s.body))
	if err != nil || s.contentType != "application/x-www-form-urlencoded" {
		t.Fatalf("%s %s: body %q of type %q: %v", s.method, s.url, s.body, s.contentType, err)
	}
	want := url.Values{}
	for i, v := range values {
		want.Set(field+"["+strconv.Itoa(i)+"]", v)
	}
	got := url.Values{}
	for k, v := range form {
		if k == field || strings.HasPrefix(k, field+"[") {
			got[k] = v
		}
	}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("%s %s sent %s as %v, want %v (body %s)", s.method, s.url, field, got, want, s.body)
	}
}

// answer checks one answer the generated code parsed (err is its parse error, json200 the
// parsed 200 answer): 200, parsed, every field of the body held by the generated type but the
// top-level fields extra names (those the service adds to the document's answer of op), and
// XenForo's schema of op ("post /conversations/"). It returns json200.
func answer[T any](t *testing.T, doc *openapi3.T, op string, extra []string, err error, resp *http.Response, body []byte, json200 *T) *T {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	if resp.StatusCode != http.StatusOK || json200 == nil {
		t.Fatalf("%s: status %d, %s", op, resp.StatusCode, body)
	}
	held := body
	if len(extra) > 0 {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(body, &fields); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		for _, f := range extra {
			if _, ok := fields[f]; !ok {
				t.Fatalf("%s: the answer no longer adds %s: %s", op, f, body)
			}
			delete(fields, f)
		}
		if held, err = json.Marshal(fields); err != nil {
			t.Fatal(err)
		}
	}
	var strict T
	dec := json.NewDecoder(bytes.NewReader(held))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&strict); err != nil {
		t.Errorf("%s: the answer holds what the generated type %T does not: %v\n%s", op, strict, err, body)
	}
	method, path, _ := strings.Cut(op, " ")
	xenforotest.CheckAnswer(t, doc, method, path, resp.StatusCode, body)
	return json200
}
