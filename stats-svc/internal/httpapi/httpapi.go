// Package httpapi serves GET and HEAD /api/chat-statistics, /api/chat-icons
// and /api/chat-series, and writes every error body through one table.
package httpapi

import (
	"context"
	_ "embed"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"forumstats.local/shared/form"
	"forumstats.local/shared/ratelimit"
	"forumstats.local/shared/server"
	"forumstats.local/stats-svc/internal/answers"
	"forumstats.local/stats-svc/internal/cache"
	"forumstats.local/stats-svc/internal/export"
	"forumstats.local/stats-svc/internal/query"
)

// Reports answers the two operations (the cache, or the store directly).
type Reports interface {
	Statistics(ctx context.Context, q query.Query, now time.Time) (answers.Answer, error)
	Icons(ctx context.Context, server string) (answers.Answer, error)
	Series(ctx context.Context, q query.Series, now time.Time) (answers.Answer, error)
}

// Limiter decides whether the client named key (its address) may make one more request now.
type Limiter interface {
	Allow(ctx context.Context, key string) ratelimit.Decision
}

// Options are what Register needs besides the answers.
type Options struct {
	// Now is the clock (time.Now in production).
	Now func() time.Time
	// Limiter limits the requests of each client address; nil: no limit.
	Limiter Limiter
	// StaleIfError is the Cache-Control stale-if-error of every answer: how long the service
	// keeps answering from its caches while the database is unreachable (0: not announced).
	StaleIfError time.Duration
}

// allowed is the Allow header of every 405: the service only reads.
const allowed = "GET, HEAD"

type api struct {
	reports      Reports
	now          func() time.Time
	staleIfError time.Duration
	csv          *csvMemo
}

// csvMemoBytes bounds the rendered CSVs kept (csvMemo).
const csvMemoBytes = 32 << 20

// Register adds the three operations and the OpenAPI document, each with and
// without a trailing slash, the CORS header every response carries and the
// per-client rate limit of every route but the probes.
func Register(e *echo.Echo, reports Reports, opts Options) {
	a := &api{reports: reports, now: opts.Now, staleIfError: opts.StaleIfError, csv: newCSVMemo(csvMemoBytes)}
	e.Pre(func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			c.Response().Header().Set(echo.HeaderAccessControlAllowOrigin, "*")
			return next(c)
		}
	})
	if opts.Limiter != nil {
		e.Use(limit(opts.Limiter))
	}
	// Any, not GET+HEAD: otherwise Echo's router answers OPTIONS with 204
	// itself, and every method but GET and HEAD is 405 (OPTIONS included).
	// An exporter (non-nil) lets the operation answer in CSV too (format=csv or Accept).
	for path, op := range map[string]struct {
		get    operation
		export exporter
	}{
		"/api/chat-statistics": {a.statistics, answers.StatisticsTable},
		"/api/chat-icons":      {a.icons, nil},
		"/api/chat-series":     {a.series, answers.SeriesTable},
	} {
		h := a.handler(op.get, op.export)
		e.Any(path, h)
		e.Any(path+"/", h)
	}
	document := a.handler(func(context.Context, url.Values, time.Time) (answers.Answer, error) {
		return openAPIAnswer, nil
	}, nil)
	e.Any("/api/openapi.json", document)
	e.Any("/api/openapi.json/", document)
}

// openAPIDoc is the service's OpenAPI 3.1 document (tested against real answers), generated from
// its YAML source in openapi/: edit the source, then run go generate.
//
//go:generate go run forumstats.local/shared/openapigen/cmd/openapigen -o openapi.json openapi/openapi.yaml
//go:embed openapi.json
var openAPIDoc []byte

// openAPIAnswer is the document as an answer, its tag computed once.
var openAPIAnswer = answers.Answer{Body: openAPIDoc, ETag: answers.Tag(openAPIDoc)}

// OpenAPI returns the service's OpenAPI document.
func OpenAPI() []byte { return openAPIDoc }

// operation answers a request's query string at the moment now.
type operation func(ctx context.Context, values url.Values, now time.Time) (answers.Answer, error)

// exporter flattens an operation's JSON answer into a table for CSV, and names its file.
type exporter func(body []byte) (filename string, t export.Table, err error)

// handler serves get on GET and HEAD (405 otherwise), with its ETag and Cache-Control; with an
// exporter, in the format the request chooses (checked before the operation's parameters are
// read, so that a bad format costs no read).
func (a *api) handler(get operation, exp exporter) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := readOnly(c); err != nil {
			return err
		}
		now := a.now()
		// Not Echo's QueryParams: it drops a pair with a broken escape, which must fail its check.
		values := form.Parse(c.Request().URL.RawQuery)
		format := query.FormatJSON
		if exp != nil {
			// The representation depends on Accept: a shared cache must key on it.
			c.Response().Header().Add(echo.HeaderVary, echo.HeaderAccept)
			var err error
			if format, err = query.ParseFormat(values, c.Request().Header.Values(echo.HeaderAccept)); err != nil {
				return err
			}
		}
		ans, err := get(c.Request().Context(), values, now)
		if err != nil {
			return err
		}
		if format == query.FormatCSV {
			return a.answerCSV(c, ans, exp, now)
		}
		return a.answer(c, ans, now)
	}
}

func (a *api) statistics(ctx context.Context, values url.Values, now time.Time) (answers.Answer, error) {
	q, err := query.Parse(values, now)
	if err != nil {
		return answers.Answer{}, err
	}
	return a.reports.Statistics(ctx, q, now)
}

