package badinput

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The bad input of the conversations API: every field of every write and of the list, each case
// with one fault and the answer forum-svc's error table (README, "The conversations API") gives it.

func invalidInput(field string) Outcome {
	return Outcome{Status: 400, Code: "invalid_input", Params: map[string]any{"field": field}}
}

func missingInput(fields ...string) Outcome {
	return Outcome{Status: 400, Code: "required_input_missing", Params: map[string]any{"missing": fields}}
}

// missingRecipients: "field names as sent" is `recipient_ids[]` on the wire, `recipient_ids` in
// the README's words; either spelling passes.
var missingRecipients = []Outcome{missingInput("recipient_ids"), missingInput("recipient_ids[]")}

func invalidRecipients(values ...string) Outcome {
	return Outcome{Status: 400, Code: "invalid_recipients", Params: map[string]any{"user_ids": values}}
}

func tooManyRecipients(max int) Outcome {
	return Outcome{Status: 400, Code: "too_many_recipients", Params: map[string]any{"max": max}}
}

// fieldAttachmentKey names the attachment key of a start, a reply or an edit.
const fieldAttachmentKey = "attachment_key"

// invalidAttachmentKey is the answer to a well-formed attachment key that names no key.
var invalidAttachmentKey = Outcome{Status: 400, Code: "invalid_attachment_key"}

// attachmentKeyShape tells whether s is 32 lowercase hexadecimal digits, the shape of a key.
func attachmentKeyShape(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// forumMaxFields is forum-svc's bound on the form fields of a write (body and query string
// together): the largest valid start, 1,000 recipients, the current user and four more fields.
const forumMaxFields = 1005

// tooManyFields is the answer to a write with more fields than forumMaxFields.
var tooManyFields = Outcome{Status: 400, Code: "too_many_fields", Params: map[string]any{"max": forumMaxFields}}

func tooLong(field string, max int) Outcome {
	return Outcome{Status: 400, Code: field + "_too_long", Params: map[string]any{"max": max}}
}

// form is an ordered list of fields.
type form [][2]string

// urlencoded is the form as an application/x-www-form-urlencoded body (every byte of a name or
// value escaped but raw ones, which go as they are: a malformed escape).
func (f form) urlencoded() string {
	parts := make([]string, len(f))
	for i, kv := range f {
		parts[i] = escapeAll(kv[0]) + "=" + kv[1]
	}
	return strings.Join(parts, "&")
}

// field is a form field of value v (escaped, or raw for a malformed escape).
func field(name string, v value) [2]string { return [2]string{name, v.query()} }

// text is a form field of the plain text s.
func text(name, s string) [2]string { return [2]string{name, escapeAll(s)} }

// multipartBoundary separates the parts of the corpus's multipart bodies.
const multipartBoundary = "badinput-7f3a"

// multipart is the form as a multipart/form-data body (values decoded: a raw escape goes as is).
func (f form) multipart() string {
	var b strings.Builder
	for _, kv := range f {
		v := value{RawQuery: kv[1]}
		if dec, ok := v.queryDecoded(); ok {
			v.Dec = dec
		} else {
			v.Dec = kv[1]
		}
		fmt.Fprintf(&b, "--%s\r\nContent-Disposition: form-data; name=%q\r\n\r\n%s\r\n", multipartBoundary, kv[0], v.Dec)
	}
	b.WriteString("--" + multipartBoundary + "--\r\n")
	return b.String()
}

// with returns f with name's fields replaced by fields (appended when f has none).
func (f form) with(name string, fields ...[2]string) form {
	var out form
	done := false
	for _, kv := range f {
		if kv[0] != name {
			out = append(out, kv)
		} else if !done {
			out = append(out, fields...)
			done = true
		}
	}
	if !done {
		out = append(out, fields...)
	}
	return out
}

func (f form) without(name string) form { return f.with(name) }

// sent is the value as the service receives it: decoded, or as is when its escape is broken.
func (v value) sent() string {
	if v.RawQuery != "" {
		return v.RawQuery
	}
	return v.Dec
}

// positiveID tells whether s is a positive integer of digits only (leading zeros allowed).
func positiveID(s string) bool {
	return isDigits(s, len(s)) && strings.TrimLeft(s, "0") != ""
}

// ambiguousNumber are values the documented rules do not say are malformed numbers or not (a sign, a
// space around digits): the corpus leaves them out of id, recipient and filter fields.
func ambiguousNumber(s string) bool {
	t := strings.TrimSpace(s)
	t = strings.TrimPrefix(t, "+")
	return t == "" || isDigits(t, len(t)) && t != s
}

// textOutcome is the answer to s as a required title or message (name) of at most max code
// points, ok false when s is a valid one: not UTF-8 or with NUL is malformed; after trimming,
// without a visible character is missing; a character the field may not hold is malformed
// (refusedText); longer than max is too long.
func textOutcome(name, s string, max int) (Outcome, bool) {
	if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		return invalidInput(name), true
	}
	t := strings.TrimSpace(s)
	switch {
	case strings.IndexFunc(t, visibleRune) < 0:
		return missingInput(name), true
	case refusedText(name, t):
		return invalidInput(name), true
	case utf8.RuneCountInString(t) > max:
		return tooLong(name, max), true
	}
	return Outcome{}, false
}

