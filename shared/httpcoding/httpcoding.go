// Package httpcoding holds the rules of gzip content coding shared by the services' HTTP layers:
// whether a request accepts gzip, which bodies are worth compressing, and how the entity tag of a
// compressed representation differs from the identity one. It knows no router.
package httpcoding

import (
	"bytes"
	"compress/gzip"
	"strconv"
	"strings"
)

// MinSize is the smallest body worth compressing: below it gzip's header and trailer and the
// CPU cost outweigh the bytes saved.
const MinSize = 1024

// AcceptsGzip reports whether the Accept-Encoding fields accept gzip (RFC 9110, 12.5.3): gzip,
// x-gzip or * with a q-value above zero. A field "gzip;q=0" refuses it even beside "*".
func AcceptsGzip(fields []string) bool {
	star := false
	for _, f := range fields {
		for f != "" {
			var item string
			item, f, _ = strings.Cut(f, ",")
			name, params, _ := strings.Cut(item, ";")
			name = strings.TrimSpace(name)
			switch {
			case strings.EqualFold(name, "gzip"), strings.EqualFold(name, "x-gzip"):
				return qAbove0(params)
			case name == "*":
				star = qAbove0(params)
			}
		}
	}
	return star
}

// qAbove0 reads a coding's parameters: true unless a q-value is zero or unreadable.
func qAbove0(params string) bool {
	for params != "" {
		var p string
		p, params, _ = strings.Cut(params, ";")
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return err == nil && q > 0
	}
	return true
}

// Worth reports whether a body of n bytes is compressed for a client that accepts gzip.
func Worth(n int) bool { return n >= MinSize }

// Gzip compresses body at the default level (the answers are compressed once and kept, so the
// level's cost is paid once per body).
func Gzip(body []byte) []byte {
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.DefaultCompression) // the level is valid
	_, _ = w.Write(body)                                     // a bytes.Buffer does not fail
	_ = w.Close()
	return b.Bytes()
}

// GzipTag is the entity tag of the gzip representation of the body tagged tag: a strong tag
// names one representation, so the compressed bytes get their own, "-gzip" inside the quotes.
func GzipTag(tag string) string {
	if !strings.HasSuffix(tag, `"`) {
		return tag + "-gzip"
	}
	return strings.TrimSuffix(tag, `"`) + `-gzip"`
}

// NoneMatch reports whether If-None-Match (RFC 9110, 13.1.2) names the body tagged tag in either
// coding (tag or GzipTag(tag)): "*", or a list of entity tags compared weakly (W/ ignored on
// either side). Either form matches, so a client that cached one coding gets its 304 whichever
// coding it would be sent now (both decode to the same bytes).
func NoneMatch(fields []string, tag string) bool {
	want := strings.TrimPrefix(tag, "W/")
	wantGzip := GzipTag(want)
	for _, f := range fields {
		for f != "" {
			f = strings.TrimLeft(f, " \t,")
			if f == "" {
				break
			}
			if f[0] == '*' {
				return true
			}
			f = strings.TrimPrefix(f, "W/")
			if f == "" || f[0] != '"' {
				return false // malformed: ignore the rest, never match by accident
			}
			end := strings.IndexByte(f[1:], '"')
			if end < 0 {
				return false
			}
			if got := f[:end+2]; got == want || got == wantGzip {
				return true
			}
			f = f[end+2:]
		}
	}
	return false
}
