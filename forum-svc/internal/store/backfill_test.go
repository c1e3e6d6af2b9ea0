package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/forum-svc/internal/seed"
	"forumstats.local/forum-svc/internal/store"
)

// Messages written before message_parsed existed (NULL there, or empty) answer their rendered
// HTML: when read before the backfill reaches them, and stored by it afterwards, in batches,
// leaving the messages that have their HTML alone; a second backfill writes nothing.
func TestBackfillMessageParsed(t *testing.T) {
	for _, dialect := range []string{"postgres", "sqlite"} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			gdb := migratedDB(t, dialect)
			date := int64(1_800_000_000)
			texts := []string{"[b]bold[/b]", "plain", "[i]a[/i] & <b>", "[url=https://example.com]link[/url]", "[s]x[/s]", "[u]u[/u]", "last"}
			conv := seed.Conversation{ConversationID: 10, Title: "T", UserID: 1, Recipients: []int64{2}}
			for i, text := range texts {
				d := date + int64(i)
				conv.Messages = append(conv.Messages, seed.Message{MessageID: int64(100 + i), UserID: 1 + int64(i%2), Message: text, MessageDate: &d})
			}
			f := &seed.File{Users: []seed.User{{UserID: 1, Username: "alice"}, {UserID: 2, Username: "bob"}},
				Conversations: []seed.Conversation{conv}}
			if _, err := seed.Load(ctx, gdb, f, time.Unix(date, 0)); err != nil {
				t.Fatal(err)
			}
			// As written before the column: NULL, or empty; message 106 keeps HTML of its own
			// (as an edit would have stored meanwhile), which no backfill may touch.
			if err := gdb.Exec(`UPDATE conversation_messages SET message_parsed = NULL WHERE message_id IN (100, 101, 102, 104)`).Error; err != nil {
				t.Fatal(err)
			}
			if err := gdb.Exec(`UPDATE conversation_messages SET message_parsed = '' WHERE message_id IN (103, 105)`).Error; err != nil {
				t.Fatal(err)
			}
			if err := gdb.Exec(`UPDATE conversation_messages SET message_parsed = 'kept' WHERE message_id = 106`).Error; err != nil {
				t.Fatal(err)
			}
			st, err := store.New(gdb)
			if err != nil {
				t.Fatal(err)
			}
			want := func(id int64) string {
				if id == 106 {
					return "kept"
				}
				return conversation.RenderMessage(texts[id-100])
			}
			// Read before the backfill: the page (pgx's decoder on PostgreSQL) and one message.
			svc := conversation.NewService(st, nil)
			check := func(when string) {
				t.Helper()
				page, err := svc.Messages(ctx, 1, 10, 1)
				if err != nil || len(page.Messages) != len(texts) {
					t.Fatalf("%s: page: %d messages, %v", when, len(page.Messages), err)
				}
				for _, m := range page.Messages {
					if m.MessageParsed != want(m.MessageID) {
						t.Errorf("%s: page: message %d: message_parsed %q, want %q", when, m.MessageID, m.MessageParsed, want(m.MessageID))
					}
				}
				m, err := svc.Message(ctx, 2, 102)
				if err != nil || m.MessageParsed != want(102) {
					t.Errorf("%s: message 102: %q, %v; want %q", when, m.MessageParsed, err, want(102))
				}
			}
			check("before the backfill")
			if _, err := st.BackfillMessageParsed(ctx, 0); err == nil {
				t.Error("batch 0: no error")
			}
			n, err := st.BackfillMessageParsed(ctx, 2) // 6 to write: three batches and a last, empty read
			if err != nil || n != 6 {
				t.Fatalf("backfill: %d written, %v; want 6", n, err)
			}
			for i := range texts {
				id := int64(100 + i)
				var stored *string
				if err := gdb.Raw(`SELECT message_parsed FROM conversation_messages WHERE message_id = ?`, id).Row().Scan(&stored); err != nil {
					t.Fatal(err)
				}
				if stored == nil || *stored != want(id) {
					t.Errorf("message %d: stored %v, want %q", id, stored, want(id))
				}
			}
			check("after the backfill")
			if n, err := st.BackfillMessageParsed(ctx, store.BackfillBatch); err != nil || n != 0 {
				t.Fatalf("second backfill: %d written, %v; want 0", n, err)
			}
		})
	}
}

// The backfill walks a table larger than a batch to its end, whatever the order of the missing
// rows among the others.
func TestBackfillMessageParsedManyBatches(t *testing.T) {
	ctx := context.Background()
	gdb := migratedDB(t, "sqlite")
	date := int64(1_800_000_000)
	conv := seed.Conversation{ConversationID: 10, Title: "T", UserID: 1, Recipients: []int64{2}}
	for i := range 1200 {
		conv.Messages = append(conv.Messages, seed.Message{MessageID: int64(1 + i), UserID: 1, Message: fmt.Sprintf("[b]%d[/b]", i), MessageDate: &date})
	}
	f := &seed.File{Users: []seed.User{{UserID: 1, Username: "alice"}, {UserID: 2, Username: "bob"}}, Conversations: []seed.Conversation{conv}}
	if _, err := seed.Load(ctx, gdb, f, time.Unix(date, 0)); err != nil {
		t.Fatal(err)
	}
	if err := gdb.Exec(`UPDATE conversation_messages SET message_parsed = NULL WHERE message_id % 3 <> 0`).Error; err != nil {
		t.Fatal(err)
	}
	st, err := store.New(gdb)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := st.BackfillMessageParsed(ctx, 7); err != nil || n != 800 {
		t.Fatalf("backfill: %d written, %v; want 800", n, err)
	}
	var missing, wrong int64
	if err := gdb.Raw(`SELECT COUNT(*) FROM conversation_messages WHERE message_parsed IS NULL OR message_parsed = ''`).Row().Scan(&missing); err != nil {
		t.Fatal(err)
	}
	if err := gdb.Raw(`SELECT COUNT(*) FROM conversation_messages WHERE message_parsed <> '<b>' || (message_id - 1) || '</b>'`).Row().Scan(&wrong); err != nil {
		t.Fatal(err)
	}
	if missing != 0 || wrong != 0 {
		t.Fatalf("after the backfill: %d without HTML, %d with another", missing, wrong)
	}
}
