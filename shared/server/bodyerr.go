package server

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"

	"github.com/labstack/echo/v4"
)

// BodyError is an error met while reading a request's body off the connection: a body sent
// slower than the read timeout, a client that hung up before its end, malformed chunked framing.
// It is the client's doing, never the server's, so ClientError answers it with a 4xx. Only the
// request body's own reads are wrapped (clientBody), so that an io.ErrUnexpectedEOF or a timeout
// from a database is never taken for a client's.
type BodyError struct{ Err error }

func (e *BodyError) Error() string { return "read request body: " + e.Err.Error() }
func (e *BodyError) Unwrap() error { return e.Err }

// clientBody marks the errors of a request body's reads as BodyErrors (io.EOF, the normal end,
// excepted).
type clientBody struct{ io.ReadCloser }

func (b clientBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = &BodyError{Err: err}
	}
	return n, err
}

// markBodyErrors wraps the request body in clientBody. It runs before the body limit, whose
// refusal (413) is the limit's, not a reading error.
func markBodyErrors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = clientBody{r.Body}
		}
		return next(c)
	}
}

// ClientError returns the 4xx that answers err when err is the client's doing: 408 for a body
// that did not arrive within the read timeout, 413 for one over a limit (http.MaxBytesReader),
// 400 for any other body-read error (malformed chunked framing, a hang-up before the end) and for
// a request whose framing is ambiguous (ErrAmbiguousFraming). It returns nil for any other error.
// The HTTPError keeps err as its cause, so that the services' error handlers map it by status.
func ClientError(err error) *echo.HTTPError {
	if err == nil {
		return nil
	}
	var maxBytes *http.MaxBytesError
	if errors.As(err, &maxBytes) {
		return echo.NewHTTPError(http.StatusRequestEntityTooLarge).SetInternal(err)
	}
	if errors.Is(err, ErrAmbiguousFraming) {
		return echo.NewHTTPError(http.StatusBadRequest).SetInternal(err)
	}
	var body *BodyError
	if !errors.As(err, &body) {
		return nil
	}
	var ne net.Error
	if errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return echo.NewHTTPError(http.StatusRequestTimeout).SetInternal(err)
	}
	return echo.NewHTTPError(http.StatusBadRequest).SetInternal(err)
}
