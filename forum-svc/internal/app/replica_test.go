package app

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/forum-svc/internal/seed"
	"forumstats.local/forum-svc/migrations"
	"forumstats.local/shared/config"
	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/ratelimit"
	"forumstats.local/shared/testutil"
)

// TestReplicaDownStaysReady: a read replica that cannot be reached (a closed port) keeps
// neither the service from starting nor /readyz from answering 200, and reads are answered by
// the primary.
func TestReplicaDownStaysReady(t *testing.T) {
	if _, err := testutil.PostgresURL(); err != nil {
		t.Fatalf("no PostgreSQL (TEST_POSTGRES_URL, 127.0.0.1:5432 or Docker): %v", err)
	}
	ctx := context.Background()
	gdb := testutil.OpenDB(t, testutil.NewDatabase(t, migrations.Set))
	uid, date := int64(1), int64(1700000000)
	f := &seed.File{
		Users: []seed.User{{UserID: 1, Username: "alice"}, {UserID: 2, Username: "bob"}},
		Conversations: []seed.Conversation{{ConversationID: 10, Title: "on the primary", UserID: 1, Recipients: []int64{2},
			Messages: []seed.Message{{MessageID: 100, UserID: 1, Message: "hello", MessageDate: &date}}}},
		APIKeys: []seed.APIKey{{Key: "replica-test-key-0123456789abcdef", Type: "user", UserID: &uid, Scopes: []string{"conversation:read"}}},
	}
	if _, err := seed.Load(ctx, gdb, f, time.Unix(date, 0)); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "postgres://postgres@" + ln.Addr().String() + "/none?sslmode=disable&connect_timeout=2"
	ln.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := Config{RateLimit: ratelimit.Config{PerMinute: 600, Burst: 60}, DatabaseReadURL: closed}
	svc, err := New(ctx, cfg, log, WithDB(gdb))
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	if !svc.reads.Replica() {
		t.Fatal("DATABASE_READ_URL opened no replica")
	}
	get := func(target string) (int, string) {
		req := httptest.NewRequest(http.MethodGet, target, nil)
		req.Header.Set("Forum-Api-Key", "replica-test-key-0123456789abcdef")
		rec := httptest.NewRecorder()
		svc.Handler().ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	if code, body := get("/readyz"); code != http.StatusOK {
		t.Fatalf("readyz with the replica down: %d %s", code, body)
	}
	if code, body := get("/api/conversations/10/"); code != http.StatusOK || !strings.Contains(body, "on the primary") {
		t.Fatalf("read with the replica down: %d %s", code, body)
	}
}

// TestLoadConfigDurations: READ_PRIMARY_AFTER_WRITE and IDEMPOTENCY_SWEEP_INTERVAL, each with
// the other unset, and the replica's URL beside them.
func TestLoadConfigDurations(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	t.Setenv("DATABASE_READ_URL", "postgres://replica.example/forum")
	for _, tc := range []struct {
		name, value string
		want        time.Duration
		ok          bool
	}{
		{"READ_PRIMARY_AFTER_WRITE", "", db.DefaultPinAfterWrite, true},
		{"READ_PRIMARY_AFTER_WRITE", "2s", 2 * time.Second, true},
		{"READ_PRIMARY_AFTER_WRITE", "0s", 0, false},
		{"READ_PRIMARY_AFTER_WRITE", "-1s", 0, false},
		{"READ_PRIMARY_AFTER_WRITE", "2h", 0, false},
		{"READ_PRIMARY_AFTER_WRITE", "soon", 0, false},
		{"IDEMPOTENCY_SWEEP_INTERVAL", "", DefaultRetrySweepInterval, true},
		{"IDEMPOTENCY_SWEEP_INTERVAL", "0", 0, true},
		{"IDEMPOTENCY_SWEEP_INTERVAL", "1s", time.Second, true},
		{"IDEMPOTENCY_SWEEP_INTERVAL", "24h", 24 * time.Hour, true},
		{"IDEMPOTENCY_SWEEP_INTERVAL", "999ms", 0, false},
		{"IDEMPOTENCY_SWEEP_INTERVAL", "25h", 0, false},
		{"IDEMPOTENCY_SWEEP_INTERVAL", "-1m", 0, false},
		{"IDEMPOTENCY_SWEEP_INTERVAL", "10", 0, false},
	} {
		t.Setenv(tc.name, tc.value)
		cfg, err := LoadConfig()
		got := map[string]time.Duration{"READ_PRIMARY_AFTER_WRITE": cfg.PrimaryAfterWrite, "IDEMPOTENCY_SWEEP_INTERVAL": cfg.RetrySweepInterval}[tc.name]
		if (err == nil) != tc.ok || (tc.ok && (got != tc.want || cfg.DatabaseReadURL != "postgres://replica.example/forum")) {
			t.Errorf("%s=%q: %+v, %v", tc.name, tc.value, cfg, err)
		}
		t.Setenv(tc.name, "")
	}
}

// TestLoadConfigAuthFailures: AUTH_FAILURES_PER_MINUTE, AUTH_FAILURES_BURST and
// AUTH_KEY_LOOKUPS_PER_SECOND, each with the others unset.
func TestLoadConfigAuthFailures(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	for _, tc := range []struct {
		name, value string
		want        int
		ok          bool
	}{
		{"AUTH_FAILURES_PER_MINUTE", "", DefaultAuthFailuresPerMinute, true},
		{"AUTH_FAILURES_PER_MINUTE", "5", 5, true},
		{"AUTH_FAILURES_PER_MINUTE", "0", 0, false},
		{"AUTH_FAILURES_PER_MINUTE", "many", 0, false},
		{"AUTH_FAILURES_BURST", "", DefaultAuthFailuresBurst, true},
		{"AUTH_FAILURES_BURST", "3", 3, true},
		{"AUTH_FAILURES_BURST", "0", 0, false},
		{"AUTH_KEY_LOOKUPS_PER_SECOND", "", auth.DefaultKeyLookupsPerSecond, true},
		{"AUTH_KEY_LOOKUPS_PER_SECOND", "20", 20, true},
		{"AUTH_KEY_LOOKUPS_PER_SECOND", "0", 0, false},
		{"AUTH_KEY_LOOKUPS_PER_SECOND", "-5", 0, false},
	} {
		t.Setenv(tc.name, tc.value)
		cfg, err := LoadConfig()
		got := map[string]int{"AUTH_FAILURES_PER_MINUTE": cfg.AuthFailures.PerMinute, "AUTH_FAILURES_BURST": cfg.AuthFailures.Burst,
			"AUTH_KEY_LOOKUPS_PER_SECOND": cfg.KeyLookupsPerSecond}[tc.name]
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("%s=%q: %+v, %v", tc.name, tc.value, cfg, err)
		}
		t.Setenv(tc.name, "")
	}
}

// TestNewWithDB: New over a database the test opened answers from it and never opens
// DATABASE_URL, and Close leaves that database open.
func TestNewWithDB(t *testing.T) {
	ctx := context.Background()
	gdb, err := migrate.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "forum.db"), nil, true, migrations.Set)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(gdb)
	never := filepath.Join(t.TempDir(), "never-opened.db")
	a, err := New(ctx, Config{Common: config.Common{DatabaseURL: "sqlite:" + never, MigrateOnStart: true}}, nil, WithDB(gdb))
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("readyz: %d %s", rec.Code, rec.Body)
	}
	a.Close()
	if err := db.Ping(gdb)(ctx); err != nil {
		t.Fatalf("Close closed the database the test opened: %v", err)
	}
	if _, err := os.Stat(never); !os.IsNotExist(err) {
		t.Fatalf("New opened DATABASE_URL beside WithDB: %v", err)
	}
}
