// Package httpapi is collector-svc's HTTP surface: shared/server's probes (/healthz, /readyz,
// /metrics) and nothing else, with every refusal answered {"error": code} through one table,
// like stats-svc's. It is the one package of collector-svc that knows the router: it hands out an
// http.Handler.
package httpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"forumstats.local/shared/config"
	"forumstats.local/shared/server"
)

// Options are what New needs.
type Options struct {
	// Logger logs the requests and the unexpected errors.
	Logger *slog.Logger
	// HTTP is the server's configuration (config.Common.HTTP).
	HTTP config.HTTP
	// Ready are the checks of /readyz.
	Ready []server.Check
}

// New returns collector-svc's HTTP handler.
func New(opts Options) http.Handler {
	return server.New(server.Options{
		Name:         "collector-svc",
		Logger:       opts.Logger,
		ErrorHandler: errorHandler,
		HTTP:         opts.HTTP,
		Ready:        opts.Ready,
	})
}

// errorSpec is one answer of the envelope {"error": code}.
type errorSpec struct {
	status int
	code   string
}

// statusTable answers the refusals of the HTTP layer, by status: the router's and shared/server's
// (its framing check, body and head limits), each the status's own name. A status missing here
// is unexpected, hence answered 500 internal_error and logged, so a new refusal is one line here
// (the tests then ask for it in the README).
var statusTable = []errorSpec{
	{http.StatusBadRequest, "bad_request"}, // a request framed two ways (request smuggling)
	{http.StatusNotFound, "not_found"},
	{http.StatusMethodNotAllowed, "method_not_allowed"},
	{http.StatusRequestEntityTooLarge, "request_entity_too_large"},
	{http.StatusRequestURITooLong, "uri_too_long"},
	{http.StatusRequestHeaderFieldsTooLarge, "request_header_fields_too_large"},
}

// specInternal answers every unexpected error, which is logged and never shown.
var specInternal = errorSpec{http.StatusInternalServerError, "internal_error"}

// allowed is the Allow header of every 405: the probes only read.
const allowed = "GET, HEAD"

// classify finds the answer of err; ok is false for an unexpected error.
func classify(err error) (spec errorSpec, ok bool) {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		for _, s := range statusTable {
			if s.status == he.Code {
				return s, true
			}
		}
	}
	return specInternal, false
}

// allCodes lists every code the service answers with, once each, sorted.
func allCodes() []string {
	codes := []string{specInternal.code}
	for _, s := range statusTable {
		codes = append(codes, s.code)
	}
	slices.Sort(codes)
	return slices.Compact(codes)
}

// errorHandler writes every error as {"error": code}; an unexpected error is logged with the
// request ID and never shown to the client. A HEAD gets the same headers and no body.
func errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	spec, ok := classify(err)
	if !ok {
		server.Logger(c).Error("request failed", "err", err)
	}
	body := []byte(`{"error":"` + spec.code + `"}`)
	h := c.Response().Header()
	if spec.status == http.StatusMethodNotAllowed {
		h.Set(echo.HeaderAllow, allowed)
	}
	h.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	h.Set(echo.HeaderContentLength, strconv.Itoa(len(body)))
	c.Response().WriteHeader(spec.status)
	if c.Request().Method == http.MethodHead {
		return
	}
	if _, err := c.Response().Write(body); err != nil {
		server.Logger(c).Debug("write error response", "err", err)
	}
}
