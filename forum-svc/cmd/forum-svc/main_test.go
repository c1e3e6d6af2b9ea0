package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"forumstats.local/forum-svc/internal/app"
	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/forum-svc/migrations"
	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/ratelimit"
	"forumstats.local/shared/testutil"
)

// The test binary doubles as the command: with FORUM_SVC_RUN_MAIN=1 it runs main().
func TestMain(m *testing.M) {
	if os.Getenv("FORUM_SVC_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	code := m.Run()
	testutil.CleanupContainers()
	os.Exit(code)
}

// command runs the real command with args and the given DATABASE_URL.
func command(t *testing.T, dbURL string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return commandEnv(t, dbURL, nil, args...)
}

// commandEnv is command with more environment.
func commandEnv(t *testing.T, dbURL string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "FORUM_SVC_RUN_MAIN=1", "DATABASE_URL="+dbURL, "LOG_LEVEL=error"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

func demoFile(t *testing.T) string {
	p, err := filepath.Abs("../../demo/seed.json")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func dbs(t *testing.T, body func(t *testing.T, url string)) {
	t.Run("postgres", func(t *testing.T) { body(t, testutil.NewDatabase(t, migrations.Set)) })
	t.Run("sqlite", func(t *testing.T) { body(t, "sqlite:"+filepath.Join(t.TempDir(), "forum.db")) })
}

func oneLineError(t *testing.T, stderr string, code int, want string) {
	t.Helper()
	if code == 0 {
		t.Fatalf("exit 0; want failure (%s)", want)
	}
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], want) {
		t.Fatalf("stderr %q; want one line containing %q", stderr, want)
	}
}

func TestCommands(t *testing.T) {
	dbs(t, func(t *testing.T, url string) {
		if out, errs, code := command(t, url, "migrate"); code != 0 || !strings.Contains(out, "up to date") {
			t.Fatalf("migrate: %d %q %q", code, out, errs)
		}
		out, errs, code := command(t, url, "seed", "--file", demoFile(t))
		if code != 0 || !strings.Contains(out, "4 users, 2 conversations, 27 messages") {
			t.Fatalf("seed: %d %q %q", code, out, errs)
		}

		// apikey create prints the key once; it works at once through the service.
		out, errs, code = command(t, url, "apikey", "create", "--type", "user", "--user-id", "1", "--scopes", "conversation:read,conversation:write")
		if code != 0 {
			t.Fatalf("apikey create: %d %q", code, errs)
		}
		newKey := strings.TrimSpace(out)
		if len(newKey) < auth.MinKeyLength || strings.Contains(newKey, "\n") {
			t.Fatalf("printed key %q", out)
		}
		gdb, err := migrate.Open(context.Background(), url, nil, true, migrations.Set)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close(gdb)
		svc, err := app.New(context.Background(), app.Config{RateLimit: ratelimit.Config{PerMinute: 600, Burst: 60}}, nil, app.WithDB(gdb))
		if err != nil {
			t.Fatal(err)
		}
		defer svc.Close()
		r := httptest.NewRequest("GET", "/api/conversations/10/messages", nil)
		r.Header.Set(auth.HeaderAPIKey, newKey)
		w := httptest.NewRecorder()
		svc.Handler().ServeHTTP(w, r)
		if w.Code != 200 {
			t.Fatalf("created key: %d %s", w.Code, w.Body)
		}
		var stored int64
		gdb.Raw("SELECT COUNT(*) FROM api_keys WHERE key_hash = ? AND key_type = 'user' AND user_id = 1", auth.Hash(newKey)).Scan(&stored)
		if stored != 1 {
			t.Fatal("created key not stored by its hash")
		}
		if _, _, code := command(t, url, "apikey", "create", "--type", "super", "--scopes", "conversation:read", "--expires-at", "4102444800"); code != 0 {
			t.Fatal("super key with expiry refused")
		}
		if _, _, code := command(t, url, "apikey", "create", "--type", "guest", "--scopes", "conversation:read"); code != 0 {
			t.Fatal("guest key refused")
		}

		// options set changes the page size the API uses.
		if out, errs, code := command(t, url, "options", "set", "messagesPerPage", "7"); code != 0 || out != "messagesPerPage = 7\n" {
			t.Fatalf("options set: %d %q %q", code, out, errs)
		}
		w = httptest.NewRecorder()
		svc.Handler().ServeHTTP(w, r)
		if !strings.Contains(w.Body.String(), `"per_page":7`) {
			t.Fatalf("page size after options set: %s", w.Body)
		}
		for _, o := range []string{"discussionsPerPage 9", "maxRecipients 3", "messageMaxLength 500"} {
			args := append([]string{"options", "set"}, strings.Fields(o)...)
			if out, errs, code := command(t, url, args...); code != 0 || out != strings.Replace(o, " ", " = ", 1)+"\n" {
				t.Fatalf("options set %s: %d %q %q", o, code, out, errs)
			}
		}
		for _, o := range []string{"attachmentMaxFileSize 2048", "attachmentMaxPerMessage 4"} {
			args := append([]string{"options", "set"}, strings.Fields(o)...)
			if out, errs, code := command(t, url, args...); code != 0 || out != strings.Replace(o, " ", " = ", 1)+"\n" {
				t.Fatalf("options set %s: %d %q %q", o, code, out, errs)
			}
		}
		// The extensions, the one option that is a list: read as ParseExtensions does, printed as stored.
		if out, errs, code := command(t, url, "options", "set", "attachmentExtensions", "PNG, .txt mp4"); code != 0 || out != "attachmentExtensions = mp4 png txt\n" {
			t.Fatalf("options set attachmentExtensions: %d %q %q", code, out, errs)
		}
		var opts string
		gdb.Raw("SELECT attachment_max_file_size || ',' || attachment_max_per_message || ',' || attachment_extensions FROM forum_options").Scan(&opts)
		if opts != "2048,4,mp4 png txt" {
			t.Fatalf("attachment options after options set: %s", opts)
		}
		gdb.Raw("SELECT discussions_per_page || ',' || max_recipients || ',' || message_max_length FROM forum_options").Scan(&opts)
		if opts != "9,3,500" {
			t.Fatalf("options after options set: %s", opts)
		}

		// Refusals: non-zero, one line, nothing written.
		bad := filepath.Join(t.TempDir(), "bad.json")
		os.WriteFile(bad, []byte(`{"users": [{"user_id": 1, "username": "mallory"}], "conversations": [{"conversation_id": 10, "title": "x", "user_id": 1, "recipients": [99], "messages": []}]}`), 0o644)
		_, errs, code = command(t, url, "seed", "--file", bad)
		oneLineError(t, errs, code, "conversations[0].recipients[0]: user_id 99 does not exist")
		var name string
		gdb.Raw("SELECT username FROM users WHERE user_id = 1").Scan(&name)
		if name != "alice" {
			t.Fatalf("refused seed wrote: username %q", name)
		}
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"seed"}, "--file is required"},
			{[]string{"seed", "--file", "/no/such/file.json"}, "no such file"},
			{[]string{"seed", "--nope"}, "flag provided but not defined"},
			{[]string{"apikey", "create", "--type", "admin", "--scopes", "conversation:read"}, `type "admin"`},
			{[]string{"apikey", "create", "--type", "user", "--scopes", "conversation:read"}, "a user key needs a positive user_id"},
			{[]string{"apikey", "create", "--type", "user", "--user-id", "99", "--scopes", "conversation:read"}, "user 99 does not exist"},
			{[]string{"apikey", "create", "--type", "guest", "--user-id", "1", "--scopes", "conversation:read"}, "a guest key has no user_id"},
			{[]string{"apikey", "create", "--type", "guest", "--scopes", "everything"}, `scope "everything"`},
			{[]string{"apikey", "create", "--type", "guest"}, "--scopes is required"},
			{[]string{"apikey", "create", "--type", "guest", "--scopes", "conversation:read", "--expires-at", "5"}, "future Unix time"},
			{[]string{"apikey", "delete"}, "usage"},
			{[]string{"options", "set", "pageSize", "5"}, `unknown option "pageSize"`},
			{[]string{"options", "set", "messagesPerPage", "0"}, "between 1 and 100"},
			{[]string{"options", "set", "messagesPerPage", "ten"}, "not an integer"},
			{[]string{"options", "set", "maxRecipients", "0"}, "maxRecipients must be between 1 and 1000"},
			{[]string{"options", "set", "messageMaxLength", "65537"}, "messageMaxLength must be between 1 and 65536"},
			{[]string{"options", "set", "discussionsPerPage", "101"}, "discussionsPerPage must be between 1 and 100"},
			{[]string{"options", "set", "attachmentMaxFileSize", "0"}, "attachmentMaxFileSize must be between 1 and 104857600"},
			{[]string{"options", "set", "attachmentExtensions", "png png"}, `"png" appears twice`},
			{[]string{"options", "set", "attachmentExtensions", "tar.gz"}, "not 1 to 16 letters or digits"},
			{[]string{"options", "get", "messagesPerPage"}, "usage"},
			{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		} {
			_, errs, code := command(t, url, c.args...)
			oneLineError(t, errs, code, c.want)
		}
		var keys int64
		gdb.Raw("SELECT COUNT(*) FROM api_keys").Scan(&keys)
		if keys != 5+3 {
			t.Fatalf("%d keys stored; refused commands must write nothing", keys)
		}
	})
}

