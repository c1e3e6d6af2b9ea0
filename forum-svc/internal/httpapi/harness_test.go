package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/app"
	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/forum-svc/internal/event"
	"forumstats.local/forum-svc/internal/seed"
	"forumstats.local/forum-svc/migrations"
	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/ratelimit"
	"forumstats.local/shared/testutil"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(idleClientsEnv); addr != "" {
		idleClients(addr) // this binary plays the idle clients of BenchmarkIdleStreams
	}
	testutil.Run(m)
}

// The fixture. Page size 5. Conversation 10 has 10 messages (a multiple of the page size), 11 has
// 11 (one more), 12 has 3 (a single page); 13 is between dave and erin only. Messages of 10 have
// ties on message_date, listed out of order on purpose.
const (
	keyAlice       = "alice-user-key-0123456789abcdef01234"
	keyAliceRead   = "alice-read-only-key-0123456789abcdef"
	keyAliceWrite  = "alice-write-only-key-0123456789abcde"
	keyBob         = "bob-user-key-0123456789abcdef0123456"
	keyDave        = "dave-user-key-0123456789abcdef012345"
	keySuper       = "super-key-0123456789abcdef0123456789"
	keySuperNoRead = "super-write-only-0123456789abcdef012"
	keyGuest       = "guest-key-0123456789abcdef0123456789"
	keyInactive    = "inactive-key-0123456789abcdef012345"
	keyExpired     = "expired-key-0123456789abcdef0123456"

	// now is the test clock; the expired key expired an hour before.
	now = 1_800_000_000
	t0  = 1_767_225_600
)

var allKeys = []string{keyAlice, keyAliceRead, keyAliceWrite, keyBob, keyDave, keySuper, keySuperNoRead, keyGuest, keyInactive, keyExpired}

func fixture() string {
	var msgs10 []string
	// message_id -> date: 1001..1010, with 1003/1007 tied and 1009 before 1002 in time.
	dates := map[int]int{1001: 0, 1002: 200, 1003: 300, 1004: 400, 1005: 500, 1006: 600, 1007: 300, 1008: 800, 1009: 100, 1010: 900}
	authors := map[int]int{1001: 1, 1002: 2, 1003: 3, 1004: 1, 1005: 2, 1006: 3, 1007: 1, 1008: 2, 1009: 3, 1010: 1}
	for _, id := range []int{1010, 1003, 1001, 1007, 1002, 1009, 1004, 1006, 1005, 1008} {
		msgs10 = append(msgs10, fmt.Sprintf(`{"message_id": %d, "user_id": %d, "message": "m%d", "message_date": %d}`, id, authors[id], id, t0+dates[id]))
	}
	var msgs11 []string
	for i := range 11 {
		msgs11 = append(msgs11, fmt.Sprintf(`{"message_id": %d, "user_id": %d, "message": "n%d", "message_date": %d}`, 1101+i, 1+i%2, i, t0+1000+i*10))
	}
	return fmt.Sprintf(`{
  "options": {"messagesPerPage": 5},
  "users": [{"user_id": 1, "username": "alice"}, {"user_id": 2, "username": "bob"},
            {"user_id": 3, "username": "carol"}, {"user_id": 4, "username": "dave"},
            {"user_id": 5, "username": "erin"}],
  "conversations": [
    {"conversation_id": 10, "title": "Ten", "user_id": 1, "recipients": [3, 2], "messages": [%s]},
    {"conversation_id": 11, "title": "Eleven", "user_id": 2, "recipients": [1], "messages": [%s]},
    {"conversation_id": 12, "title": "Twelve", "user_id": 1, "recipients": [2], "messages": [
      {"message_id": 1201, "user_id": 1, "message": "a", "message_date": %[3]d},
      {"message_id": 1202, "user_id": 2, "message": "b", "message_date": %[4]d},
      {"message_id": 1203, "user_id": 1, "message": "c", "message_date": %[5]d}]},
    {"conversation_id": 13, "title": "Thirteen", "user_id": 4, "recipients": [5], "messages": [
      {"message_id": 1301, "user_id": 4, "message": "secret", "message_date": %[3]d},
      {"message_id": 1302, "user_id": 5, "message": "reply", "message_date": %[4]d}]}
  ],
  "read_state": [{"conversation_id": 10, "user_id": 2, "last_read_date": %[6]d}],
  "api_keys": [
    {"key": %q, "type": "user", "user_id": 1, "scopes": ["conversation:read", "conversation:write"], "active": true, "expires_at": null},
    {"key": %q, "type": "user", "user_id": 1, "scopes": ["conversation:read"]},
    {"key": %q, "type": "user", "user_id": 1, "scopes": ["conversation:write"]},
    {"key": %q, "type": "user", "user_id": 2, "scopes": ["conversation:read", "conversation:write"]},
    {"key": %q, "type": "user", "user_id": 4, "scopes": ["conversation:read", "conversation:write"]},
    {"key": %q, "type": "super", "scopes": ["conversation:read", "conversation:write"]},
    {"key": %q, "type": "super", "scopes": ["conversation:write"]},
    {"key": %q, "type": "guest", "scopes": ["conversation:read", "conversation:write"]},
    {"key": %q, "type": "user", "user_id": 1, "scopes": ["conversation:read"], "active": false},
    {"key": %q, "type": "user", "user_id": 1, "scopes": ["conversation:read"], "expires_at": %d}
  ]
}`, strings.Join(msgs10, ",\n"), strings.Join(msgs11, ",\n"), t0+5000, t0+5100, t0+5200, t0+500,
		keyAlice, keyAliceRead, keyAliceWrite, keyBob, keyDave, keySuper, keySuperNoRead, keyGuest, keyInactive, keyExpired, now-3600)
}

