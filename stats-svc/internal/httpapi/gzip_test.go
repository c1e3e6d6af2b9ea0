package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"forumstats.local/stats-svc/internal/httpapi"
)

// gunzip decodes a gzip body, failing the test on anything else.
func gunzip(t *testing.T, body string) string {
	t.Helper()
	r, err := gzip.NewReader(strings.NewReader(body))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	return string(b)
}

// varies reports whether the answer's Vary fields name Accept-Encoding.
func varies(h http.Header) bool {
	for _, v := range h.Values("Vary") {
		for _, f := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), "Accept-Encoding") {
				return true
			}
		}
	}
	return false
}

// A client that accepts gzip gets every answer of 1 KiB or more compressed: the same bytes once
// decoded, Content-Length of the compressed bytes, Vary: Accept-Encoding, and an ETag of its own
// (the identity tag with -gzip inside the quotes); HEAD gets the same headers, no body. A client
// that does not (no Accept-Encoding, gzip;q=0, only br) gets the identity bytes.
func TestGzipAnswers(t *testing.T) {
	s := newStack(t, pgDB(t), stackOptions{redis: newRedis(t, "")})
	gz := map[string]string{"Accept-Encoding": "gzip, deflate, br"}
	for _, target := range []string{
		statsPath, statsPath + "?period=week", seriesPath + "?from=2026-11-01&to=2026-11-20",
		statsPath + "?period=week&format=csv", "/api/openapi.json",
	} {
		plain := do(t, "GET", s.url+target)
		// A CSV's coding follows the size of the JSON it is rendered from (so a 304 renders nothing).
		if plain.status != 200 || len(plain.body) < 1024 && !strings.Contains(target, "format=csv") {
			t.Fatalf("%s: %d, %d bytes: the test needs an answer worth compressing", target, plain.status, len(plain.body))
		}
		if plain.header.Get("Content-Encoding") != "" || !varies(plain.header) {
			t.Fatalf("%s without Accept-Encoding: Content-Encoding %q Vary %q", target, plain.header.Get("Content-Encoding"), plain.header.Values("Vary"))
		}
		tag := plain.header.Get("ETag")
		wantTag := strings.TrimSuffix(tag, `"`) + `-gzip"`
		for i := range 2 { // the second from the gzip memo
			z := doWith(t, "GET", s.url+target, gz)
			if z.status != 200 || z.header.Get("Content-Encoding") != "gzip" || z.header.Get("ETag") != wantTag ||
				!varies(z.header) || z.header.Get("Content-Length") != strconv.Itoa(len(z.body)) {
				t.Fatalf("%s gzip #%d: %d Content-Encoding %q ETag %q (identity %q) Vary %q Content-Length %q for %d bytes", target, i,
					z.status, z.header.Get("Content-Encoding"), z.header.Get("ETag"), tag, z.header.Values("Vary"), z.header.Get("Content-Length"), len(z.body))
			}
			if len(z.body) >= len(plain.body) || gunzip(t, z.body) != plain.body {
				t.Fatalf("%s: %d gzip bytes do not decode to the %d identity bytes", target, len(z.body), len(plain.body))
			}
			if z.header.Get("Content-Type") != plain.header.Get("Content-Type") || z.header.Get("Content-Disposition") != plain.header.Get("Content-Disposition") {
				t.Fatalf("%s: gzip changed the type: %q %q", target, z.header.Get("Content-Type"), z.header.Get("Content-Disposition"))
			}
			head := doWith(t, "HEAD", s.url+target, gz)
			if head.status != 200 || head.body != "" || head.header.Get("Content-Length") != z.header.Get("Content-Length") ||
				head.header.Get("ETag") != wantTag || head.header.Get("Content-Encoding") != "gzip" {
				t.Fatalf("%s HEAD gzip: %d %q Content-Length %q ETag %q", target, head.status, head.body, head.header.Get("Content-Length"), head.header.Get("ETag"))
			}
		}
		for _, ae := range []string{"gzip;q=0", "br", "identity", "*;q=0"} {
			r := doWith(t, "GET", s.url+target, map[string]string{"Accept-Encoding": ae})
			if r.header.Get("Content-Encoding") != "" || r.body != plain.body || r.header.Get("ETag") != tag {
				t.Fatalf("%s Accept-Encoding %q: Content-Encoding %q ETag %q", target, ae, r.header.Get("Content-Encoding"), r.header.Get("ETag"))
			}
		}
		// Either tag revalidates either coding: the 304 names the coding a 200 would carry.
		for _, tt := range []struct {
			header  map[string]string
			sentTag string
		}{
			{map[string]string{"If-None-Match": tag, "Accept-Encoding": "gzip"}, wantTag},
			{map[string]string{"If-None-Match": wantTag, "Accept-Encoding": "gzip"}, wantTag},
			{map[string]string{"If-None-Match": wantTag}, tag},
			{map[string]string{"If-None-Match": `W/` + wantTag}, tag},
		} {
			for _, method := range []string{"GET", "HEAD"} {
				r := doWith(t, method, s.url+target, tt.header)
				if r.status != 304 || r.body != "" || r.header.Get("ETag") != tt.sentTag || r.header.Get("Content-Encoding") != "" ||
					!varies(r.header) {
					t.Fatalf("%s %s %v: %d %q ETag %q Content-Encoding %q", method, target, tt.header, r.status, r.body, r.header.Get("ETag"), r.header.Get("Content-Encoding"))
				}
			}
		}
	}
	// Below 1 KiB the bytes saved do not pay for the coding: identity, but still Vary.
	small := doWith(t, "GET", s.url+statsPath+"?period=day&date=2026-11-16&server=2", gz)
	if small.status != 200 || len(small.body) >= 1024 || small.header.Get("Content-Encoding") != "" || !varies(small.header) {
		t.Fatalf("small answer: %d, %d bytes, Content-Encoding %q Vary %q", small.status, len(small.body), small.header.Get("Content-Encoding"), small.header.Values("Vary"))
	}
	// Errors stay small identity JSON.
	if r := doWith(t, "GET", s.url+statsPath+"?period=x", gz); r.status != 400 || r.header.Get("Content-Encoding") != "" || r.body != `{"error":"invalid_parameters"}` {
		t.Fatalf("error with gzip: %d %q %s", r.status, r.header.Get("Content-Encoding"), r.body)
	}
	if !bytes.Equal([]byte(do(t, "GET", s.url+"/api/openapi.json").body), httpapi.OpenAPI()) {
		t.Fatal("the document's identity bytes changed")
	}
}
