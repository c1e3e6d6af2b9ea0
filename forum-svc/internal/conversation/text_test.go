package conversation

import (
	"errors"
	"strings"
	"testing"
	"unicode"
)

// textCases are titles and messages with what each write answers: "" accepted, "invalid" 400
// invalid_input naming the field, "missing" required_input_missing.
var textCases = []struct {
	name           string
	text           string
	title, message string
}{
	{"plain", "Dinner on Friday", "", ""},
	{"Cyrillic, CJK, Arabic", "Ужин 晚饭 عشاء", "", ""},
	{"emoji with ZWJ (family)", "👨\u200d👩\u200d👧", "invalid", ""},
	{"emoji with variation selector", "❤\ufe0f", "", ""},
	{"flag of England (tags)", "\U0001F3F4\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F", "invalid", ""},
	{"Persian with ZWNJ", "می\u200cخواهم", "invalid", ""},
	{"RLM in mixed text", "abc \u200fשלום", "invalid", ""},
	{"terminal escape", "\x1b[2J\x1b[31mhacked", "invalid", "invalid"},
	{"bell", "ding\a", "invalid", "invalid"},
	{"DEL", "a\x7fb", "invalid", "invalid"},
	{"C1 CSI", "a\u009b31mb", "invalid", "invalid"},
	{"C1 NEL inside", "a\u0085b", "invalid", "invalid"},
	{"LF inside", "line one\nline two", "invalid", ""},
	{"CRLF inside", "line one\r\nline two", "invalid", ""},
	{"lone CR inside", "line one\rline two", "invalid", "invalid"},
	{"CR before CRLF", "a\r\r\nb", "invalid", "invalid"},
	{"tab inside", "a\tb", "invalid", ""},
	{"trailing line break (trimmed)", "hello\r\n", "", ""},
	{"right-to-left override", "invoice_\u202Egnp.exe", "invalid", "invalid"},
	{"left-to-right embedding", "a\u202Ab", "invalid", "invalid"},
	{"pop directional formatting", "a\u202Cb", "invalid", "invalid"},
	{"first strong isolate", "a\u2068b\u2069", "invalid", "invalid"},
	{"right-to-left isolate", "a\u2067b", "invalid", "invalid"},
	{"zero-width space inside", "a\u200bb", "invalid", ""},
	{"byte order mark inside", "a\ufeffb", "invalid", ""},
	{"soft hyphen", "co\u00adop", "invalid", ""},
	{"line separator", "a\u2028b", "invalid", "invalid"},
	{"paragraph separator", "a\u2029b", "invalid", "invalid"},
	{"only zero-width space", "\u200b", "missing", "missing"},
	{"only zero-width characters and spaces", " \u200b\u200c\u200d\u2060 \ufeff ", "missing", "missing"},
	{"only an override", "\u202E", "missing", "missing"},
	{"only Hangul fillers", "\u3164\u115f", "missing", "missing"},
	{"only variation selectors", "\ufe0f\ufe0e", "missing", "missing"},
	{"only braille blank", "\u2800\u2800", "missing", "missing"},
	{"only no-break and ideographic spaces", "\u00a0\u3000", "missing", "missing"},
	{"only a tab", "\t", "missing", "missing"},
	{"visible among invisible", "\u200b.\u200b", "invalid", ""},
}

