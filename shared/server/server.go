// Package server is the HTTP bootstrap every service shares: an Echo instance with request IDs,
// structured request logs, panic recovery, request-head and body limits, Prometheus metrics, health and readiness
// endpoints, and a graceful shutdown.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"forumstats.local/shared/config"
)

// Check is one dependency probed by /readyz.
type Check struct {
	Name string
	Fn   func(context.Context) error
}

// DefaultBodyLimit is the body limit of a service that sets none: 1 MiB (1,048,576 bytes), as
// the services document it. Echo reads "1M" as 1,000,000 bytes, so the binary unit is spelled out.
const DefaultBodyLimit = "1MiB"

// Options configures New.
type Options struct {
	Name         string
	Logger       *slog.Logger
	ErrorHandler echo.HTTPErrorHandler
	Ready        []Check
	// BodyLimit caps request bodies in Echo's notation ("64K", "1M", "1MiB"): "K" and "M" are
	// powers of ten, "KiB" and "MiB" of two. Empty means DefaultBodyLimit.
	BodyLimit string
	// OwnBodyLimit tells which requests BodyLimit does not apply to: routes (uploads) that bound
	// their bodies themselves, by a limit known only once the request is routed. nil: none.
	OwnBodyLimit func(c echo.Context) bool
	// HTTP is the server's configuration (config.Common.HTTP): the proxies whose
	// X-Forwarded-For c.RealIP() believes. Run and Serve take the same value for the read timeout.
	HTTP config.HTTP
}

var (
	metricsOnce     sync.Once
	requestsTotal   *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	inFlight        prometheus.Gauge
)

func registerMetrics() {
	requestsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "http_requests_total",
		Help: "HTTP requests by route template, method and status.",
	}, []string{"route", "method", "status"})
	requestDuration = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "http_request_duration_seconds",
		Help:    "HTTP request latency by route template.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
	}, []string{"route", "method"})
	inFlight = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "http_requests_in_flight",
		Help: "HTTP requests being served.",
	})
}

type ctxKey struct{}

// New returns an Echo instance with the common middleware and the /healthz, /readyz and
// /metrics endpoints.
func New(opts Options) *echo.Echo {
	metricsOnce.Do(registerMetrics)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	if opts.ErrorHandler != nil {
		e.HTTPErrorHandler = opts.ErrorHandler
	}
	limit := opts.BodyLimit
	if limit == "" {
		limit = DefaultBodyLimit
	}

	e.IPExtractor = ipExtractor(opts.HTTP.TrustedProxies)

	e.Use(middleware.RequestIDWithConfig(middleware.RequestIDConfig{
		// Keep a caller's ID only when a log line or header carries it safely as is.
		Generator: newRequestID,
		RequestIDHandler: func(c echo.Context, id string) {
			if !validRequestID(id) {
				id = newRequestID()
				c.Response().Header().Set(echo.HeaderXRequestID, id)
			}
			c.Set("request_id", id)
		},
	}))
	e.Use(observe(log))
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		DisablePrintStack: true,
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			log.Error("panic", "request_id", RequestID(c), "err", err, "stack", string(stack))
			return err
		},
	}))
	e.Use(refuseAmbiguous)
	e.Use(limitHead)
	e.Use(markBodyErrors)
	e.Use(middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{Limit: limit, Skipper: func(c echo.Context) bool {
		return opts.OwnBodyLimit != nil && opts.OwnBodyLimit(c)
	}}))

	e.GET("/healthz", health)
	e.HEAD("/healthz", health)
	ready := readiness(opts.Ready)
	e.GET("/readyz", ready)
	e.HEAD("/readyz", ready)
	metrics := echo.WrapHandler(promhttp.Handler())
	e.GET("/metrics", metrics)
	e.HEAD("/metrics", metrics)
	return e
}

// RequestID returns the ID of the request being served.
func RequestID(c echo.Context) string {
	if id, ok := c.Get("request_id").(string); ok {
		return id
	}
	return ""
}

// Logger returns the request-scoped logger (it carries the request ID). It is built on first
// use: most requests log only their access line and never need it.
func Logger(c echo.Context) *slog.Logger {
	if l, ok := c.Get("logger").(*slog.Logger); ok {
		return l
	}
	base, ok := c.Get("base_logger").(*slog.Logger)
	if !ok {
		return slog.Default()
	}
	l := base.With("request_id", RequestID(c))
	c.Set("logger", l)
	return l
}

