package httpapi

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"forumstats.local/forum-svc/internal/conversation"
)

// rawQueryValues returns the values of name in a raw query string. Unlike url.ParseQuery (and
// Echo's QueryParams), a pair with a broken escape is kept undecoded rather than dropped, so
// `?page=%zz` fails the page check instead of silently becoming the default page.
func rawQueryValues(raw, name string) []string {
	var out []string
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		key, value, _ := strings.Cut(pair, "=")
		if unescape(key) != name {
			continue
		}
		out = append(out, unescape(value))
	}
	return out
}

func unescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// formDate reads the optional `date` field of mark-read from a form body (or, failing that, the
// query string). The body is read explicitly so that a body over the limit answers 413 (the
// body-limit error) and a malformed one 400, instead of both being taken as "no date" ("now").
func formDate(r *http.Request) (string, error) {
	var vs []string
	mediaType, _, _ := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
	if r.Body != nil && mediaType == echo.MIMEApplicationForm {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			var he *echo.HTTPError
			if errors.As(err, &he) {
				return "", err
			}
			return "", fmt.Errorf("read mark-read body: %w", err)
		}
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return "", conversation.ErrInvalidDate
		}
		vs = form["date"]
	}
	if len(vs) == 0 {
		vs = rawQueryValues(r.URL.RawQuery, "date")
	}
	switch len(vs) {
	case 0:
		return "", nil
	case 1:
		return vs[0], nil
	default:
		return "", conversation.ErrInvalidDate
	}
}
