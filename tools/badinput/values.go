package badinput

import (
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// value is one hostile value; Dec is what the service should see after decoding.
type value struct {
	Label string
	Dec   string
	// RawQuery, when set, is put into a query string as is (a malformed escape).
	RawQuery string
}

// query is the value as it goes into a query string.
func (v value) query() string {
	if v.RawQuery != "" {
		return v.RawQuery
	}
	return escapeAll(v.Dec)
}

// path is the value as one path segment.
func (v value) path() string {
	if v.RawQuery != "" {
		return v.RawQuery
	}
	return url.PathEscape(v.Dec)
}

// queryDecoded is what a standard query decoder makes of the value ("" , false when it cannot).
func (v value) queryDecoded() (string, bool) {
	s, err := url.QueryUnescape(v.query())
	return s, err == nil
}

// escapeAll percent-encodes everything but unreserved characters (also '+', which a query
// decoder would read as a space).
func escapeAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteString("%")
		b.WriteByte("0123456789ABCDEF"[c>>4])
		b.WriteByte("0123456789ABCDEF"[c&15])
	}
	return b.String()
}

// headerSafe tells whether v can be a header value without breaking the request's framing.
func (v value) headerSafe() bool {
	return !strings.ContainsAny(v.Dec, "\r\n")
}

// headerCTL tells whether v holds a control character that net/http refuses in a header.
func (v value) headerCTL() bool {
	for i := 0; i < len(v.Dec); i++ {
		if c := v.Dec[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return true
		}
	}
	return false
}

// isDigits tells whether s is 1 to maxLen ASCII digits.
func isDigits(s string, maxLen int) bool {
	if s == "" || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// hostileValues is the fixed list of hostile values plus nRand random ones of each kind, all
// drawn from r (so a seed fixes the corpus).
func hostileValues(r *rand.Rand, nBytes, nUnicode int) []value {
	vs := []value{
		{Label: "empty", Dec: ""},
		{Label: "nul", Dec: "\x00"},
		{Label: "nul-suffix", Dec: "1\x00"},
		{Label: "nul-middle", Dec: "2026\x00-01"},
		{Label: "negative", Dec: "-1"},
		{Label: "negative-zero", Dec: "-0"},
		{Label: "zero", Dec: "0"},
		{Label: "min-int64", Dec: "-9223372036854775808"},
		{Label: "max-int64", Dec: "9223372036854775807"},
		{Label: "int64-overflow", Dec: "9223372036854775808"},
		{Label: "uint64-overflow", Dec: "18446744073709551616"},
		{Label: "40-digits", Dec: strings.Repeat("9", 40)},
		{Label: "float", Dec: "1.5"},
		{Label: "exponent", Dec: "1e3"},
		{Label: "hex", Dec: "0x1F"},
		{Label: "leading-space", Dec: " 7"},
		{Label: "plus-sign", Dec: "+7"},
		{Label: "nan", Dec: "NaN"},
		{Label: "infinity", Dec: "Infinity"},
		{Label: "arabic-digit", Dec: "\u0661"},
		{Label: "fullwidth-digit", Dec: "\uff17"},
		{Label: "sql-or", Dec: "1' OR '1'='1"},
		{Label: "sql-drop", Dec: "1; DROP TABLE api_keys;--"},
		{Label: "sql-union", Dec: "0 UNION SELECT key_hash FROM api_keys--"},
		{Label: "sql-comment", Dec: "1/**/OR/**/1=1"},
		{Label: "traversal", Dec: "../../../../etc/passwd"},
		{Label: "traversal-backslash", Dec: `..\..\windows\win.ini`},
		{Label: "crlf", Dec: "1\r\nSet-Cookie: x=1"},
		{Label: "format", Dec: "%s%s%n%x"},
		{Label: "template", Dec: "{{7*7}}${7*7}"},
		{Label: "jndi", Dec: "${jndi:ldap://127.0.0.1/a}"},
		{Label: "html", Dec: "<script>alert(1)</script>"},
		{Label: "rtl-override", Dec: "\u202e7"},
		{Label: "zero-width", Dec: "7\u200b"},
		{Label: "emoji", Dec: "\U0001F600"},
		{Label: "invalid-utf8", Dec: "\xff\xfe\xfd"},
		{Label: "10kb-digits", Dec: strings.Repeat("7", 10240)},
		{Label: "10kb-letters", Dec: strings.Repeat("A", 10240)},
		{Label: "10kb-unicode", Dec: strings.Repeat("\u00e9", 5120)},
		{Label: "bad-escape", RawQuery: "%zz"},
		{Label: "lone-percent", RawQuery: "%"},
	}
	for i := 0; i < nBytes; {
		b := make([]byte, 1+r.IntN(64))
		for j := range b {
			b[j] = byte(r.IntN(256))
		}
		if plausible(string(b)) {
			continue
		}
		vs = append(vs, value{Label: "random-bytes-" + strconv.Itoa(i), Dec: string(b)})
		i++
	}
	ranges := [][2]rune{{0x20, 0x7e}, {0xa0, 0x24f}, {0x370, 0x3ff}, {0x590, 0x6ff}, {0x4e00, 0x9fff},
		{0x1f300, 0x1f6ff}, {0x200b, 0x202e}, {0xfe00, 0xfe0f}, {0x300, 0x36f}}
	for i := 0; i < nUnicode; {
		var b strings.Builder
		for range 1 + r.IntN(32) {
			rg := ranges[r.IntN(len(ranges))]
			c := rg[0] + rune(r.IntN(int(rg[1]-rg[0]+1)))
			if utf8.ValidRune(c) {
				b.WriteRune(c)
			}
		}
		if plausible(b.String()) {
			continue
		}
		vs = append(vs, value{Label: "random-unicode-" + strconv.Itoa(i), Dec: b.String()})
		i++
	}
	return vs
}

// plausible tells whether a random value could be valid somewhere (a number, a mode, a
// date-like string): the corpus keeps only values that are wrong everywhere.
func plausible(s string) bool {
	t := strings.TrimSpace(s)
	if isDigits(t, 1000) {
		return true
	}
	switch t {
	case "month", "day", "week", "range":
		return true
	}
	return strings.HasPrefix(t, "20") && len(t) <= 10
}