func observe(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			inFlight.Inc()
			defer inFlight.Dec()
			c.Set("base_logger", log)
			err := next(c)
			if herr := ClientError(err); herr != nil {
				// The client's doing (a slow, cut or malformed body; ambiguous framing): a 4xx,
				// logged at info.
				log.LogAttrs(c.Request().Context(), slog.LevelInfo, "client error",
					slog.String("request_id", RequestID(c)), slog.String("err", clip(err.Error())))
				err = herr
			}
			if err != nil {
				// Let the error handler write the body now so that the status is known below.
				c.Error(err)
			}
			route := c.Path()
			if route == "" {
				route = "unmatched"
			}
			status := c.Response().Status
			elapsed := time.Since(start)
			method := methodLabel(c.Request().Method)
			requestsTotal.WithLabelValues(route, method, statusLabel(status)).Inc()
			requestDuration.WithLabelValues(route, method).Observe(elapsed.Seconds())
			level := slog.LevelInfo
			if status >= 500 {
				level = slog.LevelError
			}
			// The path only: query strings and headers may carry secrets and are never logged.
			log.LogAttrs(c.Request().Context(), level, "request",
				slog.String("request_id", RequestID(c)),
				slog.String("method", clip(c.Request().Method)),
				slog.String("path", clip(c.Request().URL.Path)),
				slog.String("route", route),
				slog.Int("status", status),
				slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
				slog.Int64("bytes", c.Response().Size),
			)
			return nil
		}
	}
}

// statusLabels holds the metric label of every valid status code, so that counting a request
// does not format one.
var statusLabels = func() (l [600]string) {
	for code := 100; code < len(l); code++ {
		l[code] = strconv.Itoa(code)
	}
	return l
}()

func statusLabel(code int) string {
	if code >= 100 && code < len(statusLabels) {
		return statusLabels[code]
	}
	return strconv.Itoa(code)
}

func health(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

func readiness(checks []Check) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
		defer cancel()
		result := map[string]string{}
		status := http.StatusOK
		for _, ch := range checks {
			if err := ch.Fn(ctx); err != nil {
				result[ch.Name] = "unavailable"
				status = http.StatusServiceUnavailable
				Logger(c).Warn("readiness check failed", "check", ch.Name, "err", err)
				continue
			}
			result[ch.Name] = "ok"
		}
		state := "ok"
		if status != http.StatusOK {
			state = "unavailable"
		}
		return c.JSON(status, map[string]any{"status": state, "checks": result})
	}
}

// Run serves h on addr until ctx is done, then stops accepting connections and waits up to 25 s
// for in-flight requests to finish. h is a handler built by New (the services' httpapi hand it
// out as an http.Handler, so that no caller depends on the router); httpCfg is the configuration
// it was built with, whose ReadTimeout bounds the reading of each request (0: the default).
func Run(ctx context.Context, h http.Handler, addr string, httpCfg config.HTTP, log *slog.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	return Serve(ctx, h, ln, httpCfg, log)
}

// Serve is Run on an existing listener (tests listen on port 0 first). Every connection is read
// through a framer (framing.go), which refuses requests framed two ways.
func Serve(ctx context.Context, h http.Handler, ln net.Listener, httpCfg config.HTTP, log *slog.Logger) error {
	readTimeout := httpCfg.ReadTimeout
	if readTimeout <= 0 {
		readTimeout = config.DefaultReadTimeout
	}
	srv := &http.Server{
		Handler:           judgeFraming(h),
		ReadHeaderTimeout: min(10*time.Second, readTimeout),
		ReadTimeout:       readTimeout,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    maxReadHeaderBytes, // limitHead enforces the real limits, in JSON
		ConnContext:       connContext,
		// OPTIONS * must reach judgeFraming like any request, or the verdicts would shift.
		DisableGeneralOptionsHandler: true,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(framingListener{ln}) }()
	if log != nil {
		log.Info("listening", "addr", ln.Addr().String())
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if log != nil {
		log.Info("shutting down: draining in-flight requests")
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("graceful shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// SignalContext is cancelled on SIGINT or SIGTERM.
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// refuseAmbiguous answers 400 (ErrAmbiguousFraming) to a request its connection's framer
// refused; judgeFraming has asked for the connection to close after it.
func refuseAmbiguous(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if framingRefused(c.Request()) {
			return echo.NewHTTPError(http.StatusBadRequest).SetInternal(ErrAmbiguousFraming)
		}
		return next(c)
	}
}

// knownMethods are the method labels of the request metrics: any other method counts as
// "other", so that a client cannot add series (and /metrics bytes) by inventing methods.
var knownMethods = map[string]string{}

func init() {
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace} {
		knownMethods[m] = m
	}
}

func methodLabel(m string) string {
	if l, ok := knownMethods[m]; ok {
		return l
	}
	return "other"
}

// maxLogField bounds what a log line copies from a request (method, path, an error's text): a
// request line may be megabytes long, a log line should not be.
const maxLogField = 256

// clip returns s cut to maxLogField bytes (on a UTF-8 boundary) with a marker that it was cut.
func clip(s string) string {
	if len(s) <= maxLogField {
		return s
	}
	n := maxLogField
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…[cut " + strconv.Itoa(len(s)-n) + " bytes]"
}