// visibleRune tells whether r shows on a screen: not white space, a control, a format character,
// a default-ignorable filler, a variation selector nor the blank braille pattern.
func visibleRune(r rune) bool {
	return !unicode.IsSpace(r) && !unicode.In(r, unicode.Cc, unicode.Cf, unicode.Other_Default_Ignorable_Code_Point,
		unicode.Variation_Selector) && r != '\u2800'
}

// refusedText tells whether the title or message t holds a character forum-svc refuses there: in
// a title any control, format character (Cf) or line or paragraph separator; in a message a
// control but the tab, LF and the CR of a CRLF, a bidirectional embedding, override or isolate,
// or a line or paragraph separator.
func refusedText(name, t string) bool {
	for i, r := range t {
		switch {
		case unicode.In(r, unicode.Cc, unicode.Zl, unicode.Zp) && name == "title":
			return true
		case name == "title" && unicode.Is(unicode.Cf, r):
			return true
		case r == '\t', r == '\n':
		case r == '\r':
			if !strings.HasPrefix(t[i:], "\r\n") {
				return true
			}
		case unicode.In(r, unicode.Cc, unicode.Zl, unicode.Zp):
			return true
		case unicode.Is(unicode.Bidi_Control, r) && r != '\u200e' && r != '\u200f' && r != '\u061c':
			return true
		}
	}
	return false
}

// hostileTexts are titles and messages built to spoof what a reader sees (terminal escapes,
// forged lines, reordered or invisible text), each with what the service answers as a title and
// as a message (textOutcome).
var hostileTexts = []struct{ label, s string }{
	{"terminal-clear", "\x1b[2J\x1b[H"},
	{"terminal-title", "\x1b]0;owned\a"},
	{"terminal-color", "ok\x1b[31m red"},
	{"bell", "ding\a"},
	{"del", "a\x7fb"},
	{"c1-csi", "a\u009b31mb"},
	{"c1-nel", "a\u0085b"},
	{"lf", "one\ntwo"},
	{"crlf", "one\r\nFake: two"},
	{"lone-cr", "one\rtwo"},
	{"tab", "a\tb"},
	{"rtl-override", "invoice_\u202egnp.exe"},
	{"ltr-embedding", "a\u202ab\u202c"},
	{"rtl-isolate", "a\u2067b\u2069"},
	{"line-separator", "a\u2028b"},
	{"paragraph-separator", "a\u2029b"},
	{"zero-width-inside", "a\u200bb"},
	{"bom-inside", "a\ufeffb"},
	{"zwj-emoji", "\U0001F468\u200d\U0001F469\u200d\U0001F467"},
	{"only-zero-width-space", "\u200b"},
	{"only-zero-width", "\u200b\u200c\u200d\u2060\ufeff"},
	{"only-override", "\u202e"},
	{"only-hangul-filler", "\u3164"},
	{"only-braille-blank", "\u2800"},
	{"only-variation-selector", "\ufe0f"},
}

// badBooleans are values that are none of 1/0, true/false, on/off, yes/no (the words in any case).
var badBooleans = []string{"", "y", "n", "ja", "nein", "truee", "yes!", "2", "-1", "01", "1.0", " 1", "0 ", "on ", "t", "f", "null", "\x00", "1\x00", "\xff"}

