package conversation

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"forumstats.local/forum-svc/internal/decimal"
)

var testOptions = Options{DiscussionsPerPage: 20, MaxRecipients: 3, MessageMaxLength: 10}

func TestFieldsBool(t *testing.T) {
	cases := []struct {
		values        []string
		def, want, ok bool
	}{
		{nil, true, true, true},
		{nil, false, false, true},
		{[]string{"1"}, false, true, true},
		{[]string{"true"}, false, true, true},
		{[]string{"0"}, true, false, true},
		{[]string{"false"}, true, false, true},
		{[]string{"TRUE"}, false, true, true},
		{[]string{"on"}, false, true, true},
		{[]string{"Yes"}, false, true, true},
		{[]string{"OFF"}, true, false, true},
		{[]string{"no"}, true, false, true},
		{[]string{""}, true, false, false},
		{[]string{"y"}, false, false, false},
		{[]string{"t"}, false, false, false},
		{[]string{"none"}, false, false, false},
		{[]string{" 1"}, false, false, false},
		{[]string{"true "}, false, false, false},
		{[]string{"2"}, false, false, false},
		{[]string{"-1"}, false, false, false},
		{[]string{"1", "1"}, false, false, false},
	}
	for _, c := range cases {
		got, present, err := Fields{"b": c.values}.Bool("b", c.def)
		if !c.ok {
			var ie *InvalidInputError
			if !errors.As(err, &ie) || ie.Field != "b" {
				t.Errorf("Bool(%q) err = %v; want invalid_input b", c.values, err)
			}
			continue
		}
		if err != nil || got != c.want || present != (c.values != nil) {
			t.Errorf("Bool(%q) = %v, %v, %v; want %v", c.values, got, present, err, c.want)
		}
	}
}

func TestFieldsText(t *testing.T) {
	cases := []struct {
		values []string
		want   string
		blank  bool
		ok     bool
	}{
		{nil, "", true, true},
		{[]string{""}, "", true, true},
		{[]string{" \t\n"}, "", true, true},
		{[]string{"  hi  "}, "hi", false, true},
		{[]string{"привет"}, "привет", false, true},
		{[]string{"a", "b"}, "", false, false},
		{[]string{"bad \xff utf-8"}, "", false, false},
		{[]string{"nul \x00 inside"}, "", false, false},
	}
	for _, c := range cases {
		got, blank, err := Fields{"t": c.values}.Text("t")
		if (err == nil) != c.ok || got != c.want || blank != c.blank {
			t.Errorf("Text(%q) = %q, %v, %v; want %q, %v, ok=%v", c.values, got, blank, err, c.want, c.blank, c.ok)
		}
	}
}

func TestCheckLength(t *testing.T) {
	// Code points, not bytes: ten 4-byte characters fit a maximum of 10.
	if err := CheckLength("message", strings.Repeat("😀", 10), 10); err != nil {
		t.Fatal(err)
	}
	var tl *TooLongError
	if err := CheckLength("message", strings.Repeat("я", 11), 10); !errors.As(err, &tl) || tl.Max != 10 || tl.Field != "message" {
		t.Fatalf("11 characters: %v", err)
	}
}

func TestParseRecipients(t *testing.T) {
	cases := []struct {
		values []string
		ids    []int64
		bad    []string // invalid_recipients values
		tooMny bool
	}{
		{[]string{"2", "3"}, []int64{2, 3}, nil, false},
		{[]string{"3", "2", "3", "02"}, []int64{3, 2}, nil, false}, // repeats count once
		{[]string{"1", "2"}, []int64{2}, nil, false},               // the current user is dropped
		{[]string{"1"}, nil, nil, false},
		{[]string{"0", "-2", "x", ""}, nil, []string{"0", "-2", "x", ""}, false},
		{[]string{"9223372036854775808", "2"}, nil, []string{"9223372036854775808"}, false},
		{[]string{"2", "3", "4", "5"}, nil, nil, true},
		{[]string{"1", "2", "3", "4"}, []int64{2, 3, 4}, nil, false}, // max counts others only
		{[]string{"2", "2", "2", "2"}, []int64{2}, nil, false},       // max+1 values: may all be valid
		// More than max+1 values are refused before any is read, repeats and bad values alike.
		{[]string{"2", "2", "2", "2", "2"}, nil, nil, true},
		{[]string{"x", "2", "3", "4", "5"}, nil, nil, true},
	}
	for _, c := range cases {
		rs, err := ParseRecipients(c.values, 1, 3)
		var ir *InvalidRecipientsError
		var tm *TooManyRecipientsError
		switch {
		case c.bad != nil:
			if !errors.As(err, &ir) || !slices.Equal(ir.Values, c.bad) {
				t.Errorf("%q: %v; want invalid %q", c.values, err, c.bad)
			}
		case c.tooMny:
			if !errors.As(err, &tm) || tm.Max != 3 {
				t.Errorf("%q: %v; want too many (3)", c.values, err)
			}
		case err != nil || !slices.Equal(rs.IDs, c.ids):
			t.Errorf("%q: %v, %v; want %v", c.values, rs.IDs, err, c.ids)
		}
	}
	// Unknown users are named as sent, in the order sent (not sorted: "9" before "010").
	rs, _ := ParseRecipients([]string{"9", "2", "010", "8"}, 1, 4)
	err := rs.Unknown(&UnknownUsersError{IDs: []int64{8, 10, 9}})
	var ir *InvalidRecipientsError
	if !errors.As(err, &ir) || !slices.Equal(ir.Values, []string{"9", "010", "8"}) {
		t.Fatalf("unknown users as sent: %v", err)
	}
}

