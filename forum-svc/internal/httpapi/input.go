package httpapi

import (
	"bufio"
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
	"strings"

	"github.com/labstack/echo/v4"

	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/shared/form"
)

// startFields are the fields of the write with the most of them, besides its recipients.
var startFields = [...]string{conversation.FieldTitle, conversation.FieldMessage,
	conversation.FieldConversationOpen, conversation.FieldOpenInvite}

// MaxFields bounds the fields a write reads, body and query string together: the largest valid
// request is a start with recipient_ids naming every recipient the largest maxRecipients allows
// and the current user (who is dropped), plus its other fields. A form of more is refused while it
// is read (400 too_many_fields), so a body of a hundred thousand tiny fields never costs more
// than this many of them; the body limit bounds their size.
const MaxFields = conversation.MaxRecipientsLimit + 1 + len(startFields)

// TooManyFieldsError is a write with more than Max fields.
type TooManyFieldsError struct{ Max int }

func (e *TooManyFieldsError) Error() string {
	return fmt.Sprintf("a request has at most %d form fields", e.Max)
}

// readForm reads the fields of a write from its body and its query string. The body is an
// application/x-www-form-urlencoded or multipart/form-data form (a file part counts as a field); a
// non-empty body of any other type is 415, a body over the limit 413 (the body-limit error), a
// broken multipart body 400 invalid_input. A field named in the body takes the body's values
// only; one the body lacks takes the query string's, as XenForo's request input does, so a client
// may put any field in either place. An array field (conversation.ArrayFields) is one field
// whichever of its encodings name it (see shared/form's Array): its values are ordered there, and
// body and query string are one of them or the other as for any field. Every field is counted as
// it is read: past MaxFields the read stops with *TooManyFieldsError.
func readForm(r *http.Request) (conversation.Fields, error) {
	budget := MaxFields
	fields := conversation.Fields{}
	if r.Body != nil {
		var err error
		if fields, err = readBody(r, &budget); err != nil {
			return nil, err
		}
	}
	qr := newFieldReader(&budget)
	if err := qr.addPairs(r.URL.RawQuery); err != nil {
		return nil, err
	}
	query, err := qr.fields()
	if err != nil {
		return nil, err
	}
	for name, vs := range query {
		if _, inBody := fields[name]; !inBody {
			fields[name] = vs
		}
	}
	return fields, nil
}

// fieldReader gathers the fields of one source (the body, or the query string) as they are read,
// counting each against the request's budget.
type fieldReader struct {
	budget    *int
	plain     conversation.Fields
	arrays    map[string]*form.Array
	malformed string // the first key that names an array field but is none of its encodings
}

func newFieldReader(budget *int) *fieldReader {
	return &fieldReader{budget: budget, plain: conversation.Fields{}, arrays: map[string]*form.Array{}}
}

// add counts and adds one field.
func (fr *fieldReader) add(key, value string) error {
	if *fr.budget == 0 {
		return &TooManyFieldsError{Max: MaxFields}
	}
	*fr.budget--
	for _, name := range conversation.ArrayFields {
		index, indexed, elem, malformed := form.ArrayKey(key, name)
		if malformed && fr.malformed == "" {
			fr.malformed = key
		}
		if elem {
			a := fr.arrays[name]
			if a == nil {
				a = &form.Array{}
				fr.arrays[name] = a
			}
			a.Add(index, indexed, value)
			return nil
		}
	}
	fr.plain[key] = append(fr.plain[key], value)
	return nil
}

// addPairs adds the pairs of a raw query string.
func (fr *fieldReader) addPairs(raw string) error {
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if err := fr.addPair([]byte(pair)); err != nil {
			return err
		}
	}
	return nil
}

// addPair counts and adds one "key=value" pair (empty ones are skipped, as form.Parse does).
func (fr *fieldReader) addPair(pair []byte) error {
	if len(pair) == 0 {
		return nil
	}
	return fr.add(form.Pair(string(pair)))
}

// fields are the fields read, each array field under its plain name with its values in order. A
// key that meant an array field but is none of its encodings (`recipient_ids[x]`) is
// *InvalidInputError naming that key: dropping it would act on fewer values than the client sent.
func (fr *fieldReader) fields() (conversation.Fields, error) {
	if fr.malformed != "" {
		return nil, &conversation.InvalidInputError{Field: fr.malformed}
	}
	for name, a := range fr.arrays {
		// A plain `name` is one of the array's encodings, so it never also stands in plain.
		fr.plain[name] = a.Values()
	}
	return fr.plain, nil
}

// readBody reads the body as a stream, field by field.
func readBody(r *http.Request, budget *int) (conversation.Fields, error) {
	body := &readErr{r: r.Body}
	br := bufio.NewReader(body)
	if _, err := br.Peek(1); err != nil {
		if errors.Is(err, io.EOF) { // an empty body is no body, whatever its type
			return conversation.Fields{}, nil
		}
		return nil, bodyError(err)
	}
	mediaType, params, err := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
	if err != nil {
		return nil, echo.ErrUnsupportedMediaType
	}
	var fields conversation.Fields
	switch mediaType {
	case echo.MIMEApplicationForm:
		fields, err = readURLEncoded(br, budget)
	case echo.MIMEMultipartForm:
		fields, err = readMultipart(br, params["boundary"], budget)
	default:
		return nil, echo.ErrUnsupportedMediaType
	}
	// A body that failed to arrive (over the limit, cut off) is that, not a broken form.
	if body.err != nil && !errors.Is(body.err, io.EOF) {
		return nil, bodyError(body.err)
	}
	return fields, err
}

// readErr remembers the first error of the body's reads.
type readErr struct {
	r   io.Reader
	err error
}

func (b *readErr) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && b.err == nil {
		b.err = err
	}
	return n, err
}

// bodyError is the error of a body that could not be read: the body limit's own 413 as it is.
func bodyError(err error) error {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return err
	}
	return fmt.Errorf("read body: %w", err)
}

// readURLEncoded splits a form body on "&" as it arrives, holding one pair at a time.
func readURLEncoded(br *bufio.Reader, budget *int) (conversation.Fields, error) {
	fr := newFieldReader(budget)
	var pair []byte
	for {
		chunk, err := br.ReadSlice('&')
		pair = append(pair, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if perr := fr.addPair(bytes.TrimSuffix(pair, []byte("&"))); perr != nil {
			return nil, perr
		}
		if err != nil {
			return fr.fields()
		}
		pair = pair[:0]
	}
}

// readMultipart reads a multipart form part by part.
func readMultipart(br *bufio.Reader, boundary string, budget *int) (conversation.Fields, error) {
	broken := &conversation.InvalidInputError{Field: "body"}
	if boundary == "" {
		return nil, broken
	}
	fr := newFieldReader(budget)
	mr := multipart.NewReader(br, boundary)
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return fr.fields()
		}
		if err != nil {
			return nil, broken
		}
		if *budget == 0 {
			return nil, &TooManyFieldsError{Max: MaxFields}
		}
		value, err := io.ReadAll(part) // within the body limit
		if err != nil {
			return nil, broken
		}
		if err := fr.add(part.FormName(), string(value)); err != nil {
			return nil, err
		}
	}
}

// formDate reads the optional `date` field of mark-read (from the body or the query string, as
// every write's fields). A malformed or repeated date is invalid_date, never "now".
func formDate(r *http.Request) (string, error) {
	fields, err := readForm(r)
	if err != nil {
		return "", err
	}
	vs := fields["date"]
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
