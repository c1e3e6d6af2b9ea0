package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// The limits of a request's head that the service enforces itself, so that an oversized one is
// answered in the service's own JSON envelope: net/http would answer plain text. net/http's own
// limit (maxReadHeaderBytes) sits above them, so that a head over them but under it reaches the
// middleware.
const (
	// MaxRequestTarget bounds the request target (path and query string): 414 uri_too_long.
	MaxRequestTarget = 16 << 10
	// MaxHeaderBlock bounds the header fields, names and values with their separators:
	// 431 request_header_fields_too_large.
	MaxHeaderBlock = 32 << 10
	// maxReadHeaderBytes is http.Server's MaxHeaderBytes (net/http reads 4 KiB more): the
	// whole head net/http parses into a map before any handler runs. Above it net/http refuses
	// the request itself (plain-text 431). It is kept near the two limits above because that map
	// costs tens of times the bytes sent: at 1 MiB, 30 concurrent heads of empty header lines
	// took a service from 19 MB to 398 MB resident.
	maxReadHeaderBytes = 64 << 10
)

// limitHead answers 414 or 431 through the error handler when the request target or the header
// block passes its limit. It runs before the handlers, whatever the route.
func limitHead(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if len(r.RequestURI) > MaxRequestTarget {
			return echo.NewHTTPError(http.StatusRequestURITooLong)
		}
		if headerBlockSize(r) > MaxHeaderBlock {
			return echo.NewHTTPError(http.StatusRequestHeaderFieldsTooLarge)
		}
		return next(c)
	}
}

// headerBlockSize is the size of the header fields as sent: "Name: value\r\n" each (Host,
// which net/http takes out of the map, included).
func headerBlockSize(r *http.Request) int {
	n := len("Host: \r\n") + len(r.Host)
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + len(": \r\n")
			if n > MaxHeaderBlock {
				return n // enough to refuse; don't walk a huge map further
			}
		}
	}
	return n
}
