package form

import (
	"net/url"
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		raw  string
		want url.Values
	}{
		{"", url.Values{}},
		{"a=1&b=2&a=3", url.Values{"a": {"1", "3"}, "b": {"2"}}},
		{"a", url.Values{"a": {""}}},
		{"a=", url.Values{"a": {""}}},
		{"=x", url.Values{"": {"x"}}},
		{"&&a=1&", url.Values{"a": {"1"}}},
		{"a=1;b=2", url.Values{"a": {"1;b=2"}}},
		{"a+b=c+d&e%20f=%41", url.Values{"a b": {"c d"}, "e f": {"A"}}},
		{"a=x=y", url.Values{"a": {"x=y"}}},
		// A broken escape is kept as sent, never dropped.
		{"page=%zz", url.Values{"page": {"%zz"}}},
		{"%zz=1&page=%", url.Values{"%zz": {"1"}, "page": {"%"}}},
		{"p=%e2%82", url.Values{"p": {"\xe2\x82"}}},
	}
	for _, tt := range tests {
		if got := Parse(tt.raw); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Parse(%q) = %q, want %q", tt.raw, got, tt.want)
		}
	}
}

// FuzzParse holds Parse to url.ParseQuery wherever the standard parser accepts the whole text:
// the two differ only on what ParseQuery refuses (broken escapes, semicolons).
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "a=1&b=2&a=3", "a+b=c+d&e%20f=%41", "page=%zz", "a=1;b=2", "&&=&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got := Parse(raw)
		want, err := url.ParseQuery(raw)
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("Parse(%q) = %v; url.ParseQuery = %v", raw, got, want)
		}
	})
}
