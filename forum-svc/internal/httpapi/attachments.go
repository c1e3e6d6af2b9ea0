package httpapi

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"forumstats.local/forum-svc/internal/attachment"
	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/shared/server"
)

// The attachments API. An upload's body is read as it arrives: its fields first, then the file,
// whose bytes go to the store a chunk at a time (attachment.Service.Upload); nothing holds the
// whole file.

// Paths of the upload routes: their bodies are bounded by uploadLimit instead of BodyLimit.
const (
	pathNewKey      = "/api/attachments/new-key"
	pathAttachments = "/api/attachments"
)

// MultipartOverhead is what an upload's body may hold besides the file's bytes: the boundaries,
// the part headers and the fields before the file.
const MultipartOverhead = 64 << 10

// maxFieldValue bounds a field of an upload other than the file (a key, a type, a context id).
const maxFieldValue = 1 << 10

// ownBodyLimit tells shared/server which requests bound their bodies themselves: the multipart
// bodies of the uploads, whose limit follows the forum's attachmentMaxFileSize. Any other body of
// an upload route is a form of fields only, within BodyLimit like every route's.
func ownBodyLimit(c echo.Context) bool {
	r := c.Request()
	if r.Method != http.MethodPost || (c.Path() != pathNewKey && c.Path() != pathAttachments) {
		return false
	}
	mediaType, _, err := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
	return err == nil && mediaType == echo.MIMEMultipartForm
}

type attachmentAnswer struct {
	Attachment attachment.Attachment `json:"attachment"`
}

// uploadParts reads an upload's body: a multipart/form-data body within the forum's
// attachmentMaxFileSize plus MultipartOverhead, part by part; its fields before the file are
// gathered, and file is called with them for the first part named `attachment`, its bytes read
// as they arrive. The parts after it are read and dropped. Any other body is a form (no file),
// within BodyLimit. It returns the fields and whether a file was read.
func (a *api) uploadParts(c echo.Context, file func(fields conversation.Fields, filename string, r io.Reader) error) (conversation.Fields, bool, error) {
	r := c.Request()
	mediaType, params, err := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType))
	if err != nil || mediaType != echo.MIMEMultipartForm {
		fields, err := readForm(r)
		return fields, false, err
	}
	limits, err := a.att.Limits(r.Context())
	if err != nil {
		return nil, false, err
	}
	limit := limits.MaxFileSize + MultipartOverhead
	if r.ContentLength > limit {
		return nil, false, echo.ErrStatusRequestEntityTooLarge
	}
	r.Body = http.MaxBytesReader(c.Response(), r.Body, limit)
	broken := &conversation.InvalidInputError{Field: "body"}
	if params["boundary"] == "" {
		return nil, false, broken
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	fields := conversation.Fields{}
	count, read := 0, false
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return fields, read, nil
		}
		if err != nil {
			if ce := server.ClientError(err); ce != nil {
				return nil, false, ce
			}
			return nil, false, broken
		}
		if count++; count > MaxFields {
			return nil, false, &TooManyFieldsError{Max: MaxFields}
		}
		name := part.FormName()
		switch {
		case read:
			_, err = io.Copy(io.Discard, part)
		case name == attachment.FieldAttachment:
			read = true
			err = file(fields, part.FileName(), part)
		default:
			var value []byte
			value, err = io.ReadAll(io.LimitReader(part, maxFieldValue+1))
			if err == nil && len(value) > maxFieldValue {
				err = &conversation.InvalidInputError{Field: name}
			}
			fields[name] = append(fields[name], string(value))
		}
		if err != nil {
			if ce := server.ClientError(err); ce != nil {
				return nil, false, ce
			}
			return nil, false, err
		}
	}
}

// newKey answers POST attachments/new-key: {key, attachment?}.
func (a *api) newKey(c echo.Context) error {
	ctx := c.Request().Context()
	userID := c.Get(ctxUser).(int64)
	var (
		key *attachment.Key
		att *attachment.Attachment
	)
	fields, _, err := a.uploadParts(c, func(fields conversation.Fields, filename string, r io.Reader) error {
		k, err := a.att.NewKey(ctx, userID, fields)
		if err != nil {
			return err
		}
		key = &k
		up, err := a.att.Upload(ctx, k, filename, r)
		att = &up
		return err
	})
	if err != nil {
		return err
	}
	if key == nil {
		k, err := a.att.NewKey(ctx, userID, fields)
		if err != nil {
			return err
		}
		key = &k
	}
	return writeJSON(c, http.StatusOK, struct {
		Key        string                 `json:"key"`
		Attachment *attachment.Attachment `json:"attachment,omitempty"`
	}{key.Key, att})
}

