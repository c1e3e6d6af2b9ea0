package app

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/shared/config"
	"forumstats.local/shared/ratelimit"
	"forumstats.local/shared/testutil"
)

// oldMessages writes messages 1..3 of conversation 10 as they were before message_parsed existed
// (NULL there) and returns the HTML each must get.
func oldMessages(t *testing.T, gdb *gorm.DB) map[int64]string {
	t.Helper()
	texts := map[int64]string{1: "[b]one[/b]", 2: "two & [i]three[/i]", 3: "plain"}
	for _, q := range []string{
		`INSERT INTO users (user_id, username) VALUES (1, 'alice'), (2, 'bob')`,
		`INSERT INTO conversations (conversation_id, title, user_id, message_count, first_message_id, last_message_id) VALUES (10, 'T', 1, 3, 1, 3)`,
		`INSERT INTO conversation_participants (conversation_id, user_id, last_read_date) VALUES (10, 1, 0), (10, 2, 0)`,
	} {
		if err := gdb.Exec(q).Error; err != nil {
			t.Fatal(err)
		}
	}
	want := map[int64]string{}
	for id, text := range texts {
		if err := gdb.Exec(`INSERT INTO conversation_messages (message_id, conversation_id, user_id, message, message_date, position)
VALUES (?, 10, 1, ?, ?, ?)`, id, text, sweepNow+id, id).Error; err != nil {
			t.Fatal(err)
		}
		want[id] = conversation.RenderMessage(text)
	}
	return want
}

// storedHTML is every message's message_parsed ("<NULL>" for NULL).
func storedHTML(t *testing.T, gdb *gorm.DB) map[int64]string {
	t.Helper()
	rows, err := gdb.Raw(`SELECT message_id, COALESCE(message_parsed, '<NULL>') FROM conversation_messages`).Rows()
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]string{}
	for rows.Next() {
		var id int64
		var html string
		if err := rows.Scan(&id, &html); err != nil {
			t.Fatal(err)
		}
		out[id] = html
	}
	return out
}

func sameHTML(got, want map[int64]string) bool {
	if len(got) != len(want) {
		return false
	}
	for id, html := range want {
		if got[id] != html {
			return false
		}
	}
	return true
}

// `forum-svc migrate` and `forum-svc serve` store the HTML of the messages written before
// message_parsed existed, on both dialects; serve does it in the background, and no backfill
// outlives it.
func TestCommandsBackfillMessageParsed(t *testing.T) {
	for _, dialect := range []string{"postgres", "sqlite"} {
		t.Run(dialect+"/migrate", func(t *testing.T) {
			gdb, u := sweepDB(t, dialect)
			want := oldMessages(t, gdb)
			var logs testutil.Buffer
			if err := Migrate(context.Background(), Config{Common: config.Common{DatabaseURL: u}}, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
				t.Fatal(err)
			}
			if got := storedHTML(t, gdb); !sameHTML(got, want) {
				t.Fatalf("after migrate: %v, want %v", got, want)
			}
			if !strings.Contains(logs.String(), "messages=3") {
				t.Errorf("the backfill is not logged:\n%s", logs.String())
			}
		})
		t.Run(dialect+"/serve", func(t *testing.T) {
			gdb, u := sweepDB(t, dialect)
			want := oldMessages(t, gdb)
			cfg := Config{
				Common:    config.Common{HTTPAddr: "127.0.0.1:0", DatabaseURL: u, MigrateOnStart: true},
				RateLimit: ratelimit.Config{PerMinute: 600, Burst: 60}, PrimaryAfterWrite: time.Second,
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			served := make(chan error, 1)
			go func() { served <- Serve(ctx, cfg, slog.New(slog.DiscardHandler)) }()
			eventually(t, "the messages' HTML stored", func() bool { return sameHTML(storedHTML(t, gdb), want) })
			cancel()
			select {
			case err := <-served:
				if err != nil {
					t.Fatalf("serve: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("serve did not stop")
			}
			if backfilling() {
				t.Error("a backfill outlives serve")
			}
		})
	}
}

// backfilling reports whether a goroutine runs App.startBackfill's backfill.
func backfilling() bool {
	buf := make([]byte, 1<<20)
	return bytes.Contains(buf[:runtime.Stack(buf, true)], []byte("app.(*App).startBackfill.func"))
}
