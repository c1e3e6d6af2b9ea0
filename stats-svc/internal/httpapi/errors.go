package httpapi

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"forumstats.local/shared/server"
	"forumstats.local/stats-svc/internal/answers"
	"forumstats.local/stats-svc/internal/cache"
	"forumstats.local/stats-svc/internal/query"
)

// errorSpec is one answer of the envelope {"error": code}: its status and code, and the
// Retry-After of a refusal the client may repeat (0: none) unless the error carries its own wait
// (retryError).
type errorSpec struct {
	status     int
	code       string
	retryAfter time.Duration
}

// errorTable maps the domain errors to their answers.
var errorTable = []struct {
	err error
	errorSpec
}{
	{query.ErrInvalidParameters, errorSpec{http.StatusBadRequest, "invalid_parameters", 0}},
	{query.ErrInvalidRange, errorSpec{http.StatusBadRequest, "invalid_range", 0}},
	{query.ErrInvalidServer, errorSpec{http.StatusBadRequest, "invalid_server", 0}},
	{answers.ErrServerNotFound, errorSpec{http.StatusNotFound, "server_not_found", 0}},
	{errRateLimited, errorSpec{http.StatusTooManyRequests, "too_many_requests", time.Second}},
	// The database is reading as many uncached answers as it may: a second later it has
	// usually finished some.
	{cache.ErrBusy, errorSpec{http.StatusServiceUnavailable, "service_busy", time.Second}},
	// The database is unreachable and the cache holds no copy of the answer, fresh or stale: a
	// restart or a failover takes seconds.
	{answers.ErrDatabaseUnavailable, errorSpec{http.StatusServiceUnavailable, "database_unavailable", 5 * time.Second}},
}

// statusTable answers the refusals the HTTP layer raises itself, by their status: the router's,
// shared/server's (its framing check, body and head limits) and the dashboard's (its file
// server's answers to If-Match and Range). Each is the status's own name. A status missing here
// is unexpected, hence answered 500 internal_error and logged, so a new refusal is one line here
// (the tests then ask for it in the OpenAPI document and the README).
var statusTable = []errorSpec{
	{http.StatusBadRequest, "bad_request", 0}, // a request framed two ways (request smuggling)
	{http.StatusNotFound, "not_found", 0},
	{http.StatusMethodNotAllowed, "method_not_allowed", 0},
	{http.StatusPreconditionFailed, "precondition_failed", 0},
	{http.StatusRequestEntityTooLarge, "request_entity_too_large", 0},
	{http.StatusRequestURITooLong, "uri_too_long", 0},
	{http.StatusRequestedRangeNotSatisfiable, "requested_range_not_satisfiable", 0},
	{http.StatusRequestHeaderFieldsTooLarge, "request_header_fields_too_large", 0},
}

// specInternal answers every unexpected error, which is logged and never shown.
var specInternal = errorSpec{http.StatusInternalServerError, "internal_error", 0}

// allCodes lists every code the service answers with, once each, sorted.
func allCodes() []string {
	codes := []string{specInternal.code}
	for _, e := range errorTable {
		codes = append(codes, e.code)
	}
	for _, s := range statusTable {
		codes = append(codes, s.code)
	}
	slices.Sort(codes)
	return slices.Compact(codes)
}

// classify finds the answer of err; ok is false for an unexpected error.
func classify(err error) (spec errorSpec, ok bool) {
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			return e.errorSpec, true
		}
	}
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

// retryAfter is the Retry-After of err: its own wait, else its answer's (0: none).
func retryAfter(err error, spec errorSpec) time.Duration {
	var re *retryError
	if errors.As(err, &re) {
		return re.wait
	}
	return spec.retryAfter
}

// errorHandler writes every error as {"error": code}; an unexpected error is logged with the
// request ID and never shown to the client.
func errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	spec, ok := classify(err)
	if !ok {
		server.Logger(c).Error("request failed", "err", err)
	}
	h := c.Response().Header()
	h.Set(echo.HeaderAccessControlAllowOrigin, "*")
	if spec.status == http.StatusMethodNotAllowed {
		h.Set(echo.HeaderAllow, allowed)
	}
	if wait := retryAfter(err, spec); wait > 0 {
		h.Set(echo.HeaderRetryAfter, strconv.FormatInt(int64(max(wait.Round(time.Second), time.Second)/time.Second), 10))
	}
	if err := write(c, spec.status, []byte(`{"error":"`+spec.code+`"}`)); err != nil {
		server.Logger(c).Debug("write error response", "err", err)
	}
}
