package httpapi_test

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/oapi-codegen/runtime"
)

// The encodings of the array field recipient_ids: `recipient_ids[]`, PHP's indexed
// `recipient_ids[N]`, repeated `recipient_ids`, in any mix, in the body or the query string.

// recipientIDs reads the recipients of a conversation answer, sorted.
func recipientIDs(t *testing.T, r response) []int64 {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var ids []int64
	for id := range r.json(t)["conversation"].(map[string]any)["recipients"].(map[string]any) {
		n, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, n)
	}
	slices.Sort(ids)
	return ids
}

// encodedRecipients are the same recipients, 2 and 3, in every encoding and mixes of them.
var encodedRecipients = []struct{ name, raw string }{
	{"name[]", "recipient_ids[]=2&recipient_ids[]=3"},
	{"name[] escaped", "recipient_ids%5B%5D=2&recipient_ids%5B%5D=3"},
	{"name[N]", "recipient_ids[0]=2&recipient_ids[1]=3"},
	{"name[N] escaped, out of order", "recipient_ids%5B1%5D=3&recipient_ids%5B0%5D=2"},
	{"repeated name", "recipient_ids=2&recipient_ids=3"},
	{"mix", "recipient_ids=3&recipient_ids[7]=2&recipient_ids[]=3"},
	{"huge index", "recipient_ids[999999999]=3&recipient_ids[0]=2"},
}

func TestRecipientEncodings(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		const form = "application/x-www-form-urlencoded"
		start := func(target, body string) response {
			return e.raw("POST", target, form, body, key(keyAlice))
		}
		for _, enc := range encodedRecipients {
			// In the body, and in the query string.
			got := recipientIDs(t, e.get(conversationOf(t, start("/api/conversations/", enc.raw+"&title=t&message=m")), key(keyAlice)))
			if !slices.Equal(got, []int64{2, 3}) {
				t.Errorf("start, %s in the body: recipients %v", enc.name, got)
			}
			got = recipientIDs(t, e.get(conversationOf(t, start("/api/conversations/?"+enc.raw, "title=t&message=m")), key(keyAlice)))
			if !slices.Equal(got, []int64{2, 3}) {
				t.Errorf("start, %s in the query: recipients %v", enc.name, got)
			}
			// Invite into a conversation of alice's with bob only.
			id := conversationOf(t, start("/api/conversations/", "recipient_ids=2&title=t&message=m"))
			if r := start(id+"/invite", strings.ReplaceAll(enc.raw, "=2", "=4")); r.status != 200 {
				t.Fatalf("invite, %s: %d %s", enc.name, r.status, r.body)
			}
			if got := recipientIDs(t, e.get(id, key(keyAlice))); !slices.Equal(got, []int64{2, 3, 4}) {
				t.Errorf("invite, %s: recipients %v", enc.name, got)
			}
		}
		// Multipart: the part names are the same keys.
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for k, v := range map[string]string{"recipient_ids[1]": "3", "recipient_ids[0]": "2", "title": "t", "message": "m"} {
			if err := mw.WriteField(k, v); err != nil {
				t.Fatal(err)
			}
		}
		mw.Close()
		got := recipientIDs(t, e.get(conversationOf(t, e.raw("POST", "/api/conversations/", mw.FormDataContentType(), buf.String(), key(keyAlice))), key(keyAlice)))
		if !slices.Equal(got, []int64{2, 3}) {
			t.Errorf("multipart: recipients %v", got)
		}
		// The body names the array in one encoding: the query string's, in another, is not read.
		got = recipientIDs(t, e.get(conversationOf(t, start("/api/conversations/?recipient_ids[]=4&recipient_ids=5", "recipient_ids[0]=2&title=t&message=m")), key(keyAlice)))
		if !slices.Equal(got, []int64{2}) {
			t.Errorf("body and query: recipients %v, want the body's only", got)
		}
		// Order: indexed by index, then the others in arrival order; the refusal names every
		// offending value, malformed and unknown together, in that order.
		wantError(t, start("/api/conversations/", "recipient_ids[]=98&recipient_ids[1]=x&recipient_ids=-1&recipient_ids[0]=99&recipient_ids[]=2&title=t&message=m"),
			400, "invalid_recipients", map[string]any{"user_ids": []any{"99", "x", "98", "-1"}})
		wantError(t, start("/api/conversations/12/invite", "recipient_ids[1]=abc&recipient_ids[0]=77&recipient_ids=3"),
			400, "invalid_recipients", map[string]any{"user_ids": []any{"77", "abc"}})
		// Booleans: 1/0, true/false, on/off, yes/no, the words in any case.
		for _, b := range []struct {
			open, invite string
			wantOpen     bool
		}{{"Off", "YES", false}, {"on", "true", true}, {"no", "1", false}} {
			id := conversationOf(t, start("/api/conversations/", "recipient_ids=2&title=t&message=m&conversation_open="+b.open+"&open_invite="+b.invite))
			c := e.get(id, key(keyAlice)).json(t)["conversation"].(map[string]any)
			if c["conversation_open"] != b.wantOpen || c["open_invite"] != true {
				t.Errorf("conversation_open=%s open_invite=%s: %v", b.open, b.invite, c)
			}
		}
		wantError(t, start("/api/conversations/", "recipient_ids=2&title=t&message=m&open_invite="), 400, "invalid_input", map[string]any{"field": "open_invite"})
		// A key that means the array but is none of its encodings is refused, not dropped.
		for _, k := range []string{"recipient_ids[x]", "recipient_ids[1][2]", "recipient_ids[-1]", "recipient_ids[", "recipient_ids[99999999999999999999]"} {
			wantError(t, start("/api/conversations/", url.QueryEscape(k)+"=2&recipient_ids[]=3&title=t&message=m"),
				400, "invalid_input", map[string]any{"field": k})
		}
	})
}

