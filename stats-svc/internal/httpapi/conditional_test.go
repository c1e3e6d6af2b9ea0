package httpapi_test

import (
	"strings"
	"testing"
)

// Every operation's answer carries a strong ETag of its body; If-None-Match
// naming it answers 304 with no body, for GET and HEAD, with or without the
// cache in front.
func TestConditionalGet(t *testing.T) {
	gdb := pgDB(t)
	for _, o := range []stackOptions{{redis: newRedis(t, "")}, {direct: true}} {
		s := newStack(t, gdb, o)
		tags := map[string]string{}
		for _, target := range []string{
			statsPath, statsPath + "/?period=week", statsPath + "?period=day&date=2026-11-16&server=2",
			iconsPath, iconsPath + "?server=1", seriesPath + "?from=2026-11-14&to=2026-11-20", seriesPath + "?from=2026-11-14&to=2026-11-20&server=1",
		} {
			first := do(t, "GET", s.url+target)
			tag := first.header.Get("ETag")
			if first.status != 200 || len(tag) < 10 || tag[0] != '"' || strings.HasPrefix(tag, "W/") {
				t.Fatalf("%s: %d ETag %q", target, first.status, tag)
			}
			if other, dup := tags[tag]; dup {
				t.Fatalf("%s and %s share the tag %s", target, other, tag)
			}
			tags[tag] = target
			if cc := first.header.Get("Cache-Control"); !strings.HasPrefix(cc, "public, max-age=") {
				t.Fatalf("%s: Cache-Control %q", target, cc)
			}
			if again := do(t, "GET", s.url+target); again.header.Get("ETag") != tag || again.body != first.body {
				t.Fatalf("%s: tag changed without the body: %s then %s", target, tag, again.header.Get("ETag"))
			}
			for _, inm := range []string{tag, "W/" + tag, `"nope", ` + tag, "*"} {
				for _, method := range []string{"GET", "HEAD"} {
					r := doWith(t, method, s.url+target, map[string]string{"If-None-Match": inm})
					if r.status != 304 || r.body != "" || r.header.Get("ETag") != tag || r.header.Get("Cache-Control") == "" {
						t.Fatalf("%s %s If-None-Match %s: %d %q ETag %q", method, target, inm, r.status, r.body, r.header.Get("ETag"))
					}
				}
			}
			r := doWith(t, "GET", s.url+target, map[string]string{"If-None-Match": `"other"`})
			if r.status != 200 || r.body != first.body {
				t.Fatalf("%s: a different tag answers %d", target, r.status)
			}
			if head := do(t, "HEAD", s.url+target); head.header.Get("ETag") != tag {
				t.Fatalf("%s: HEAD tag %q", target, head.header.Get("ETag"))
			}
		}
		// An error is never cached by a client, nor conditional.
		r := doWith(t, "GET", s.url+statsPath+"?period=x", map[string]string{"If-None-Match": "*"})
		if r.status != 400 || r.header.Get("ETag") != "" || r.header.Get("Cache-Control") != "" {
			t.Fatalf("error answer: %d ETag %q Cache-Control %q", r.status, r.header.Get("ETag"), r.header.Get("Cache-Control"))
		}
	}
}

// max-age never reaches past the moment the answer changes by the clock: the
// week ending today holds Gamma's report of today, stale by age already, and
// Alpha's and Beta's, fresh until 10:20 UTC (20 min away): 60 s. A finished
// day holds until Moscow midnight: 60 s too. The unit test covers the cut.
func TestCacheControl(t *testing.T) {
	s := newStack(t, pgDB(t), stackOptions{})
	for _, target := range []string{statsPath + "?period=week", statsPath + "?period=day&date=2026-11-16", seriesPath + "?from=2026-11-19&to=2026-11-20"} {
		if cc := do(t, "GET", s.url+target).header.Get("Cache-Control"); cc != "public, max-age=60, stale-if-error=86400" {
			t.Fatalf("%s: Cache-Control %q", target, cc)
		}
	}
}
