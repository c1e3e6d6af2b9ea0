package httpapi

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"
	"unicode/utf8"

	"forumstats.local/forum-svc/internal/conversation"
)

// appendJSONString must write exactly what encoding/json writes for every string.
func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	cases := []string{
		"", "plain", `quote " and backslash \`, "<script>&amp;</script>", "tab\tnl\nret\rbs\bff\f",
		"\x00\x01\x1f\x7f", "é ü 日本語 🙂", "\u2028\u2029", "bad \xff\xfe utf8", "\xe2\x82", "a\xc0\x80b",
		"\ufffd", "mixed <é>\n\"\u2028\xff",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "Z", " ", "\"", "\\", "<", ">", "&", "\n", "\x00", "\x1f", "é", "日", "🙂",
		"\u2028", "\u2029", "\xff", "\xe2", "\x80", "\ufffd", "\x7f"}
	for range 5000 {
		var b bytes.Buffer
		for range rng.IntN(12) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		cases = append(cases, b.String())
	}
	for range 2000 { // random bytes
		p := make([]byte, rng.IntN(10))
		for i := range p {
			p[i] = byte(rng.UintN(256))
		}
		cases = append(cases, string(p))
	}
	for _, s := range cases {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("appendJSONString(%q) = %s, want %s (valid UTF-8: %v)", s, got, want, utf8.ValidString(s))
		}
	}
}

// appendMessagePage must write exactly what encoding/json writes for a page.
func TestAppendMessagePageMatchesEncodingJSON(t *testing.T) {
	pages := []conversation.MessagePage{
		{},
		{Messages: []conversation.Message{}},
		{
			Messages: []conversation.Message{
				{MessageID: 1, ConversationID: 2, Message: "hello <b>&</b>\n", MessageDate: 1767225600, UserID: 3, Username: "alice", IsUnread: true},
				{MessageID: math.MaxInt64, ConversationID: 1, Message: "é\u2028\xff", MessageDate: 0, UserID: 0, Username: `"bob"`},
				{MessageID: -1, Message: ""},
				{MessageID: 4, MessageParsed: "<b>x</b>", CanEdit: true, CanReact: true, ReactionScore: -2, IsReactedTo: true,
					VisitorReactionID: 5, User: conversation.User{UserID: 7, Username: "<carol>"}},
			},
			Pagination: conversation.Pagination{CurrentPage: 2, LastPage: 50000, PerPage: 20, Shown: 3, Total: math.MaxInt64},
		},
	}
	for _, p := range pages {
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendMessagePage(nil, &p)
		if !ok || !bytes.Equal(got, want) {
			t.Fatalf("appendMessagePage = %s (ok %v), want %s", got, ok, want)
		}
	}
	// A message with its conversation embedded is left to encoding/json.
	p := conversation.MessagePage{Messages: []conversation.Message{{Conversation: &conversation.Conversation{}}}}
	if _, ok := appendMessagePage(nil, &p); ok {
		t.Fatal("appendMessagePage accepted an embedded conversation")
	}
	// So is a message with attachments; an empty list is omitted, as encoding/json omits it.
	p = conversation.MessagePage{Messages: []conversation.Message{{Attachments: []conversation.Attachment{{AttachmentID: 1}}}}}
	if _, ok := appendMessagePage(nil, &p); ok {
		t.Fatal("appendMessagePage accepted a message with attachments")
	}
	p = conversation.MessagePage{Messages: []conversation.Message{{Attachments: []conversation.Attachment{}}}}
	want, _ := json.Marshal(p)
	if got, ok := appendMessagePage(nil, &p); !ok || !bytes.Equal(got, want) {
		t.Fatalf("appendMessagePage = %s (ok %v), want %s", got, ok, want)
	}
}

// flatEncoder writes what encoding/json writes for the structs it can plan, and refuses the others.
func TestFlatEncoderFollowsTheStruct(t *testing.T) {
	type plain struct {
		B      bool   `json:"b"`
		N      int64  // no tag: the field's name
		Skip   string `json:"-"`
		Dash   string `json:"-,"`
		hidden int64
		S      string `json:"s"`
		P      *plain `json:"p,omitempty"`
	}
	v := plain{B: true, N: -5, Skip: "x", Dash: "d<", hidden: 1, S: "é"}
	want, _ := json.Marshal(v)
	enc := newFlatEncoder[plain]()
	got, ok := enc.append(nil, &v)
	if !ok || !bytes.Equal(got, want) {
		t.Fatalf("flatEncoder = %s (ok %v), want %s", got, ok, want)
	}
	v.P = &plain{}
	if _, ok := enc.append(nil, &v); ok {
		t.Fatal("flatEncoder wrote a non-nil pointer")
	}
	type withInt struct{ N int }
	type withOmit struct {
		S string `json:"s,omitempty"`
	}
	type withString struct {
		N int64 `json:"n,string"`
	}
	type withMarshaler struct{ T time.Time }
	type omitFirst struct {
		N int64  `json:"n,omitempty"`
		S string `json:"s"`
	}
	type embedded struct{ plain }
	for name, ok := range map[string]bool{
		"int":       newFlatEncoder[withInt]().ok,
		"omitempty": newFlatEncoder[withOmit]().ok,
		"string":    newFlatEncoder[withString]().ok,
		"marshaler": newFlatEncoder[withMarshaler]().ok,
		"embedded":  newFlatEncoder[embedded]().ok,
		"omitfirst": newFlatEncoder[omitFirst]().ok,
	} {
		if ok {
			t.Errorf("flatEncoder planned a struct with a field it does not write (%s)", name)
		}
	}
	// Nested structs, and int64 fields omitted when 0, as encoding/json writes them.
	type inner struct {
		A int64  `json:"a"`
		O int64  `json:"o,omitempty"`
		S string `json:"s"`
	}
	type outer struct {
		N  int64 `json:"n"`
		O  int64 `json:"o,omitempty"`
		In inner `json:"In"`
		B  bool  `json:"b"`
		E  inner
	}
	nested := newFlatEncoder[outer]()
	for _, v := range []outer{{}, {N: 1, O: 2, In: inner{A: 3, O: 4, S: "<"}, B: true, E: inner{O: -1}}} {
		want, _ := json.Marshal(v)
		if got, ok := nested.append(nil, &v); !ok || !bytes.Equal(got, want) {
			t.Fatalf("flatEncoder = %s (ok %v), want %s", got, ok, want)
		}
	}
	if !messageEncoder.ok || !paginationEncoder.ok {
		t.Fatal("flatEncoder cannot plan conversation.Message or conversation.Pagination")
	}
}