// A client generated by oapi-codegen v2 (v2.8.2 from this OpenAPI document) builds a form body
// with runtime.MarshalForm(body, nil), which writes an array as `name[N]`, in url.Values' order
// of keys (recipient_ids[10] before recipient_ids[2]): the server reads it in the indices' order.
func TestRecipientsFromGeneratedClient(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		type startBody struct {
			RecipientIDs []string `json:"recipient_ids"`
			Title        string   `json:"title"`
			Message      string   `json:"message"`
			OpenInvite   bool     `json:"open_invite"`
		}
		body := startBody{Title: "t", Message: "m", OpenInvite: true}
		for i := range 12 {
			body.RecipientIDs = append(body.RecipientIDs, fmt.Sprint(100+i))
		}
		body.RecipientIDs[3] = "x"
		values, err := runtime.MarshalForm(&body, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := []any{}
		for _, v := range body.RecipientIDs {
			want = append(want, v)
		}
		r := e.raw("POST", "/api/conversations/", "application/x-www-form-urlencoded", values.Encode(), key(keyAlice))
		wantError(t, r, 400, "invalid_recipients", map[string]any{"user_ids": want})
		body.RecipientIDs = []string{"3", "2"}
		if values, err = runtime.MarshalForm(&body, nil); err != nil {
			t.Fatal(err)
		}
		r = e.raw("POST", "/api/conversations/", "application/x-www-form-urlencoded", values.Encode(), key(keyAlice))
		id := conversationOf(t, r)
		c := e.get(id, key(keyAlice)).json(t)["conversation"].(map[string]any)
		if c["open_invite"] != true || fmt.Sprint(c["recipient_count"]) != "2" {
			t.Fatalf("generated client's conversation: %v", c)
		}
	})
}

// conversationOf is the path of the conversation a start answered with.
func conversationOf(t *testing.T, r response) string {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	return fmt.Sprintf("/api/conversations/%d", num(t, r.json(t), "conversation", "conversation_id"))
}
