package xfclient_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"forumstats.local/forum-svc/internal/app"
	"forumstats.local/forum-svc/internal/seed"
	"forumstats.local/forum-svc/migrations"
	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/ratelimit"
	"forumstats.local/shared/testutil"
)

func TestMain(m *testing.M) { testutil.Run(m) }

// The forum of the conversation: four users, two messages a page (so that three messages make
// two pages), and a super key with every scope, which acts as the user its request names, as
// XenForo's super keys do.
const (
	alice, bob, carol, dave int64 = 1, 2, 3, 4

	superKey = "xfclient-super-key-0123456789abcdef01"
)

var fixture = fmt.Sprintf(`{
  "options": {"messagesPerPage": 2},
  "users": [{"user_id": 1, "username": "alice"}, {"user_id": 2, "username": "bob"},
            {"user_id": 3, "username": "carol"}, {"user_id": 4, "username": "dave"}],
  "api_keys": [{"key": %q, "type": "super",
                "scopes": ["conversation:read", "conversation:write", "attachment:read", "attachment:write"]}]
}`, superKey)

// dialects runs body against forum-svc's handler (internal/app, as `serve` builds it) on an
// httptest server, over PostgreSQL and over the embedded SQLite: one code path, two databases.
func dialects(t *testing.T, body func(t *testing.T, baseURL string)) {
	t.Run("postgres", func(t *testing.T) { body(t, serve(t, testutil.NewDatabase(t, migrations.Set))) })
	t.Run("sqlite", func(t *testing.T) { body(t, serve(t, "sqlite:"+t.TempDir()+"/forum.db")) })
}

// serve migrates and seeds the database at databaseURL, starts the service on it and returns the
// server's URL.
func serve(t *testing.T, databaseURL string) string {
	t.Helper()
	ctx := context.Background()
	gdb, err := migrate.Open(ctx, databaseURL, nil, true, migrations.Set)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(gdb) })
	f, err := seed.Parse(strings.NewReader(fixture))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := seed.Load(ctx, gdb, f, time.Now()); err != nil {
		t.Fatal(err)
	}
	unlimited := ratelimit.Config{PerMinute: 1_000_000, Burst: 1_000_000}
	cfg := app.Config{RateLimit: unlimited, AuthFailures: unlimited}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := app.New(ctx, cfg, log, app.WithDB(gdb))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// actingAs is the one change a XenForo client needs: where it sets XF-Api-Key and XF-Api-User,
// it sets Forum-Api-Key and Forum-Api-User. The generated clients take it as a RequestEditorFn
// (each package has its own named type of the same signature).
func actingAs(user int64) func(ctx context.Context, req *http.Request) error {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Set("Forum-Api-Key", superKey)
		req.Header.Set("Forum-Api-User", strconv.FormatInt(user, 10))
		return nil
	}
}

// recorder is the generated clients' HTTP doer: it sends each request as http.Client does and
// keeps the last request's method, URL and body, so that the test can say what a client sent.
type recorder struct {
	client *http.Client
	mu     sync.Mutex
	last   sent
}

type sent struct {
	method, url, contentType string
	body                     []byte
}

func newRecorder() *recorder { return &recorder{client: &http.Client{Timeout: 30 * time.Second}} }

func (r *recorder) Do(req *http.Request) (*http.Response, error) {
	s := sent{method: req.Method, url: req.URL.String(), contentType: req.Header.Get("Content-Type")}
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		s.body = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	r.mu.Lock()
	r.last = s
	r.mu.Unlock()
	return r.client.Do(req)
}

func (r *recorder) lastSent() sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// multipartBody is a multipart/form-data body of fields, then the file part `attachment`, as
// XenForo's uploads are sent (the generated clients take a multipart body ready-made).
func multipartBody(t *testing.T, fields [][2]string, filename string, data []byte) (contentType string, body *bytes.Buffer) {
	t.Helper()
	body = &bytes.Buffer{}
	mw := multipart.NewWriter(body)
	for _, f := range fields {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	w, err := mw.CreateFormFile("attachment", filename)
	if err == nil {
		_, err = w.Write(data)
	}
	if err == nil {
		err = mw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return mw.FormDataContentType(), body
}
