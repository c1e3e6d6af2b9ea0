package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/shared/form"
)

// readForm reads the fields of a write: an application/x-www-form-urlencoded or multipart/form-data
// body (a file part counts as a field). A non-empty body of any other type is 415; a body over the
// limit is 413 (the body-limit error), a broken multipart body 400 invalid_input. withQuery adds
// the query string's fields after the body's (DELETE reads both).
func readForm(r *http.Request, withQuery bool) (conversation.Fields, error) {
	fields := conversation.Fields{}
	if r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			var he *echo.HTTPError
			if errors.As(err, &he) {
				return nil, err
			}
			return nil, fmt.Errorf("read body: %w", err)
		}
		if len(body) > 0 {
			if fields, err = parseBody(r.Header.Get(echo.HeaderContentType), body); err != nil {
				return nil, err
			}
		}
	}
	if withQuery {
		for name, vs := range form.Parse(r.URL.RawQuery) {
			fields[name] = append(fields[name], vs...)
		}
	}
	return fields, nil
}

func parseBody(contentType string, body []byte) (conversation.Fields, error) {
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, echo.ErrUnsupportedMediaType
	}
	switch mediaType {
	case echo.MIMEApplicationForm:
		return conversation.Fields(form.Parse(string(body))), nil
	case echo.MIMEMultipartForm:
	default:
		return nil, echo.ErrUnsupportedMediaType
	}
	broken := &conversation.InvalidInputError{Field: "body"}
	if params["boundary"] == "" {
		return nil, broken
	}
	fields := conversation.Fields{}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	// No count of parts: the body is already read and bounded (1 MiB), so a part list costs
	// at most what the body does, and a long recipient list must reach its own check
	// (too_many_recipients), not a parser limit.
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return fields, nil
		}
		if err != nil {
			return nil, broken
		}
		value, err := io.ReadAll(part) // within the body, already bounded
		if err != nil {
			return nil, broken
		}
		name := part.FormName()
		fields[name] = append(fields[name], string(value))
	}
}

// formDate reads the optional `date` field of mark-read from the form (or, failing that, the
// query string). A malformed or repeated date is invalid_date, never "now".
func formDate(r *http.Request) (string, error) {
	body, err := readForm(r, false)
	if err != nil {
		return "", err
	}
	vs := body["date"]
	if len(vs) == 0 {
		vs = form.Parse(r.URL.RawQuery)["date"]
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

// HeaderIdempotencyKey is the retry key of POST /api/conversations/ and
// POST /api/conversation-messages/.
const HeaderIdempotencyKey = "Idempotency-Key"

// parseIdempotencyKey reads the header: absent is "" (no retry key); present, it is 1 to 255
// printable ASCII characters (a repeated header is refused too).
func parseIdempotencyKey(values []string) (string, error) {
	switch {
	case len(values) == 0:
		return "", nil
	case len(values) > 1:
		return "", conversation.ErrInvalidIdempotencyKey
	}
	k := values[0]
	if len(k) < 1 || len(k) > 255 {
		return "", conversation.ErrInvalidIdempotencyKey
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return "", conversation.ErrInvalidIdempotencyKey
		}
	}
	return k, nil
}

// fingerprint identifies a request for its retry key: the method, the path and the fields (names
// sorted, values in the order sent), each length-prefixed so that no two requests share one.
func fingerprint(method, path string, fields conversation.Fields) string {
	h := sha256.New()
	put := func(s string) { fmt.Fprintf(h, "%d:%s", len(s), s) }
	put(method)
	put(path)
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		put(name)
		fmt.Fprintf(h, "%d", len(fields[name]))
		for _, v := range fields[name] {
			put(v)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}
