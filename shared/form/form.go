// Package form decodes application/x-www-form-urlencoded text: a raw query string or a form body.
package form

import (
	"net/url"
	"strings"
)

// Parse decodes raw like url.ParseQuery, but never drops a pair: a key or value with a broken
// escape is kept undecoded. So a malformed known parameter (`?page=%zz`) still fails its own
// check instead of vanishing into a default, and an unknown one is still ignored. Pairs split on
// "&" only; empty pairs are skipped.
func Parse(raw string) url.Values {
	v := url.Values{}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		key, value := Pair(pair)
		v[key] = append(v[key], value)
	}
	return v
}

// Pair decodes one non-empty "key=value" pair (the text between two "&") as Parse does: a key or
// value with a broken escape is kept undecoded. Readers that split a form themselves (a body read
// as a stream) decode each pair with it, so that both read the same fields.
func Pair(pair string) (key, value string) {
	key, value, _ = strings.Cut(pair, "=")
	return unescape(key), unescape(value)
}

func unescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}
