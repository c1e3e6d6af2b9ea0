package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"forumstats.local/shared/httpcoding"
	"forumstats.local/stats-svc/internal/answers"
	"forumstats.local/stats-svc/internal/export"
)

// maxAge caps Cache-Control's max-age: new data may arrive at any moment, so
// a client never keeps an answer longer than this without asking again.
const maxAge = 60 * time.Second

// answer writes a 200 answer with its ETag and Cache-Control, gzip-compressed when the client
// accepts it and the body is worth it, or 304 with no body when If-None-Match names its tag (in
// either coding).
func (a *api) answer(c echo.Context, ans answers.Answer, now time.Time) error {
	tag := ans.ETag
	if tag == "" {
		tag = answers.Tag(ans.Body) // no cache in front (tests, tools)
	}
	gzTag := gzipFor(c, tag, len(ans.Body))
	if a.validators(c, ans, tag, gzTag, now) {
		return nil
	}
	return a.send(c, echo.MIMEApplicationJSON, ans.Body, gzTag)
}

// gzipFor decides the coding of an answer tagged tag whose identity body is n bytes: gzip when the
// client accepts it and the body is worth it (httpcoding.Worth), and returns the gzip
// representation's tag then ("" for the identity one). HEAD decides as GET does, and gets the
// headers GET would (Content-Encoding, the gzip Content-Length and ETag) without a body. The
// answer varies with Accept-Encoding either way: a shared cache must key on it.
func gzipFor(c echo.Context, tag string, n int) string {
	h := c.Response().Header()
	if v := h.Get(echo.HeaderVary); v != "" {
		h.Set(echo.HeaderVary, v+", "+echo.HeaderAcceptEncoding) // one field: "Accept, Accept-Encoding"
	} else {
		h.Set(echo.HeaderVary, echo.HeaderAcceptEncoding)
	}
	if !httpcoding.Worth(n) || !httpcoding.AcceptsGzip(c.Request().Header.Values(echo.HeaderAcceptEncoding)) {
		return ""
	}
	return httpcoding.GzipTag(tag)
}

// send writes body as contentType, or with gzTag (not "") its gzip bytes, compressed once per tag
// and kept in the gzip memo, so that a cached answer is not compressed again on every request.
func (a *api) send(c echo.Context, contentType string, body []byte, gzTag string) error {
	if gzTag != "" {
		z, ok := a.gzip.get(gzTag)
		if !ok {
			z = httpcoding.Gzip(body)
			a.gzip.put(gzTag, z)
		}
		c.Response().Header().Set(echo.HeaderContentEncoding, "gzip")
		body = z
	}
	return writeAs(c, http.StatusOK, contentType, body)
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
	// The coding follows the JSON body's size, which the CSV is rendered from, so that a 304
	// (whose ETag names the coding) costs no rendering either.
	gzTag := gzipFor(c, tag, len(ans.Body))
	if a.validators(c, ans, tag, gzTag, now) {
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
	return a.send(c, "text/csv; charset=utf-8", e.body, gzTag)
}

// validators sets the ETag, Cache-Control and, on an answer served stale because the database
// is unreachable, Cache-Status; it answers 304 and reports true when If-None-Match names tag in
// either coding. The ETag sent names the representation a 200 would carry: tag, or gzTag when
// it is not "".
//
// Every answer allows stale-if-error for the service's own window: a cache in front (or a
// client's) may keep serving it while the service fails, as the service itself does. A stale
// answer says so in Cache-Status (RFC 9211: a hit whose freshness ended ttl seconds ago) and may
// not be reused without asking again.
func (a *api) validators(c echo.Context, ans answers.Answer, tag, gzTag string, now time.Time) bool {
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
	if gzTag != "" {
		h.Set("ETag", gzTag)
	} else {
		h.Set("ETag", tag)
	}
	if httpcoding.NoneMatch(c.Request().Header.Values("If-None-Match"), tag) {
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