type env struct {
	t     testing.TB
	h     http.Handler
	gdb   *gorm.DB
	clock *testutil.Clock
	logs  *testutil.Buffer
}

type envOptions struct {
	databaseURL  string // default: a fresh PostgreSQL database
	rateLimit    ratelimit.Config
	authFailures ratelimit.Config // default: out of the way (the tests of the throttle set it)
	keyLookups   int              // the lookup budget a second; default: auth's
	corsOrigins  []string         // CORS_ALLOWED_ORIGINS
	stream       event.StreamOptions
}

func newEnv(t testing.TB, opts envOptions) *env {
	t.Helper()
	ctx := context.Background()
	if opts.databaseURL == "" {
		opts.databaseURL = testutil.NewDatabase(t, migrations.Set)
	}
	if opts.rateLimit.PerMinute == 0 {
		opts.rateLimit = ratelimit.Config{PerMinute: 1_000_000, Burst: 1_000_000}
	}
	if opts.authFailures.PerMinute == 0 {
		opts.authFailures = ratelimit.Config{PerMinute: 1_000_000, Burst: 1_000_000}
	}
	gdb, err := migrate.Open(ctx, opts.databaseURL, nil, true, migrations.Set)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(gdb) })
	f, err := seed.Parse(strings.NewReader(fixture()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := seed.Load(ctx, gdb, f, time.Unix(now, 0)); err != nil {
		t.Fatal(err)
	}
	clk := testutil.NewClock(time.Unix(now, 0))
	logs := &testutil.Buffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := app.Config{RateLimit: opts.rateLimit, AuthFailures: opts.authFailures, KeyLookupsPerSecond: opts.keyLookups,
		CORSAllowedOrigins: opts.corsOrigins}
	svc, err := app.New(ctx, cfg, log, app.WithDB(gdb), app.WithClock(clk.Now), app.WithStreamOptions(opts.stream))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	return &env{t: t, h: svc.Handler(), gdb: gdb, clock: clk, logs: logs}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return m
}

// req sends method path with the given headers ("Name: value" strings) and form body.
func (e *env) req(method, path string, form url.Values, headers ...string) response {
	e.t.Helper()
	if form == nil {
		return e.raw(method, path, "", "", headers...)
	}
	return e.raw(method, path, "application/x-www-form-urlencoded", form.Encode(), headers...)
}

// raw sends method target with a body of any type (no Content-Type when contentType is "") and
// the given headers ("Name: value" strings).
func (e *env) raw(method, target, contentType, body string, headers ...string) response {
	return e.serve(request(method, target, contentType, body, headers...))
}

// request is the request raw sends, for a test that changes it (a header kept verbatim or
// repeated, an unknown length) before serve.
func request(method, target, contentType, body string, headers ...string) *http.Request {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ":")
		r.Header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	return r
}

