package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"

	"forumstats.local/shared/db"
	"forumstats.local/shared/ratelimit"
	"forumstats.local/shared/testutil/openapitest"
	"forumstats.local/stats-svc/internal/httpapi"
)

// The document served is the embedded one, with the conditional-GET headers.
func TestOpenAPIServed(t *testing.T) {
	s := newStack(t, pgDB(t), stackOptions{})
	r := do(t, "GET", s.url+"/api/openapi.json")
	if r.status != 200 || r.body != string(httpapi.OpenAPI()) || r.header.Get("ETag") == "" || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/openapi.json: %d %q", r.status, r.header)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(r.body), &v); err != nil || v["openapi"] != "3.1.0" {
		t.Fatalf("document: %v %v", err, v["openapi"])
	}
}

// The dashboard's files are text; openapi3filter decodes only the types it knows, so that their
// bodies (and a multi-range answer) are validated as the strings the document declares.
func init() {
	for _, mime := range []string{"text/html", "text/css", "text/javascript", "text/csv", "multipart/byteranges"} {
		openapi3filter.RegisterBodyDecoder(mime, openapi3filter.PlainBodyDecoder)
	}
}

// Real answers of every documented operation, for requests that reach every status each one
// documents, validate against the document (kin-openapi's openapi3filter, OpenAPI 3.1). The
// stacks serve app.Handler, so that the probes and the dashboard answer as in production.
func TestAnswersMatchOpenAPI(t *testing.T) {
	c := openapitest.New(t, httpapi.OpenAPI())
	doc := c.Doc
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi %s, want 3.1", doc.OpenAPI)
	}
	good := newStack(t, pgDB(t), stackOptions{redis: newRedis(t, "")})
	// A service whose database is closed: every read of the store fails (500) and /readyz
	// answers 503.
	broken, err := db.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "closed.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	bad := newStack(t, broken, stackOptions{direct: true})
	db.Close(broken)
	// A client whose requests are all over its rate limit: 429 on every route but the probes.
	limited := newStack(t, pgDB(t), stackOptions{direct: true, limiter: refuseAll{}})
	// A service whose one turn to read the database is held: every uncached answer is 503.
	hold, entered := make(chan struct{}), make(chan struct{}, 1) // entered: the first read may start before the select below
	busy := newStack(t, pgDB(t), stackOptions{coldLimit: 1, coldWait: time.Millisecond, hold: hold, entered: entered})
	t.Cleanup(func() { close(hold) })
	go func() {
		if res, err := http.Get(busy.url + statsPath + "?period=month&month=2026-10"); err == nil {
			res.Body.Close()
		}
	}()
	select {
	case <-entered: // the read holds the only turn until the end of the test
	case <-time.After(10 * time.Second):
		t.Fatal("the held read never started")
	}

	valid := map[string]string{
		statsPath:  "period=week&date=2026-11-20",
		iconsPath:  "",
		seriesPath: "from=2026-11-05&to=2026-11-20",
		// New York's 25-hour day, from the live counts.
		activityPath: "from=2026-10-31&to=2026-11-01&tz=America/New_York",
	}
	check := func(base, method, path, query string, header map[string]string, body ...byte) {
		t.Helper()
		target := base + path
		if query != "" {
			target += "?" + query
		}
		req, res, err := send(method, target, header, body)
		if err != nil {
			t.Fatal(err)
		}
		answer := []byte(res.body)
		route := c.Check(t, req, res.status, res.header, answer)
		if res.status == http.StatusNotModified {
			check304(t, route.Operation, res.header, answer)
		}
	}
	// The body limit (1 MiB) refuses a declared Content-Length over it before routing, whatever
	// the method.
	big := bytes.Repeat([]byte("b"), 1<<20+1)
	for path, item := range doc.Paths.Map() {
		files := fileNames(item)
		concrete := path
		if len(files) > 0 {
			concrete = strings.Replace(path, "{file}", files[0], 1)
		}
		base := strings.TrimSuffix(path, "/")
		q, isAPI := valid[base]
		for _, method := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"} {
			check(good.url, method, concrete, q, nil, big...)
		}
		for _, method := range []string{"GET", "HEAD"} {
			check(good.url, method, concrete, q, nil)
			check(good.url, method, concrete, q, map[string]string{"If-None-Match": "*"})
			check(good.url, method, concrete, q+"&x="+strings.Repeat("y", 20<<10), nil)
			check(good.url, method, concrete, q, map[string]string{"X-Big": strings.Repeat("z", 40<<10)})
			check(bad.url, method, concrete, q, nil)  // 500 on the API, 503 on /readyz
			check(busy.url, method, concrete, q, nil) // 503 service_busy on the API
			if isAPI {
				check(good.url, method, concrete, q+"&server=x", nil)
				check(good.url, method, concrete, q+"&server=4", nil)
			}
			if base == seriesPath || base == activityPath { // zones; one server's channels per hour or day
				check(good.url, method, concrete, "from=2026-10-31&to=2026-11-02&tz=America/New_York&server="+alphaID, nil)
				check(good.url, method, concrete, q+"&tz=Asia/Kolkata", nil)
			}
			if base == statsPath || base == seriesPath || base == activityPath { // the CSV exports
				check(good.url, method, concrete, q+"&format=csv", nil)
				check(good.url, method, concrete, q+"&format=csv", map[string]string{"If-None-Match": "*"})
				check(good.url, method, concrete, q, map[string]string{"Accept": "text/csv"})
				check(good.url, method, concrete, q+"&format=xml", nil)
				check(busy.url, method, concrete, q+"&format=csv", nil)
			}
			if path == "/" || strings.HasPrefix(path, "/static/") {
				// net/http's file server: ranges, preconditions.
				check(good.url, method, concrete, "", map[string]string{"Range": "bytes=0-9"})
				check(good.url, method, concrete, "", map[string]string{"Range": "bytes=0-1,3-4"})
				check(good.url, method, concrete, "", map[string]string{"Range": "bytes=999999999-"})
				check(good.url, method, concrete, "", map[string]string{"If-Match": `"x"`})
			}
			if len(files) > 0 {
				for _, f := range files[1:] {
					check(good.url, method, strings.Replace(path, "{file}", f, 1), "", nil)
				}
				check(good.url, method, strings.Replace(path, "{file}", "index.html", 1), "", nil) // 404
			}
		}
		for _, method := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"} {
			check(limited.url, method, concrete, q, nil) // 429 but on the probes
		}
		for _, method := range []string{"POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"} {
			check(good.url, method, concrete, q, nil)
			check(good.url, method, concrete, q+"&x="+strings.Repeat("y", 20<<10), nil)
			check(good.url, method, concrete, q, map[string]string{"X-Big": strings.Repeat("z", 40<<10)})
		}
	}
	// Every status every operation documents was reached.
	if missed := c.Unreached(); len(missed) > 0 {
		t.Fatalf("documented but never reached: %s", strings.Join(missed, ", "))
	}
	if c.Reached() < 100 {
		t.Fatalf("only %d method/path/status combinations reached", c.Reached())
	}
}

