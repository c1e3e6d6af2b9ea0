// Package httpapi serves GET and HEAD /api/chat-statistics, /api/chat-icons,
// /api/chat-series and /api/chat-activity and mounts the dashboard, behind shared/server's middleware and probes
// (New), and writes every error body through one table (errors.go). It is the one package of
// stats-svc that knows the router: it hands out an http.Handler.
package httpapi

import (
	"context"
	_ "embed"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"forumstats.local/shared/config"
	"forumstats.local/shared/form"
	"forumstats.local/shared/ratelimit"
	"forumstats.local/shared/server"
	"forumstats.local/stats-svc/internal/answers"
	"forumstats.local/stats-svc/internal/export"
	"forumstats.local/stats-svc/internal/query"
	"forumstats.local/stats-svc/internal/web"
)

// Reports answers the two operations (the cache, or the store directly).
type Reports interface {
	Statistics(ctx context.Context, q query.Query, now time.Time) (answers.Answer, error)
	Icons(ctx context.Context, server string) (answers.Answer, error)
	Series(ctx context.Context, q query.Series, now time.Time) (answers.Answer, error)
	Activity(ctx context.Context, q query.Activity, now time.Time) (answers.Answer, error)
}

// Limiter decides whether the client named key (its address) may make one more request now.
type Limiter interface {
	Allow(ctx context.Context, key string) ratelimit.Decision
}

// Options are what New needs besides the answers.
type Options struct {
	// Now is the clock (time.Now in production).
	Now func() time.Time
	// Limiter limits the requests of each client address; nil: no limit.
	Limiter Limiter
	// Logger logs the requests and the unexpected errors.
	Logger *slog.Logger
	// HTTP is the server's configuration (config.Common.HTTP: the trusted proxies).
	HTTP config.HTTP
	// Ready are the checks of /readyz.
	Ready []server.Check
	// Dashboard is served at / and /static/* (nil: none).
	Dashboard *web.Dashboard
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
	csv          *memo[csvEntry]
	gzip         *memo[[]byte]
}

// New returns stats-svc's HTTP handler: shared/server's middleware and probes, the API answering
// from reports at the clock opts.Now, the rate limit and the dashboard.
func New(reports Reports, opts Options) http.Handler {
	e := server.New(server.Options{
		HTTP:         opts.HTTP,
		Name:         "stats-svc",
		Logger:       opts.Logger,
		ErrorHandler: errorHandler,
		Ready:        opts.Ready,
	})
	register(e, reports, opts)
	if opts.Dashboard != nil {
		mountDashboard(e, opts.Dashboard)
	}
	return e
}

// mountDashboard serves d at / (the page) and /static/* (its files), every method (d refuses
// all but GET and HEAD); d's refusals answer through the error table like any other.
func mountDashboard(e *echo.Echo, d *web.Dashboard) {
	refusal := func(err error) error {
		var r *web.Refusal
		if errors.As(err, &r) {
			return echo.NewHTTPError(r.Status)
		}
		return err
	}
	e.Any("/", func(c echo.Context) error { return refusal(d.Page(c.Response(), c.Request())) })
	e.Any("/static/*", func(c echo.Context) error { return refusal(d.File(c.Response(), c.Request(), c.Param("*"))) })
}

// csvMemoBytes bounds the rendered CSVs kept, gzipMemoBytes the compressed answers kept (memo).
const (
	csvMemoBytes  = 32 << 20
	gzipMemoBytes = 16 << 20
)

// register adds the three operations and the OpenAPI document, each with and
// without a trailing slash, the CORS header every response carries and the
// per-client rate limit of every route but the probes.
func register(e *echo.Echo, reports Reports, opts Options) {
	a := &api{reports: reports, now: opts.Now, staleIfError: opts.StaleIfError, csv: newCSVMemo(csvMemoBytes), gzip: newGzipMemo(gzipMemoBytes)}
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
		"/api/chat-activity":   {a.activity, answers.ActivityTable},
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

func (a *api) activity(ctx context.Context, values url.Values, now time.Time) (answers.Answer, error) {
	q, err := query.ParseActivity(values)
	if err != nil {
		return answers.Answer{}, err
	}
	return a.reports.Activity(ctx, q, now)
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