// upload answers POST attachments/: {attachment}. The key comes before the file.
func (a *api) upload(c echo.Context) error {
	ctx := c.Request().Context()
	userID := c.Get(ctxUser).(int64)
	var att attachment.Attachment
	fields, read, err := a.uploadParts(c, func(fields conversation.Fields, filename string, r io.Reader) error {
		value, err := keyField(fields)
		if err != nil {
			return err
		}
		k, err := a.att.OwnKey(ctx, userID, value)
		if err != nil {
			return err
		}
		att, err = a.att.Upload(ctx, k, filename, r)
		return err
	})
	if err != nil {
		return err
	}
	if !read {
		var missing []string
		if len(fields[attachment.FieldKey]) == 0 {
			missing = append(missing, attachment.FieldKey)
		}
		return &conversation.MissingInputError{Fields: append(missing, attachment.FieldAttachment)}
	}
	return writeJSON(c, http.StatusOK, attachmentAnswer{att})
}

// keyField reads the one value of the key field ("": absent); a repeated one is
// *conversation.InvalidInputError.
func keyField(f conversation.Fields) (string, error) {
	switch vs := f[attachment.FieldKey]; len(vs) {
	case 0:
		return "", nil
	case 1:
		return vs[0], nil
	}
	return "", &conversation.InvalidInputError{Field: attachment.FieldKey}
}

// listAttachments answers GET attachments/?key=: the key's files not attached yet.
func (a *api) listAttachments(c echo.Context) error {
	query, err := readQuery(c.Request())
	if err != nil {
		return err
	}
	key, err := keyField(query)
	if err != nil {
		return err
	}
	list, err := a.att.List(c.Request().Context(), c.Get(ctxUser).(int64), key)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, struct {
		Attachments []attachment.Attachment `json:"attachments"`
	}{list})
}

func (a *api) getAttachment(c echo.Context) error {
	userID, id := ids(c)
	att, err := a.att.Get(c.Request().Context(), userID, id)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, attachmentAnswer{att})
}

func (a *api) deleteAttachment(c echo.Context) error {
	userID, id := ids(c)
	if err := a.att.Delete(c.Request().Context(), userID, id); err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, success{true})
}

// attachmentData answers GET attachments/{id}/data: the file's exact bytes, through
// http.ServeContent over a reader of its chunks (Range, If-Range and If-None-Match against its
// ETag, the SHA-256 of its bytes). Images are served inline as their sniffed type; any other file
// as application/octet-stream to download (attachment.ServeAs), and the answer may run nothing
// (Content-Security-Policy), so that no upload acts as a page of this service.
func (a *api) attachmentData(c echo.Context) error {
	userID, id := ids(c)
	row, rs, err := a.att.Open(c.Request().Context(), userID, id)
	if err != nil {
		return err
	}
	contentType, disposition := attachment.ServeAs(row.MimeType)
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, contentType)
	// A name FormatMediaType cannot write (it writes any UTF-8 one, RFC 2231) goes unnamed.
	if cd := mime.FormatMediaType(disposition, map[string]string{"filename": row.Filename}); cd != "" {
		disposition = cd
	}
	h.Set(echo.HeaderContentDisposition, disposition)
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("ETag", strconv.Quote(row.FileHash))
	http.ServeContent(c.Response(), c.Request(), "", time.Time{}, rs)
	return nil
}

// attachmentThumbnail answers GET attachments/{id}/thumbnail: an image's thumbnail (PNG or JPEG).
func (a *api) attachmentThumbnail(c echo.Context) error {
	userID, id := ids(c)
	mimeType, b, err := a.att.Thumbnail(c.Request().Context(), userID, id)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderContentLength, strconv.Itoa(len(b)))
	c.Response().Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
	return c.Blob(http.StatusOK, mimeType, b)
}

// readQuery reads the query string's fields, counted as a write's.
func readQuery(r *http.Request) (conversation.Fields, error) {
	budget := MaxFields
	qr := newFieldReader(&budget)
	if err := qr.addPairs(r.URL.RawQuery); err != nil {
		return nil, err
	}
	return qr.fields()
}