// refuseAll is a rate limit every request is over.
type refuseAll struct{}

func (refuseAll) Allow(context.Context, string) ratelimit.Decision {
	return ratelimit.Decision{RetryAfter: 2500 * time.Millisecond}
}

// fileNames lists the values the document allows for a path's {file} parameter (none: the path
// has none).
func fileNames(item *openapi3.PathItem) []string {
	for _, p := range item.Parameters {
		if p.Value.Name == "file" {
			var names []string
			for _, v := range p.Value.Schema.Value.Enum {
				names = append(names, v.(string))
			}
			return names
		}
	}
	return nil
}

// The document lists every file of the dashboard (internal/web/static) at its path: index.html
// as /, the others under /static/, and no file that is not there.
func TestOpenAPIListsEveryDashboardFile(t *testing.T) {
	doc := openapitest.New(t, httpapi.OpenAPI()).Doc
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		switch {
		case path == "/":
			documented["/index.html"] = true
		case strings.HasPrefix(path, "/static/"):
			for _, f := range fileNames(item) {
				documented[strings.TrimPrefix(strings.Replace(path, "{file}", f, 1), "/static")] = true
			}
		}
	}
	onDisk := map[string]bool{}
	err := fs.WalkDir(os.DirFS("../web/static"), ".", func(name string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			onDisk["/"+name] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(documented, onDisk) {
		t.Fatalf("documented %v, served %v", slices.Sorted(maps.Keys(documented)), slices.Sorted(maps.Keys(onDisk)))
	}
}

// check304 validates a 304 answer: documented, no body, every documented header present and
// valid against its schema.
func check304(t *testing.T, op *openapi3.Operation, h http.Header, body []byte) {
	t.Helper()
	ref := op.Responses.Status(http.StatusNotModified)
	if ref == nil || len(body) != 0 {
		t.Errorf("%s: 304 undocumented or with a body (%d bytes)", op.OperationID, len(body))
		return
	}
	for name, hr := range ref.Value.Headers {
		v := h.Get(name)
		if v == "" {
			t.Errorf("%s: 304 without %s", op.OperationID, name)
			continue
		}
		if err := hr.Value.Schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("%s: 304 %s %q: %v", op.OperationID, name, v, err)
		}
	}
}
