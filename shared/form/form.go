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
		key, value, _ := strings.Cut(pair, "=")
		key = unescape(key)
		v[key] = append(v[key], unescape(value))
	}
	return v
}

func unescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}
