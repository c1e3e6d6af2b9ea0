package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"forumstats.local/stats-svc/internal/answers"
)

// maxAge caps Cache-Control's max-age: new data may arrive at any moment, so
// a client never keeps an answer longer than this without asking again.
const maxAge = 60 * time.Second

// answer writes a 200 answer with its ETag and Cache-Control, or 304 with no
// body when If-None-Match names its tag.
func answer(c echo.Context, a answers.Answer, now time.Time) error {
	tag := a.ETag
	if tag == "" {
		tag = answers.Tag(a.Body) // no cache in front (tests, tools)
	}
	h := c.Response().Header()
	h.Set(echo.HeaderCacheControl, "public, max-age="+strconv.Itoa(maxAgeSeconds(a.ValidUntil, now)))
	h.Set("ETag", tag)
	if noneMatch(c.Request().Header.Values("If-None-Match"), tag) {
		c.Response().WriteHeader(http.StatusNotModified)
		return nil
	}
	return write(c, http.StatusOK, a.Body)
}

// maxAgeSeconds is how long a client may reuse an answer: at most maxAge,
// and never past validUntil (zero: none), the moment it could next change by
// the clock; whole seconds, rounded down.
func maxAgeSeconds(validUntil, now time.Time) int {
	d := maxAge
	if !validUntil.IsZero() {
		d = min(d, validUntil.Sub(now))
	}
	return max(int(d/time.Second), 0)
}

// noneMatch reports whether If-None-Match (RFC 9110, 13.1.2) names tag: "*",
// or a list of entity tags compared weakly (W/ ignored on either side).
func noneMatch(fields []string, tag string) bool {
	want := strings.TrimPrefix(tag, "W/")
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
			if f[:end+2] == want {
				return true
			}
			f = f[end+2:]
		}
	}
	return false
}
