// Package web serves the dashboard: a page built into the binary that uses only the public API
// (statistics, series) and a vendored chart library (uPlot, from the npm registry, with its
// license), so that no request leaves for the internet.
package web

import (
	"embed"
	"io/fs"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"
)

//go:embed static
var static embed.FS

// Options configure the dashboard.
type Options struct {
	// CDN is the base URL of the icons and banners the API links to (CDN_BASE_URL): the one
	// origin besides the service's own that the page may load images from.
	CDN string
}

// ContentSecurityPolicy is the policy of the page and its files for a CDN base URL: everything
// from the service's own origin only (the page's script and styles are files, never inline, so
// neither needs 'unsafe-inline'), images also from the CDN's origin, no plugins, no <base>,
// forms submitted only to the service, and no page of any origin may frame the dashboard
// (clickjacking).
func ContentSecurityPolicy(cdn string) string {
	img := "'self'"
	if u, err := url.Parse(cdn); err == nil && u.Scheme != "" && u.Host != "" {
		img += " " + u.Scheme + "://" + u.Host
	}
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src " + img +
		"; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}

// Register serves GET and HEAD / (the page) and /static/* (its script, styles and library); any
// other method answers 405 through the service's error handler. Every answer carries the
// Content-Security-Policy, Referrer-Policy no-referrer (the page's links to the CDN tell it
// nothing of where they were followed from) and X-Content-Type-Options nosniff (a file is only
// ever what its Content-Type says).
func Register(e *echo.Echo, opts Options) {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServer(http.FS(sub))
	csp := ContentSecurityPolicy(opts.CDN)
	serve := func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("Referrer-Policy", "no-referrer")
		h.Set(echo.HeaderXContentTypeOptions, "nosniff")
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead:
		default:
			return echo.ErrMethodNotAllowed
		}
		r := c.Request().Clone(c.Request().Context())
		if c.Path() == "/" {
			r.URL.Path = "/"
		} else {
			// Only files: a missing one or a directory is the service's JSON 404, never
			// the file server's text or listing.
			name := c.Param("*")
			if st, err := fs.Stat(sub, name); err != nil || st.IsDir() || name == "index.html" {
				return echo.ErrNotFound
			}
			r.URL.Path = "/" + name
		}
		c.Response().Header().Set("Cache-Control", "public, max-age=60")
		w := &refusals{ResponseWriter: c.Response()}
		files.ServeHTTP(w, r)
		if w.status != 0 {
			c.Response().Header().Del("Cache-Control")
			return echo.NewHTTPError(w.status)
		}
		return nil
	}
	e.Any("/", serve)
	e.Any("/static/*", serve)
}

// refusals holds back the file server's refusals (412 for an If-Match, 416 for a Range outside
// the file), which net/http writes in plain text, for the service's error handler to answer in
// the JSON envelope like every other error; the headers the file server set (Content-Range) stay.
type refusals struct {
	http.ResponseWriter
	status int
}

func (w *refusals) WriteHeader(code int) {
	if code >= http.StatusBadRequest {
		w.status = code
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *refusals) Write(b []byte) (int, error) {
	if w.status != 0 {
		return len(b), nil // the refusal's plain text
	}
	return w.ResponseWriter.Write(b)
}