// Invalid names the malformed values and the unknown users' values together, in the order sent,
// each once; the well-formed ids of a refused list are still returned for the look-up.
func TestRecipientsInvalid(t *testing.T) {
	cases := []struct {
		values  []string
		unknown []int64
		want    []string // nil: no error
	}{
		{[]string{"2", "3"}, nil, nil},
		{[]string{"2", "3"}, []int64{7}, nil},
		{[]string{"x", "2", "3"}, []int64{3}, []string{"x", "3"}},
		{[]string{"3", "x", "2"}, []int64{3, 2}, []string{"3", "x", "2"}},
		{[]string{"03", "x", "3", "x"}, []int64{3}, []string{"03", "x", "3"}},
		{[]string{"1", "x"}, []int64{1}, []string{"1", "x"}},
	}
	for _, c := range cases {
		rs, _ := ParseRecipients(c.values, 1, 10)
		err := rs.Invalid(c.unknown)
		var ir *InvalidRecipientsError
		if c.want == nil {
			if err != nil {
				t.Errorf("%q unknown %v: %v; want none", c.values, c.unknown, err)
			}
			continue
		}
		if !errors.As(err, &ir) || !slices.Equal(ir.Values, c.want) {
			t.Errorf("%q unknown %v: %v; want %q", c.values, c.unknown, err, c.want)
		}
	}
	rs, err := ParseRecipients([]string{"x", "4", "1", "4", "5"}, 1, 10)
	var ir *InvalidRecipientsError
	if !errors.As(err, &ir) || !slices.Equal(ir.Values, []string{"x"}) || !slices.Equal(rs.IDs, []int64{4, 5}) {
		t.Fatalf("refused list: %v, ids %v", err, rs.IDs)
	}
}

func TestParseStart(t *testing.T) {
	long := strings.Repeat("t", MaxTitleLength+1)
	cases := []struct {
		name string
		f    Fields
		want string // the error, printed; "" for success
	}{
		{"ok", Fields{"recipient_ids": {"2", "3"}, "title": {" Hi "}, "message": {"hello"}}, ""},
		{"plain name", Fields{"recipient_ids": {"2"}, "title": {"Hi"}, "message": {"hello"}}, ""},
		{"nothing", Fields{}, "missing [recipient_ids title message]"},
		{"blank", Fields{"recipient_ids": {"2"}, "title": {"  "}, "message": {"\n"}}, "missing [title message]"},
		{"only me", Fields{"recipient_ids": {"1"}, "title": {"Hi"}, "message": {"m"}}, "missing [recipient_ids]"},
		{"only me, no title", Fields{"recipient_ids": {"1"}, "message": {"m"}}, "missing [recipient_ids title]"},
		{"bad recipient", Fields{"recipient_ids": {"2", "x"}, "title": {"Hi"}, "message": {"m"}}, "recipients [x]"},
		{"too many", Fields{"recipient_ids": {"2", "3", "4", "5"}, "title": {"Hi"}, "message": {"m"}}, "too many 3"},
		{"title", Fields{"recipient_ids": {"2"}, "title": {long}, "message": {"m"}}, "too long title 100"},
		{"message", Fields{"recipient_ids": {"2"}, "title": {"Hi"}, "message": {"12345678901"}}, "too long message 10"},
		{"boolean", Fields{"recipient_ids": {"2"}, "title": {"Hi"}, "message": {"m"}, "open_invite": {"maybe"}}, "invalid open_invite"},
		{"utf-8", Fields{"recipient_ids": {"2"}, "title": {"\xff"}, "message": {"m"}}, "invalid title"},
	}
	for _, c := range cases {
		nc, _, err := ParseStart(c.f, 1, testOptions)
		if got := describe(err); got != c.want {
			t.Errorf("%s: %s; want %s", c.name, got, c.want)
		}
		if err == nil && (nc.Title != "Hi" || !nc.Open || nc.OpenInvite || nc.StarterID != 1) {
			t.Errorf("%s: %+v", c.name, nc)
		}
	}
}

