package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"forumstats.local/stats-svc/internal/answers"
	"forumstats.local/stats-svc/internal/export"
)

// maxAge caps Cache-Control's max-age: new data may arrive at any moment, so
// a client never keeps an answer longer than this without asking again.
const maxAge = 60 * time.Second

// answer writes a 200 answer with its ETag and Cache-Control, or 304 with no
// body when If-None-Match names its tag.
func (a *api) answer(c echo.Context, ans answers.Answer, now time.Time) error {
	tag := ans.ETag
	if tag == "" {
		tag = answers.Tag(ans.Body) // no cache in front (tests, tools)
	}
	if a.validators(c, ans, tag, now) {
		return nil
	}
	return write(c, http.StatusOK, ans.Body)
}

// csvVersion names the CSV layout in the CSV's entity tag. The tag derives from the JSON
// answer's, so that a 304 costs no rendering; the CSV is a function of the JSON body and of
// this code, so a change of the columns or of the writing must change csvVersion, or a client
// would keep an old CSV under a tag that now names another.
const csvVersion = "csv1"

// csvTag is the strong tag of the CSV rendered from the JSON answer tagged jsonTag: distinct
// from it, and changing exactly when it does (or csvVersion).
func csvTag(jsonTag string) string {
	return strings.TrimSuffix(jsonTag, `"`) + "." + csvVersion + `"`
}

// answerCSV writes the answer as a CSV download, with the same freshness as the JSON answer
// and its own tag, or 304 when If-None-Match names that tag.
func (a *api) answerCSV(c echo.Context, ans answers.Answer, exp exporter, now time.Time) error {
	tag := ans.ETag
	if tag == "" {
		tag = answers.Tag(ans.Body)
	}
	tag = csvTag(tag)
	if a.validators(c, ans, tag, now) {
		return nil
	}
	e, ok := a.csv.get(tag)
	if !ok {
		name, table, err := exp(ans.Body)
		if err != nil {
			return err // a body the service wrote itself that does not decode: a 500, logged
		}
		e = csvEntry{filename: name, body: export.CSV(table)}
		a.csv.put(tag, e)
	}
	c.Response().Header().Set(echo.HeaderContentDisposition, `attachment; filename="`+e.filename+`"`)
	return writeAs(c, http.StatusOK, "text/csv; charset=utf-8", e.body)
}

// validators sets the ETag, Cache-Control and, on an answer served stale because the database
// is unreachable, Cache-Status; it answers 304 and reports true when If-None-Match names tag.
//
// Every answer allows stale-if-error for the service's own window: a cache in front (or a
// client's) may keep serving it while the service fails, as the service itself does. A stale
// answer says so in Cache-Status (RFC 9211: a hit whose freshness ended ttl seconds ago) and may
// not be reused without asking again.
func (a *api) validators(c echo.Context, ans answers.Answer, tag string, now time.Time) bool {
	h := c.Response().Header()
	maxAgeS := maxAgeSeconds(ans.ValidUntil, now)
	if ans.Stale {
		maxAgeS = 0
		h.Set("Cache-Status", "stats-svc; hit; ttl="+strconv.FormatInt(-int64(now.Sub(ans.ValidUntil)/time.Second), 10)+"; detail=stale-if-error")
	}
	cc := "public, max-age=" + strconv.Itoa(maxAgeS)
	if a.staleIfError > 0 {
		cc += ", stale-if-error=" + strconv.FormatInt(int64(a.staleIfError/time.Second), 10)
	}
	h.Set(echo.HeaderCacheControl, cc)
	h.Set("ETag", tag)
	if noneMatch(c.Request().Header.Values("If-None-Match"), tag) {
		c.Response().WriteHeader(http.StatusNotModified)
		return true
	}
	return false
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