func (a *api) icons(ctx context.Context, values url.Values, _ time.Time) (answers.Answer, error) {
	srv, err := query.ParseIconsServer(values)
	if err != nil {
		return answers.Answer{}, err
	}
	return a.reports.Icons(ctx, srv)
}

func (a *api) series(ctx context.Context, values url.Values, now time.Time) (answers.Answer, error) {
	q, err := query.ParseSeries(values)
	if err != nil {
		return answers.Answer{}, err
	}
	return a.reports.Series(ctx, q, now)
}

// unlimited are the routes the rate limit leaves alone: shared/server's probes, which
// orchestrators and Prometheus poll and which read nothing a client chooses.
var unlimited = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// errRateLimited: the client used up its requests; retryError says for how long.
var errRateLimited = errors.New("rate limited")

// retryError is a refusal that the client may repeat after wait (the Retry-After header).
type retryError struct {
	err  error
	wait time.Duration
}

func (e *retryError) Error() string { return e.err.Error() }
func (e *retryError) Unwrap() error { return e.err }

// limit takes a token from the bucket of the client's address (c.RealIP: the proxies that may
// name it are shared/server's to trust) for every request but the probes: the dashboard, the
// API, the document, unknown paths and wrong methods alike, since each costs the service a
// request.
func limit(l Limiter) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if unlimited[c.Path()] {
				return next(c)
			}
			if d := l.Allow(c.Request().Context(), c.RealIP()); !d.Allowed {
				return &retryError{err: errRateLimited, wait: time.Duration(d.RetryAfterSeconds()) * time.Second}
			}
			return next(c)
		}
	}
}

func readOnly(c echo.Context) error {
	switch c.Request().Method {
	case http.MethodGet, http.MethodHead:
		return nil
	}
	return echo.ErrMethodNotAllowed
}

// write sends a JSON body; HEAD gets the same headers, Content-Length
// included, and no body.
func write(c echo.Context, status int, body []byte) error {
	return writeAs(c, status, echo.MIMEApplicationJSON, body)
}

// writeAs sends body as contentType; HEAD gets the same headers, Content-Length included, and
// no body.
func writeAs(c echo.Context, status int, contentType string, body []byte) error {
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, contentType)
	h.Set(echo.HeaderContentLength, strconv.Itoa(len(body)))
	c.Response().WriteHeader(status)
	if c.Request().Method == http.MethodHead {
		return nil
	}
	_, err := c.Response().Write(body)
	return err
}

// errorTable maps domain errors to HTTP statuses and codes; retryAfter is the Retry-After of
// a refusal the client may repeat, unless the error carries its own (retryError).
var errorTable = []struct {
	err        error
	status     int
	code       string
	retryAfter time.Duration
}{
	{query.ErrInvalidParameters, http.StatusBadRequest, "invalid_parameters", 0},
	{query.ErrInvalidRange, http.StatusBadRequest, "invalid_range", 0},
	{query.ErrInvalidServer, http.StatusBadRequest, "invalid_server", 0},
	{answers.ErrServerNotFound, http.StatusNotFound, "server_not_found", 0},
	{errRateLimited, http.StatusTooManyRequests, "too_many_requests", time.Second},
	// The database is reading as many uncached answers as it may: a second later it has
	// usually finished some.
	{cache.ErrBusy, http.StatusServiceUnavailable, "service_busy", time.Second},
	// The database is unreachable and the cache holds no copy of the answer, fresh or stale: a
	// restart or a failover takes seconds.
	{answers.ErrDatabaseUnavailable, http.StatusServiceUnavailable, "database_unavailable", 5 * time.Second},
}

// retryAfter is the Retry-After of err: its own wait, else its table entry's (0: none).
func retryAfter(err error) time.Duration {
	var re *retryError
	if errors.As(err, &re) {
		return re.wait
	}
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			return e.retryAfter
		}
	}
	return 0
}

func classify(err error) (int, string) {
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			return e.status, e.code
		}
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch {
		case he.Code == http.StatusNotFound:
			return http.StatusNotFound, "not_found"
		case he.Code == http.StatusMethodNotAllowed:
			return http.StatusMethodNotAllowed, "method_not_allowed"
		case he.Code == http.StatusRequestURITooLong:
			return he.Code, "uri_too_long" // shared/server's head limits
		case he.Code == http.StatusRequestHeaderFieldsTooLarge:
			return he.Code, "request_header_fields_too_large"
		case he.Code >= 400 && he.Code < 500:
			// Middleware refusals (413 and the like): the status's own name.
			return he.Code, strings.ToLower(strings.ReplaceAll(http.StatusText(he.Code), " ", "_"))
		}
	}
	return http.StatusInternalServerError, "internal_error"
}

// ErrorHandler writes every error as {"error": code}; an unexpected error is
// logged with the request ID and never shown to the client.
func ErrorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, code := classify(err)
	if status == http.StatusInternalServerError {
		server.Logger(c).Error("request failed", "err", err)
	}
	h := c.Response().Header()
	h.Set(echo.HeaderAccessControlAllowOrigin, "*")
	if status == http.StatusMethodNotAllowed {
		h.Set(echo.HeaderAllow, allowed)
	}
	if wait := retryAfter(err); wait > 0 {
		h.Set(echo.HeaderRetryAfter, strconv.FormatInt(int64(max(wait.Round(time.Second), time.Second)/time.Second), 10))
	}
	if err := write(c, status, []byte(`{"error":"`+code+`"}`)); err != nil {
		server.Logger(c).Debug("write error response", "err", err)
	}
}