// serve answers r.
func (e *env) serve(r *http.Request) response {
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	return response{status: w.Code, header: w.Header(), body: w.Body.Bytes()}
}

func (e *env) get(path string, headers ...string) response {
	e.t.Helper()
	return e.req(http.MethodGet, path, nil, headers...)
}

func (e *env) post(path string, form url.Values, headers ...string) response {
	e.t.Helper()
	return e.req(http.MethodPost, path, form, headers...)
}

func key(k string) string  { return auth.HeaderAPIKey + ": " + k }
func user(u string) string { return auth.HeaderAPIUser + ": " + u }

// wantError checks the status and that the body is exactly one error in the envelope with code
// and params.
func wantError(t *testing.T, r response, status int, code string, params map[string]any) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, body %s; want %d %s", r.status, r.body, status, code)
	}
	var body struct {
		Errors []struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Params  map[string]any `json:"params"`
		} `json:"errors"`
	}
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("error body %s: %v", r.body, err)
	}
	if len(body.Errors) != 1 {
		t.Fatalf("error body %s: want one error", r.body)
	}
	got := body.Errors[0]
	if got.Code != code || got.Message == "" || got.Params == nil {
		t.Fatalf("error %s; want code %s, a message and params", r.body, code)
	}
	if params == nil {
		params = map[string]any{}
	}
	if fmt.Sprint(got.Params) != fmt.Sprint(params) {
		t.Fatalf("params %v; want %v", got.Params, params)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q", ct)
	}
}

// wantJSON checks a 200 answer whose body equals want (a JSON text) exactly: no field missing,
// none extra, every value equal.
func wantJSON(t *testing.T, r response, want string) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d, body %s; want 200", r.status, r.body)
	}
	var got, exp any
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatalf("body %s: %v", r.body, err)
	}
	if err := json.Unmarshal([]byte(want), &exp); err != nil {
		t.Fatalf("expected JSON: %v", err)
	}
	g, _ := json.Marshal(got)
	x, _ := json.Marshal(exp)
	if !bytes.Equal(g, x) {
		t.Fatalf("body\n%s\nwant\n%s", g, x)
	}
}

// messageIDs returns the message ids of a list response.
func messageIDs(t *testing.T, r response) []int64 {
	t.Helper()
	return idsOf(t, r, "messages", "message_id")
}

// idsOf returns the ids (field idField) of the objects of the array list in a response.
func idsOf(t *testing.T, r response, list, idField string) []int64 {
	t.Helper()
	ids := []int64{}
	objects, _ := r.json(t)[list].([]any)
	for _, o := range objects {
		m, _ := o.(map[string]any)
		n, _ := m[idField].(json.Number)
		id, err := n.Int64()
		if err != nil {
			t.Fatalf("%s of %s: %v", idField, r.body, err)
		}
		ids = append(ids, id)
	}
	return ids
}

func openSQLite(t *testing.T) string {
	t.Helper()
	u := "sqlite:" + t.TempDir() + "/forum.db"
	gdb, err := db.Open(context.Background(), u, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close(gdb)
	return u
}

// dialects runs body against PostgreSQL and against the embedded SQLite: one code path, two
// databases.
func dialects(t *testing.T, body func(t *testing.T, e *env)) {
	t.Run("postgres", func(t *testing.T) { body(t, newEnv(t, envOptions{})) })
	t.Run("sqlite", func(t *testing.T) { body(t, newEnv(t, envOptions{databaseURL: openSQLite(t)})) })
}