func TestBadConfiguration(t *testing.T) {
	for _, c := range []struct{ env, want string }{
		{"RATE_LIMIT_PER_MINUTE=lots", "RATE_LIMIT_PER_MINUTE"},
		{"DATABASE_URL=mysql://x", "DATABASE_URL"},
		{"WEBHOOK_CONCURRENCY=65", "WEBHOOK_CONCURRENCY must be from 0 to 64"},
		{"WEBHOOK_RETRY_MIN=1ms", "WEBHOOK_RETRY_MIN must be from 100ms to 1h0m0s"},
		{"WEBHOOK_RETRY_MAX=200ms", "WEBHOOK_RETRY_MAX (200ms) must not be below WEBHOOK_RETRY_MIN (5s)"},
		{"WEBHOOK_RETRY_WINDOW=0s", "WEBHOOK_RETRY_WINDOW"},
		{"WEBHOOK_TIMEOUT=2m", "WEBHOOK_TIMEOUT must be from 100ms to 1m0s"},
		{"WEBHOOK_POLL_INTERVAL=soon", "WEBHOOK_POLL_INTERVAL"},
		{"WEBHOOK_ALLOW_PRIVATE=maybe", "WEBHOOK_ALLOW_PRIVATE"},
	} {
		cmd := exec.Command(os.Args[0], "migrate")
		cmd.Env = append(os.Environ(), "FORUM_SVC_RUN_MAIN=1", c.env)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
			t.Fatalf("bad %s accepted: %v", c.env, err)
		}
		oneLineError(t, errb.String(), 1, c.want)
	}
}

// MIGRATE_ON_START=false leaves the schema alone for every command but migrate.
func TestMigrateOnStartRule(t *testing.T) {
	url := "sqlite:" + filepath.Join(t.TempDir(), "forum.db")
	off := "MIGRATE_ON_START=false"
	if _, errs, code := commandEnv(t, url, []string{off}, "options", "set", "messagesPerPage", "5"); code == 0 {
		t.Fatalf("options set on an unmigrated database with %s succeeded (%q)", off, errs)
	}
	if out, errs, code := commandEnv(t, url, []string{off}, "migrate"); code != 0 || !strings.Contains(out, "up to date") {
		t.Fatalf("migrate with %s: %d %q %q", off, code, out, errs)
	}
	if out, errs, code := commandEnv(t, url, []string{off}, "options", "set", "messagesPerPage", "5"); code != 0 || out != "messagesPerPage = 5\n" {
		t.Fatalf("options set after migrate: %d %q %q", code, out, errs)
	}
}