func describe(err error) string {
	var (
		mi *MissingInputError
		ir *InvalidRecipientsError
		tm *TooManyRecipientsError
		tl *TooLongError
		ii *InvalidInputError
	)
	switch {
	case err == nil:
		return ""
	case errors.As(err, &mi):
		return fmt.Sprint("missing ", mi.Fields)
	case errors.As(err, &ir):
		return fmt.Sprint("recipients ", ir.Values)
	case errors.As(err, &tm):
		return fmt.Sprint("too many ", tm.Max)
	case errors.As(err, &tl):
		return fmt.Sprint("too long ", tl.Field, " ", tl.Max)
	case errors.As(err, &ii):
		return "invalid " + ii.Field
	}
	return err.Error()
}

func TestParseReply(t *testing.T) {
	cases := []struct {
		f    Fields
		id   int64
		want string
	}{
		{Fields{"conversation_id": {"10"}, "message": {"hi"}}, 10, ""},
		{Fields{}, 0, "missing [conversation_id message]"},
		{Fields{"conversation_id": {"10"}}, 0, "missing [message]"},
		{Fields{"conversation_id": {"x"}, "message": {"hi"}}, 0, ErrConversationNotFound.Error()},
		{Fields{"conversation_id": {"0"}, "message": {"hi"}}, 0, ErrConversationNotFound.Error()},
		{Fields{"conversation_id": {"10", "11"}, "message": {"hi"}}, 0, ErrConversationNotFound.Error()},
		{Fields{"conversation_id": {"10"}, "message": {"12345678901"}}, 10, "too long message 10"},
	}
	for _, c := range cases {
		id, _, err := ParseReply(c.f, testOptions)
		if got := describe(err); got != c.want || (err == nil && id != c.id) {
			t.Errorf("%v: %d, %s; want %d, %s", c.f, id, got, c.id, c.want)
		}
	}
}

func TestParseUpdateAndFilter(t *testing.T) {
	u, err := ParseUpdate(Fields{"title": {" New "}, "open_invite": {"1"}})
	if err != nil || *u.Title != "New" || u.Open != nil || !*u.OpenInvite {
		t.Fatalf("update: %+v %v", u, err)
	}
	if _, err := ParseUpdate(Fields{"title": {" "}}); describe(err) != "missing [title]" {
		t.Fatalf("blank title: %v", err)
	}
	if _, err := ParseUpdate(Fields{"conversation_open": {"nope"}}); describe(err) != "invalid conversation_open" {
		t.Fatalf("bad boolean: %v", err)
	}
	f, err := ParseListFilter(Fields{"starter_id": {"2"}, "unread": {"0"}})
	if err != nil || f.StarterID != 2 || f.ReceiverID != 0 || f.Starred != nil || *f.Unread {
		t.Fatalf("filter: %+v %v", f, err)
	}
	for _, bad := range []Fields{{"starter_id": {"0"}}, {"receiver_id": {"x"}}, {"starred": {"2"}}, {"unread": {""}}} {
		if _, err := ParseListFilter(bad); !strings.HasPrefix(describe(err), "invalid ") {
			t.Errorf("filter %v: %v", bad, err)
		}
	}
}

// FuzzParseRecipients: never panics; accepted ids are distinct, positive, not the current user,
// at most max, and each was sent.
func FuzzParseRecipients(f *testing.F) {
	f.Add("2,3", int64(1))
	f.Add("1,1,02,x", int64(2))
	f.Add(",,9223372036854775808", int64(1))
	f.Fuzz(func(t *testing.T, list string, me int64) {
		values := strings.Split(list, ",")
		rs, err := ParseRecipients(values, me, 5)
		if err != nil {
			return
		}
		if len(rs.IDs) > 5 {
			t.Fatalf("%d ids over max", len(rs.IDs))
		}
		seen := map[int64]bool{}
		for _, id := range rs.IDs {
			sent := slices.ContainsFunc(values, func(v string) bool { n, ok := decimal.ParseID(v); return ok && n == id })
			if id < 1 || id == me || seen[id] || !sent {
				t.Fatalf("ParseRecipients(%q, %d) = %v", values, me, rs.IDs)
			}
			seen[id] = true
		}
	})
}

// FuzzParseStart: never panics; an accepted conversation has a non-blank valid title and message
// within their limits.
func FuzzParseStart(f *testing.F) {
	f.Add("2", "Hi", "hello", "1")
	f.Add("x", "", "\xff", "maybe")
	f.Fuzz(func(t *testing.T, recipient, title, message, open string) {
		c, _, err := ParseStart(Fields{"recipient_ids": {recipient}, "title": {title}, "message": {message}, "conversation_open": {open}}, 1, testOptions)
		if err != nil {
			return
		}
		for _, s := range []string{c.Title, c.Message} {
			if strings.TrimSpace(s) == "" || !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
				t.Fatalf("accepted %q", s)
			}
		}
		if utf8.RuneCountInString(c.Title) > MaxTitleLength || int64(utf8.RuneCountInString(c.Message)) > testOptions.MessageMaxLength {
			t.Fatalf("accepted over the limits: %q %q", c.Title, c.Message)
		}
	})
}