func TestTitleAndMessageCharacters(t *testing.T) {
	for _, c := range textCases {
		t.Run(c.name, func(t *testing.T) {
			check := func(what, want string, err error) {
				t.Helper()
				var missing *MissingInputError
				var invalid *InvalidInputError
				switch want {
				case "":
					if err != nil {
						t.Errorf("%s %q refused: %v", what, c.text, err)
					}
				case "invalid":
					if !errors.As(err, &invalid) || invalid.Field != what {
						t.Errorf("%s %q: %v; want invalid_input %s", what, c.text, err, what)
					}
				case "missing":
					if !errors.As(err, &missing) || len(missing.Fields) != 1 || missing.Fields[0] != what {
						t.Errorf("%s %q: %v; want required_input_missing [%s]", what, c.text, err, what)
					}
				}
			}
			long := Options{DiscussionsPerPage: 20, MaxRecipients: 3, MessageMaxLength: 1000}
			// Every write that takes a title or a message: start, update; start, reply, edit.
			_, _, err := ParseStart(Fields{"recipient_ids": {"2"}, "title": {c.text}, "message": {"m"}}, 1, long)
			check(FieldTitle, c.title, err)
			_, err = ParseUpdate(Fields{"title": {c.text}})
			check(FieldTitle, c.title, err)
			_, _, err = ParseStart(Fields{"recipient_ids": {"2"}, "title": {"t"}, "message": {c.text}}, 1, long)
			check(FieldMessage, c.message, err)
			_, _, err = ParseReply(Fields{"conversation_id": {"10"}, "message": {c.text}}, long)
			check(FieldMessage, c.message, err)
			_, err = ParseMessage(Fields{"message": {c.text}}, long)
			check(FieldMessage, c.message, err)
		})
	}
}

// Required fields come first: a blank title and a message with a refused character are missing
// [title], not invalid.
func TestBlankBeforeMalformed(t *testing.T) {
	_, _, err := ParseStart(Fields{"recipient_ids": {"2"}, "title": {"\u200b"}, "message": {"\x1b[2J"}}, 1, testOptions)
	var missing *MissingInputError
	if !errors.As(err, &missing) || strings.Join(missing.Fields, ",") != "title" {
		t.Fatalf("%v; want required_input_missing [title]", err)
	}
}

// refusedInTitle and refusedInMessage say, in their own terms, what the rules refuse: a fuzzed
// text that passes must hold none of it.
func refusedInTitle(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

func refusedInMessage(s string, i int, r rune) bool {
	switch {
	case r == '\t' || r == '\n':
		return false
	case r == '\r':
		return !strings.HasPrefix(s[i:], "\r\n")
	}
	return unicode.In(r, unicode.Cc, unicode.Zl, unicode.Zp) || unicode.Is(unicode.Bidi_Control, r) &&
		r != '\u200e' && r != '\u200f' && r != '\u061c'
}

// FuzzTextRules: the title and message rules never panic, and an accepted title or message holds
// no refused character and at least one that is neither white space nor a format character.
func FuzzTextRules(f *testing.F) {
	for _, c := range textCases {
		f.Add(c.text, c.text)
	}
	opts := Options{DiscussionsPerPage: 20, MaxRecipients: 3, MessageMaxLength: MaxMessageLength}
	f.Fuzz(func(t *testing.T, title, message string) {
		c, _, err := ParseStart(Fields{"recipient_ids": {"2"}, "title": {title}, "message": {message}}, 1, opts)
		if err == nil {
			for _, r := range c.Title {
				if refusedInTitle(r) {
					t.Fatalf("title %q accepted with %U", c.Title, r)
				}
			}
			for i, r := range c.Message {
				if refusedInMessage(c.Message, i, r) {
					t.Fatalf("message %q accepted with %U", c.Message, r)
				}
			}
			for _, s := range []string{c.Title, c.Message} {
				if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsSpace(r) && !unicode.In(r, unicode.Cc, unicode.Cf) }) < 0 {
					t.Fatalf("accepted with nothing visible: %q", s)
				}
			}
		}
		if u, err := ParseUpdate(Fields{"title": {title}}); err == nil && strings.IndexFunc(*u.Title, refusedInTitle) >= 0 {
			t.Fatalf("update accepted title %q", *u.Title)
		}
		if m, err := ParseMessage(Fields{"message": {message}}, opts); err == nil {
			for i, r := range m {
				if refusedInMessage(m, i, r) {
					t.Fatalf("edit accepted message %q with %U", m, r)
				}
			}
		}
	})
}