// conversationCases are the bad inputs of the conversations API's fields on the seeded data d.
func conversationCases(r *rand.Rand, d ForumData, values []value) []Case {
	var cs []Case
	id := func(v int64) string { return strconv.FormatInt(v, 10) }
	user := [][2]string{{"Forum-Api-Key", d.UserKey}}
	formType := [2]string{"Content-Type", "application/x-www-form-urlencoded"}
	post := func(name, method, target string, f form, extra [][2]string, want ...Outcome) {
		hdr := append(append(append([][2]string{}, user...), formType), extra...)
		cs = append(cs, Case{Name: name, Method: method, Target: target, Header: hdr, Body: []byte(f.urlencoded()), Want: want})
	}
	postMultipart := func(name, target string, f form, want ...Outcome) {
		hdr := append(append([][2]string{}, user...), [2]string{"Content-Type", "multipart/form-data; boundary=" + multipartBoundary})
		cs = append(cs, Case{Name: name, Method: http.MethodPost, Target: target, Header: hdr, Body: []byte(f.multipart()), Want: want})
	}
	slash := func(p string) string { return p + pick(r, "", "/") }
	maxMsg, maxRcpt := d.MessageMaxLength, d.MaxRecipients

	startPath := func() string { return slash("/api/conversations") }
	replyPath := func() string { return slash("/api/conversation-messages") }
	convPath := func(c int64, suffix string) string { return "/api/conversations/" + id(c) + suffix }
	msgPath := func(m int64) string { return slash("/api/conversation-messages/" + id(m)) }
	updateTarget, leaveTarget, replyTarget, starTarget, inviteTarget := d.Spare, d.Spare+1, d.Spare+2, d.Spare+3, d.Spare+4

	rcpt := func(v string) [2]string { return [2]string{"recipient_ids[]", v} }
	rcpts := func(vs ...string) [][2]string {
		out := make([][2]string, len(vs))
		for i, v := range vs {
			out[i] = rcpt(escapeAll(v))
		}
		return out
	}
	start := form{rcpt("2"), text("title", "Hello"), text("message", "Hi")}
	reply := form{text("conversation_id", id(replyTarget)), text("message", "Hi")}
	edit := form{text("message", "Edited")}
	invite := form{rcpt("3")}

	// Long texts: just over the limits, in ASCII and in 4-byte code points; far over, within the
	// body limit; 10 MB, over the body limit (413, the documented answer to a body over 1 MiB).
	long := []struct {
		label, s string
		msg      bool // a message (else a title)
	}{
		{"title-101", strings.Repeat("t", 101), false},
		{"title-101-emoji", strings.Repeat("\U0001F600", 101), false},
		{"title-10KB", strings.Repeat("t", 10<<10), false},
		{"message-max+1", strings.Repeat("m", maxMsg+1), true},
		{"message-max+1-emoji", strings.Repeat("\U0001F600", maxMsg+1), true},
		{"message-max+1-combining", strings.Repeat("e\u0301", (maxMsg+2)/2), true},
		{"message-300KB", strings.Repeat("m", 300<<10), true},
	}
	tenMB := strings.Repeat("m", 10<<20)

	// 1. Starting a conversation.
	post("start/missing-all", http.MethodPost, startPath(), form{}, nil, anyMissing)
	post("start/missing-recipients", http.MethodPost, startPath(), start.without("recipient_ids[]"), nil, missingRecipients...)
	post("start/missing-title", http.MethodPost, startPath(), start.without("title"), nil, missingInput("title"))
	post("start/missing-message", http.MethodPost, startPath(), start.without("message"), nil, missingInput("message"))
	for _, blank := range []string{"", " ", "\t\r\n", "  \n  "} {
		post("start/blank-title", http.MethodPost, startPath(), start.with("title", text("title", blank)), nil, missingInput("title"))
		post("start/blank-message", http.MethodPost, startPath(), start.with("message", text("message", blank)), nil, missingInput("message"))
	}
	post("start/only-self", http.MethodPost, startPath(), start.with("recipient_ids[]", rcpt("1")), nil, missingRecipients...)
	// 10,000 recipient fields are more than any write may have: refused while the body is read.
	post("start/only-self-10000", http.MethodPost, startPath(), start.with("recipient_ids[]", repeat(rcpt("1"), 10000)...), nil, tooManyFields)
	// More recipient values than maxRecipients and the current user, all one id: refused before
	// any is read.
	post("start/one-recipient-repeated", http.MethodPost, startPath(), start.with("recipient_ids[]", repeat(rcpt("2"), maxRcpt+2)...), nil, tooManyRecipients(maxRcpt))
	// Field bombs: a body of 110,000 tiny fields, urlencoded or multipart (one part more than the
	// bound), and a query string of one field more than the bound on a write.
	bomb := strings.TrimSuffix(strings.Repeat("f=abcdef&", 110_000), "&")
	cs = append(cs, Case{Name: "fields/urlencoded-bomb", Method: http.MethodPost, Target: slash(convPath(d.Own, "/mark-unread")),
		Header: append(append([][2]string{}, user...), formType), Body: []byte(bomb), Want: []Outcome{tooManyFields}})
	postMultipart("fields/multipart-bomb", slash(convPath(d.Own, "/mark-unread")), repeat(text("f", "v"), forumMaxFields+1), tooManyFields)
	post("fields/query-bomb", http.MethodPost, slash(convPath(d.Own, "/mark-unread"))+"?"+strings.TrimSuffix(strings.Repeat("q&", forumMaxFields+1), "&"), form{}, nil, tooManyFields)
	post("start/unknown-users", http.MethodPost, startPath(), start.with("recipient_ids[]", rcpts("51", "60")...), nil, invalidRecipients("51", "60"))
	post("start/unknown-and-known", http.MethodPost, startPath(), start.with("recipient_ids[]", rcpts("2", id(int64(d.Users)+1))...), nil, invalidRecipients(id(int64(d.Users)+1)))
	post("start/malformed-and-known", http.MethodPost, startPath(), start.with("recipient_ids[]", rcpts("2", "-2", "3")...), nil, invalidRecipients("-2"))
	// Every offending value at once, malformed and unknown, indexed ones first by index.
	post("start/malformed-and-unknown", http.MethodPost, startPath(), start.with("recipient_ids[]", rcpts("x", id(int64(d.Users)+1), "2")...), nil, invalidRecipients("x", id(int64(d.Users)+1)))
	post("start/indexed-malformed-and-unknown", http.MethodPost, startPath(), start.with("recipient_ids[]",
		[2]string{"recipient_ids", "-3"}, [2]string{"recipient_ids[1]", "y"}, [2]string{"recipient_ids[0]", id(int64(d.Users) + 1)}), nil,
		invalidRecipients(id(int64(d.Users)+1), "y", "-3"))
	for _, k := range []string{"recipient_ids[x]", "recipient_ids[1][2]", "recipient_ids[99999999999999999999]"} {
		post("start/malformed-array-key", http.MethodPost, startPath(), start.with("recipient_ids[]", [2]string{k, "2"}), nil, invalidInput(k))
	}
	post("start/empty-recipient", http.MethodPost, startPath(), start.with("recipient_ids[]", rcpt("")), nil, append([]Outcome{invalidRecipients("")}, missingRecipients...)...)
	for _, v := range values {
		if ambiguousNumber(v.sent()) || positiveID(v.sent()) && len(v.sent()) < 4 {
			continue
		}
		post("start/recipient/"+v.Label, http.MethodPost, startPath(), start.with("recipient_ids[]", field("recipient_ids[]", v)), nil, invalidRecipients(v.sent()))
		if r.IntN(2) == 0 {
			post("invite/recipient/"+v.Label, http.MethodPost, convPath(inviteTarget, "/invite"), invite.with("recipient_ids[]", field("recipient_ids[]", v)), nil, invalidRecipients(v.sent()))
		}
	}
	many := func(n, first, users int) [][2]string { // n entries cycling over users ids from first
		out := make([][2]string, n)
		for i := range out {
			out[i] = rcpt(strconv.Itoa(first + i%users))
		}
		return out
	}
	post("start/recipients-max+1", http.MethodPost, startPath(), start.with("recipient_ids[]", many(maxRcpt+1, 2, maxRcpt+1)...), nil, tooManyRecipients(maxRcpt))
	post("start/recipients-10000-cycling", http.MethodPost, startPath(), start.with("recipient_ids[]", many(10000, 2, d.Users-1)...), nil, tooManyFields)
	postMultipart("start/multipart-recipients-10000-cycling", startPath(), start.with("recipient_ids[]", many(10000, 2, d.Users-1)...), tooManyFields)
	post("start/recipients-10000-unknown", http.MethodPost, startPath(), start.with("recipient_ids[]", many(10000, d.Users+1, 10000)...), nil, tooManyFields)
	post("start/recipients-10000-malformed", http.MethodPost, startPath(), start.with("recipient_ids[]", repeat(rcpt("x"), 10000)...), nil, tooManyFields)
	post("start/recipients-10000-huge", http.MethodPost, startPath(), start.with("recipient_ids[]", repeat(rcpt(strings.Repeat("9", 25)), 10000)...), nil, tooManyFields)
	for _, name := range []string{"conversation_open", "open_invite"} {
		for _, b := range badBooleans {
			post("start/"+name, http.MethodPost, startPath(), start.with(name, text(name, b)), nil, invalidInput(name))
		}
	}
	for _, l := range long {
		name, max := "title", 100
		if l.msg {
			name, max = "message", maxMsg
		}
		post("start/"+l.label, http.MethodPost, startPath(), start.with(name, text(name, l.s)), nil, tooLong(name, max))
	}
	post("start/message-10MB", http.MethodPost, startPath(), start.with("message", text("message", tenMB)), nil, forumTooLarge)
	postMultipart("start/multipart-title-101", startPath(), start.with("title", text("title", strings.Repeat("t", 101))), tooLong("title", 100))
	postMultipart("start/multipart-invalid-utf8", startPath(), start.with("message", text("message", "caf\xe9")), invalidInput("message"))
	post("start/repeated-title", http.MethodPost, startPath(), start.with("title", text("title", "a"), text("title", "b")), nil, invalidInput("title"))
	for _, v := range values {
		for _, name := range []string{"title", "message"} {
			max := 100
			if name == "message" {
				max = maxMsg
			}
			if want, bad := textOutcome(name, v.sent(), max); bad {
				post("start/"+name+"/"+v.Label, http.MethodPost, startPath(), start.with(name, field(name, v)), nil, want)
			}
		}
	}
	// Titles and messages that spoof what a reader sees, on every write that takes one.
	for _, h := range hostileTexts {
		for _, name := range []string{"title", "message"} {
			max := 100
			if name == "message" {
				max = maxMsg
			}
			want, bad := textOutcome(name, h.s, max)
			if !bad {
				continue
			}
			post("start/"+name+"/"+h.label, http.MethodPost, startPath(), start.with(name, text(name, h.s)), nil, want)
			if name == "title" {
				post("update/title/"+h.label, http.MethodPost, slash(convPath(updateTarget, "")), form{text("title", h.s)}, nil, want)
				continue
			}
			post("reply/message/"+h.label, http.MethodPost, replyPath(), reply.with("message", text("message", h.s)), nil, want)
			post("edit/message/"+h.label, http.MethodPost, msgPath(d.OwnMessage), edit.with("message", text("message", h.s)), nil, want)
		}
	}
	// The Idempotency-Key header (1 to 255 printable ASCII characters); net/http refuses control
	// characters in a header itself.
	keys := []struct {
		label, key string
		ctl        bool
	}{
		{"empty", "", false}, {"256", strings.Repeat("k", 256), false}, {"10KB", strings.Repeat("k", 10<<10), false},
		{"tab", "a\tb", false}, {"latin1", "caf\xe9", false}, {"utf8", "caf\u00e9", false}, {"invalid-utf8", "\xff\xfe", false},
		{"soh", "a\x01b", true}, {"del", "a\x7fb", true}, {"nul", "a\x00b", true},
	}
	for _, k := range keys {
		for _, op := range []struct {
			name, path string
			f          form
		}{{"start", startPath(), start}, {"reply", replyPath(), reply}} {
			post("idempotency-key/"+op.name+"/"+k.label, http.MethodPost, op.path, op.f, [][2]string{{"Idempotency-Key", k.key}}, invalidIdempotency)
			cs[len(cs)-1].NetHTTP = k.ctl
		}
	}

	// 2. Replying.
	post("reply/missing-conversation", http.MethodPost, replyPath(), reply.without("conversation_id"), nil, missingInput("conversation_id"))
	post("reply/blank-conversation", http.MethodPost, replyPath(), reply.with("conversation_id", text("conversation_id", " \t")), nil, missingInput("conversation_id"))
	post("reply/missing-message", http.MethodPost, replyPath(), reply.without("message"), nil, missingInput("message"))
	post("reply/blank-message", http.MethodPost, replyPath(), reply.with("message", text("message", " \r\n ")), nil, missingInput("message"))
	post("reply/missing-all", http.MethodPost, replyPath(), form{}, nil, anyMissing)
	for _, c := range []string{id(d.Foreign), id(d.Missing), id(d.Left), "0", "-" + id(replyTarget), id(replyTarget) + ".0", id(replyTarget) + "abc", "0x" + strconv.FormatInt(replyTarget, 16)} {
		post("reply/conversation/"+c, http.MethodPost, replyPath(), reply.with("conversation_id", text("conversation_id", c)), nil, forumConvNotFound)
	}
	post("reply/conversation/repeated", http.MethodPost, replyPath(), reply.with("conversation_id", text("conversation_id", id(replyTarget)), text("conversation_id", id(d.Foreign))), nil, forumConvNotFound)
	for _, v := range values {
		if ambiguousNumber(v.sent()) || strings.TrimSpace(v.sent()) == "" {
			continue
		}
		post("reply/conversation/"+v.Label, http.MethodPost, replyPath(), reply.with("conversation_id", field("conversation_id", v)), nil, forumConvNotFound)
		if want, bad := textOutcome("message", v.sent(), maxMsg); bad {
			post("reply/message/"+v.Label, http.MethodPost, replyPath(), reply.with("message", field("message", v)), nil, want)
		}
	}
	post("reply/closed", http.MethodPost, replyPath(), reply.with("conversation_id", text("conversation_id", id(d.Closed))), nil, conversationClosed)
	for _, l := range long {
		if l.msg {
			post("reply/"+l.label, http.MethodPost, replyPath(), reply.with("message", text("message", l.s)), nil, tooLong("message", maxMsg))
		}
	}
	post("reply/message-10MB", http.MethodPost, replyPath(), reply.with("message", text("message", tenMB)), nil, forumTooLarge)

	// The attachment key a start, a reply or an edit may name: one value of 32 lowercase hex
	// digits (else invalid_input), naming a key that exists (else invalid_attachment_key). Each
	// case's other fields are valid, so the key is its one fault.
	for _, w := range []struct {
		name, path string
		f          form
	}{{"start", startPath(), start}, {"reply", replyPath(), reply}, {"edit", msgPath(d.OwnMessage), edit}} {
		key := func(label string, want Outcome, vs ...[2]string) {
			post(w.name+"/attachment-key/"+label, http.MethodPost, w.path, w.f.with(fieldAttachmentKey, vs...), nil, want)
		}
		for _, v := range values {
			if s := strings.TrimSpace(v.sent()); s == "" || attachmentKeyShape(s) {
				continue
			}
			key(v.Label, invalidInput(fieldAttachmentKey), field(fieldAttachmentKey, v))
		}
		key("uppercase", invalidInput(fieldAttachmentKey), text(fieldAttachmentKey, strings.Repeat("A", 32)))
		key("33-digits", invalidInput(fieldAttachmentKey), text(fieldAttachmentKey, strings.Repeat("a", 33)))
		key("31-digits", invalidInput(fieldAttachmentKey), text(fieldAttachmentKey, strings.Repeat("a", 31)))
		key("repeated", invalidInput(fieldAttachmentKey), text(fieldAttachmentKey, strings.Repeat("a", 32)), text(fieldAttachmentKey, strings.Repeat("b", 32)))
		key("unknown", invalidAttachmentKey, text(fieldAttachmentKey, strings.Repeat("0", 32)))
	}

	// 3. Editing a message.
	own := msgPath(d.OwnMessage)
	post("edit/missing-message", http.MethodPost, own, form{}, nil, missingInput("message"))
	post("edit/blank-message", http.MethodPost, own, edit.with("message", text("message", "\t \n")), nil, missingInput("message"))
	post("edit/invalid-utf8", http.MethodPost, own, edit.with("message", text("message", "ok \xc3\x28")), nil, invalidInput("message"))
	post("edit/nul", http.MethodPost, own, edit.with("message", text("message", "a\x00b")), nil, invalidInput("message"))
	for _, l := range long {
		if l.msg {
			post("edit/"+l.label, http.MethodPost, own, edit.with("message", text("message", l.s)), nil, tooLong("message", maxMsg))
		}
	}
	post("edit/message-10MB", http.MethodPost, own, edit.with("message", text("message", tenMB)), nil, forumTooLarge)
	post("edit/others-message", http.MethodPost, msgPath(d.JoinedMessage), edit, nil, noPermission)
	for _, m := range []int64{d.ForeignMessage, d.LeftMessage, d.Missing} {
		post("edit/not-visible", http.MethodPost, msgPath(m), edit, nil, forumMsgNotFound)
	}

	// 4. Updating a conversation.
	upd := slash(convPath(updateTarget, ""))
	post("update/blank-title", http.MethodPost, upd, form{text("title", "  ")}, nil, missingInput("title"))
	post("update/invalid-utf8-title", http.MethodPost, upd, form{text("title", "\xfe\xff")}, nil, invalidInput("title"))
	post("update/repeated-title", http.MethodPost, upd, form{text("title", "a"), text("title", "b")}, nil, invalidInput("title"))
	for _, l := range long {
		if !l.msg {
			post("update/"+l.label, http.MethodPost, upd, form{text("title", l.s)}, nil, tooLong("title", 100))
		}
	}
	for _, name := range []string{"conversation_open", "open_invite"} {
		for _, b := range badBooleans {
			post("update/"+name, http.MethodPost, upd, form{text(name, b)}, nil, invalidInput(name))
		}
	}
	post("update/not-starter", http.MethodPost, slash(convPath(d.Joined, "")), form{text("title", "Mine now")}, nil, noPermission)
	for _, c := range []int64{d.Foreign, d.Left, d.Missing} {
		post("update/not-visible", http.MethodPost, slash(convPath(c, "")), form{text("title", "Mine now")}, nil, forumConvNotFound)
	}

	// 5. Leaving: `ignore` from the body or the query string.
	leave := slash(convPath(leaveTarget, ""))
	for _, b := range badBooleans {
		post("leave/ignore-body", http.MethodDelete, leave, form{text("ignore", b)}, nil, invalidInput("ignore"))
		cs = append(cs, Case{Name: "leave/ignore-query", Method: http.MethodDelete, Target: leave + "?ignore=" + escapeAll(b), Header: user, Want: []Outcome{invalidInput("ignore")}})
	}
	cs = append(cs,
		Case{Name: "leave/ignore-query-bad-escape", Method: http.MethodDelete, Target: leave + "?ignore=%zz", Header: user, Want: []Outcome{invalidInput("ignore")}},
		Case{Name: "leave/ignore-query-repeated", Method: http.MethodDelete, Target: leave + "?ignore=1&ignore=0", Header: user, Want: []Outcome{invalidInput("ignore")}})
	// The body's field is the one read: a bad body value with a good query value is refused.
	post("leave/ignore-body-over-query", http.MethodDelete, leave+"?ignore=1", form{text("ignore", "maybe")}, nil, invalidInput("ignore"))
	for _, c := range []int64{d.Foreign, d.Left, d.Missing} {
		cs = append(cs, Case{Name: "leave/not-visible", Method: http.MethodDelete, Target: slash(convPath(c, "")) + "?ignore=1", Header: user, Want: []Outcome{forumConvNotFound}})
	}

	// 6. Inviting.
	inv := slash(convPath(inviteTarget, "/invite"))
	post("invite/missing", http.MethodPost, inv, form{}, nil, missingRecipients...)
	post("invite/only-self", http.MethodPost, inv, form{rcpt("1")}, nil, missingRecipients...)
	post("invite/unknown-user", http.MethodPost, inv, form{rcpt(id(int64(d.Users) + 1))}, nil, invalidRecipients(id(int64(d.Users)+1)))
	post("invite/recipients-max+1", http.MethodPost, inv, many(maxRcpt+1, 26, maxRcpt+1), nil, tooManyRecipients(maxRcpt))
	post("invite/recipients-10000-cycling", http.MethodPost, inv, many(10000, 2, d.Users-1), nil, tooManyFields)
	post("invite/recipients-10000-malformed", http.MethodPost, inv, repeat(rcpt("-1"), 10000), nil, tooManyFields)
	// Full has maxRecipients recipients: one more is too many "in the conversation".
	post("invite/conversation-full", http.MethodPost, slash(convPath(d.Full, "/invite")), form{rcpt(id(int64(maxRcpt) + 2))}, nil, tooManyRecipients(maxRcpt))
	post("invite/conversation-full-plus-known", http.MethodPost, slash(convPath(d.Full, "/invite")), form{rcpt("2"), rcpt(id(int64(maxRcpt) + 3))}, nil, tooManyRecipients(maxRcpt))
	post("invite/not-allowed", http.MethodPost, slash(convPath(d.Joined, "/invite")), invite, nil, noPermission)
	post("invite/closed", http.MethodPost, slash(convPath(d.Closed, "/invite")), invite, nil, conversationClosed)
	for _, c := range []int64{d.Foreign, d.Left, d.Missing} {
		post("invite/not-visible", http.MethodPost, slash(convPath(c, "/invite")), invite, nil, forumConvNotFound)
	}

	// 7. Starring.
	star := slash(convPath(starTarget, "/star"))
	for _, b := range badBooleans {
		post("star/star", http.MethodPost, star, form{text("star", b)}, nil, invalidInput("star"))
	}
	post("star/repeated", http.MethodPost, star, form{text("star", "1"), text("star", "0")}, nil, invalidInput("star"))
	// A write reads its fields from the query string too.
	for _, b := range badBooleans {
		post("star/query-star", http.MethodPost, star+"?star="+escapeAll(b), form{}, nil, invalidInput("star"))
	}
	for _, c := range []int64{d.Foreign, d.Left, d.Missing} {
		post("star/not-visible", http.MethodPost, slash(convPath(c, "/star")), form{text("star", "1")}, nil, forumConvNotFound)
	}

	// 9. Reacting: reaction_id names one of the six reactions, 1 to 6 (leading zeros allowed).
	react := func(m int64) string { return slash("/api/conversation-messages/" + id(m) + "/react") }
	reactTarget := react(d.JoinedMessage)
	post("react/missing", http.MethodPost, reactTarget, form{}, nil, missingInput("reaction_id"))
	for _, v := range values {
		if n, err := strconv.ParseInt(v.sent(), 10, 64); err == nil && positiveID(v.sent()) && n <= 6 {
			continue // a reaction
		}
		post("react/reaction_id/"+v.Label, http.MethodPost, reactTarget, form{field("reaction_id", v)}, nil, invalidInput("reaction_id"))
	}
	for _, b := range []string{"0", "7", "-1", "1.0", "Like", "9223372036854775808"} {
		post("react/reaction_id", http.MethodPost, reactTarget, form{text("reaction_id", b)}, nil, invalidInput("reaction_id"))
	}
	post("react/repeated", http.MethodPost, reactTarget, form{text("reaction_id", "1"), text("reaction_id", "1")}, nil, invalidInput("reaction_id"))
	post("react/query-reaction_id", http.MethodPost, reactTarget+"?reaction_id=7", form{}, nil, invalidInput("reaction_id"))
	post("react/own-message", http.MethodPost, react(d.OwnMessage), form{text("reaction_id", "1")}, nil, reactOwnContent)
	for _, m := range []int64{d.ForeignMessage, d.LeftMessage, d.Missing} {
		post("react/not-visible", http.MethodPost, react(m), form{text("reaction_id", "1")}, nil, forumMsgNotFound)
	}

	// 8. The list: page and filters.
	get := func(name, query string, want ...Outcome) {
		m := http.MethodGet
		if r.IntN(5) == 0 {
			m = http.MethodHead
		}
		cs = append(cs, Case{Name: name, Method: m, Target: slash("/api/conversations") + "?" + query, Header: user, Want: want})
	}
	for _, v := range values {
		get("list-page/"+v.Label, "page="+v.query(), forumInvalidPage)
		if !ambiguousNumber(v.sent()) && !positiveID(v.sent()) {
			name := pick(r, "starter_id", "receiver_id")
			get("list-filter/"+name+"/"+v.Label, name+"="+v.query(), invalidInput(name))
		}
		if s := v.sent(); s != "1" && s != "0" && s != "true" && s != "false" && s != "" {
			name := pick(r, "starred", "unread")
			get("list-filter/"+name+"/"+v.Label, name+"="+v.query(), invalidInput(name))
		}
	}
	for _, name := range []string{"starred", "unread"} {
		for _, b := range badBooleans {
			get("list-filter/"+name, name+"="+escapeAll(b), invalidInput(name))
		}
		get("list-filter/repeated", name+"=1&"+name+"=0", invalidInput(name))
	}
	for _, name := range []string{"starter_id", "receiver_id"} {
		for _, b := range []string{"0", "-1", "1.0", "0x1", "1e2", "abc", "1;DROP TABLE users"} {
			get("list-filter/"+name, name+"="+escapeAll(b), invalidInput(name))
		}
		get("list-filter/repeated", name+"=1&"+name+"=2", invalidInput(name))
	}
	pastLast := Outcome{Status: 400, Code: "invalid_page", Params: map[string]any{"max": d.ListLastPage}}
	for _, p := range []string{strconv.Itoa(d.ListLastPage + 1), "9223372036854775807", "99999999999999999999"} {
		get("list-page/past-last", "page="+p, pastLast)
	}
	emptyPast := Outcome{Status: 400, Code: "invalid_page", Params: map[string]any{"max": 1}}
	get("list-page/past-last-of-empty", "starter_id="+id(int64(d.Users)+1)+"&page=2", emptyPast)
	for _, q := range []string{"page=1&page=1", "page=1&page=2", "page=&page="} {
		get("list-page/repeated", q, forumInvalidPage)
	}
	return cs
}

func repeat[T any](v T, n int) []T {
	out := make([]T, n)
	for i := range out {
		out[i] = v
	}
	return out
}
