// Package web serves the dashboard: a page built into the binary that uses only the public API
// (statistics, series) and a vendored chart library (uPlot, from the npm registry, with its
// license), so that no request leaves for the internet.
package web

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"

	"forumstats.local/shared/httpcoding"
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

// Dashboard is the page and its files, served by the service's HTTP layer (httpapi mounts it at
// / and /static/*), which also answers its refusals (*Refusal) in the service's JSON envelope.
type Dashboard struct {
	sub   fs.FS
	files http.Handler
	csp   string
	known map[string]file // by name under static/, index.html included
}

// file is what the dashboard knows of a file beyond the file server: its identity tag and, for a
// text file worth compressing, its gzip bytes, computed once when the dashboard is built (the
// files are fixed at build time).
type file struct {
	tag, contentType string
	gzip             []byte // nil: sent as it is
}

// compressible are the extensions of the dashboard's text files, the ones gzip shrinks.
var compressible = map[string]bool{".html": true, ".js": true, ".css": true, ".svg": true, ".json": true, ".txt": true}

// New returns the dashboard for opts.
func New(opts Options) *Dashboard {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := map[string]file{}
	err = fs.WalkDir(sub, ".", func(name string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := fs.ReadFile(sub, name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		f := file{tag: `"` + base64.RawURLEncoding.EncodeToString(sum[:12]) + `"`, contentType: mime.TypeByExtension(path.Ext(name))}
		if compressible[path.Ext(name)] && httpcoding.Worth(len(b)) {
			f.gzip = httpcoding.Gzip(b)
		}
		files[name] = f
		return nil
	})
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return &Dashboard{sub: sub, files: http.FileServer(http.FS(sub)), csp: ContentSecurityPolicy(opts.CDN), known: files}
}

// Refusal is a request the dashboard does not answer itself: its HTTP status (404, 405, or the
// file server's 412 and 416), for the service's error handler to answer.
type Refusal struct{ Status int }

func (r *Refusal) Error() string { return "dashboard: " + http.StatusText(r.Status) }

// Page answers GET and HEAD of the page, any other method with a 405 Refusal.
func (d *Dashboard) Page(w http.ResponseWriter, r *http.Request) error {
	return d.serve(w, r, true, "")
}

// File answers GET and HEAD of the file name (its path under /static/), any other method with a
// 405 Refusal. Only files: a missing one, a directory (the empty name included) or the page's
// index.html is a 404 Refusal, the service's JSON 404, never the file server's text or listing.
func (d *Dashboard) File(w http.ResponseWriter, r *http.Request, name string) error {
	return d.serve(w, r, false, name)
}

// serve answers the page or the file name. Every answer carries the Content-Security-Policy,
// Referrer-Policy no-referrer (the page's links to the CDN tell it nothing of where they were
// followed from) and X-Content-Type-Options nosniff (a file is only ever what its Content-Type
// says), refusals included.
func (d *Dashboard) serve(w http.ResponseWriter, r *http.Request, page bool, name string) error {
	h := w.Header()
	h.Set("Content-Security-Policy", d.csp)
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	default:
		return &Refusal{http.StatusMethodNotAllowed}
	}
	r = r.Clone(r.Context())
	if page {
		r.URL.Path = "/"
		name = "index.html"
	} else {
		if st, err := fs.Stat(d.sub, name); err != nil || st.IsDir() || name == "index.html" {
			return &Refusal{http.StatusNotFound}
		}
		r.URL.Path = "/" + name
	}
	h.Set("Cache-Control", "public, max-age=60")
	if f, ok := d.known[name]; ok && d.validated(w, r, f) {
		return nil
	}
	rw := &refusals{ResponseWriter: w}
	d.files.ServeHTTP(rw, r)
	if rw.status != 0 {
		h.Del("Cache-Control")
		return &Refusal{rw.status}
	}
	return nil
}

// validated answers a file itself when it can, and reports whether it did: a 304 when
// If-None-Match names the file's tag in either coding (a client keeps whichever it was sent), and
// the gzip bytes (a HEAD: their headers) of a text file worth compressing for a client that
// accepts gzip. A Range, an If-Match or an If-Unmodified-Since is left to the file server on the
// identity bytes (byte ranges name offsets in those), and so is everything else. The ETag names
// the representation: the identity tag, or its gzip form.
func (d *Dashboard) validated(w http.ResponseWriter, r *http.Request, t file) bool {
	h := w.Header()
	h.Set("Vary", "Accept-Encoding")
	gz := t.gzip != nil && r.Header.Get("Range") == "" && r.Header.Get("If-Match") == "" &&
		r.Header.Get("If-Unmodified-Since") == "" && httpcoding.AcceptsGzip(r.Header.Values("Accept-Encoding"))
	if gz {
		h.Set("ETag", httpcoding.GzipTag(t.tag))
	} else {
		h.Set("ETag", t.tag) // the file server also checks If-Range against it
	}
	if r.Header.Get("If-Match") == "" && r.Header.Get("If-Unmodified-Since") == "" &&
		httpcoding.NoneMatch(r.Header.Values("If-None-Match"), t.tag) {
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	if !gz {
		return false
	}
	h.Set("Content-Type", t.contentType)
	h.Set("Content-Encoding", "gzip")
	h.Set("Content-Length", strconv.Itoa(len(t.gzip)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(t.gzip) // a client gone is nothing to answer
	}
	return true
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
