// Package web serves the dashboard: a page built into the binary that uses only the public API
// (statistics, series) and a vendored chart library (uPlot, from the npm registry, with its
// license), so that no request leaves for the internet.
package web

import (
	"embed"
	"io/fs"
	"net/http"

	"github.com/labstack/echo/v4"
)

//go:embed static
var static embed.FS

// Register serves GET and HEAD / (the page) and /static/* (its script, styles and library); any
// other method answers 405 through the service's error handler.
func Register(e *echo.Echo) {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServer(http.FS(sub))
	serve := func(c echo.Context) error {
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
