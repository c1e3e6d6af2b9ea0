package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/forum-svc/internal/seed"
	"forumstats.local/forum-svc/internal/store"
	"forumstats.local/forum-svc/migrations"
	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
)

// The SQLite benchmarks measure the forum's hot paths on the embedded database through the
// driver shared/db opens, so that a change of driver is measured on the statements the service
// sends: go test -run '^$' -bench SQLite -count 5 ./forum-svc/internal/store/

const (
	benchDate     = 1_800_000_000
	benchMessages = 2000 // 100 pages of the default 20
)

// benchSQLiteStore is a migrated SQLite forum in a temporary directory: users 1 and 2 in
// conversation 10 of benchMessages messages of about 200 bytes.
func benchSQLiteStore(b *testing.B) (*store.Store, *gorm.DB) {
	b.Helper()
	ctx := context.Background()
	gdb, err := migrate.Open(ctx, "sqlite:"+b.TempDir()+"/forum.db", nil, true, migrations.Set)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close(gdb) })
	messages := make([]seed.Message, benchMessages)
	text := strings.Repeat("a message of the benchmark, ", 7)
	for i := range messages {
		date := int64(benchDate - benchMessages + i)
		messages[i] = seed.Message{MessageID: int64(100 + i), UserID: int64(1 + i%2), Message: text, MessageDate: &date}
	}
	f := &seed.File{
		Users:         []seed.User{{UserID: 1, Username: "alice"}, {UserID: 2, Username: "bob"}},
		Conversations: []seed.Conversation{{ConversationID: 10, Title: "T", UserID: 1, Recipients: []int64{2}, Messages: messages}},
	}
	if _, err := seed.Load(ctx, gdb, f, time.Unix(benchDate, 0)); err != nil {
		b.Fatal(err)
	}
	st, err := store.New(gdb)
	if err != nil {
		b.Fatal(err)
	}
	return st, gdb
}

// BenchmarkSQLiteMessagePage reads the 100 pages of the conversation in turn.
func BenchmarkSQLiteMessagePage(b *testing.B) {
	st, _ := benchSQLiteStore(b)
	ctx := context.Background()
	pages := int64(benchMessages / 20)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		p, err := st.MessagePage(ctx, 10, 1, 1+int64(i)%pages)
		if err != nil || len(p.Messages) != 20 {
			b.Fatalf("page %d: %d messages (%v)", 1+int64(i)%pages, len(p.Messages), err)
		}
	}
}

// BenchmarkSQLiteReply posts replies with an Idempotency-Key each, as the API does: the claim,
// the lock, the insert, the two updates, the answer's reads and the recorded answer, committed.
func BenchmarkSQLiteReply(b *testing.B) {
	st, _ := benchSQLiteStore(b)
	ctx := context.Background()
	answer := func(conversation.MessageRow, conversation.ConversationRow) ([]byte, error) { return []byte(`{}`), nil }
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		retry := &conversation.Retry{Owner: strings.Repeat("a", 64), UserID: 1, Key: fmt.Sprintf("k%d", i),
			Fingerprint: strings.Repeat("f", 64), Date: benchDate}
		if _, err := st.Reply(ctx, conversation.NewReply{ConversationID: 10, UserID: 1, Message: "a reply", Date: benchDate}, retry, answer); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSQLiteSweep sweeps 100,000 expired Idempotency-Key rows of 10 API keys in batches of
// store.RetrySweepBatch (the figure RetrySweepBatch's comment gives); max-batch-ms is the
// longest statement of the sweeps, during which the service's one connection waits.
func BenchmarkSQLiteSweep(b *testing.B) {
	const rows, owners = 100_000, 10
	st, gdb := benchSQLiteStore(b)
	ctx := context.Background()
	var (
		started        time.Time
		longest, worst time.Duration
	)
	if err := gdb.Callback().Raw().Before("gorm:raw").Register("bench:start", func(*gorm.DB) { started = time.Now() }); err != nil {
		b.Fatal(err)
	}
	if err := gdb.Callback().Raw().After("gorm:raw").Register("bench:end", func(*gorm.DB) { longest = max(longest, time.Since(started)) }); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		b.StopTimer()
		for o := range owners {
			if err := gdb.Exec(fmt.Sprintf(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
INSERT INTO idempotency_keys (api_key_hash, user_id, idempotency_key, fingerprint, created_at, status, body)
SELECT '%s', 1, 'k' || (%d - i), '%s', %d + i, 200, '{"message_id":1}' FROM n`,
				rows/owners, strings.Repeat(string(rune('a'+o)), 64), rows, strings.Repeat("f", 64),
				benchDate-conversation.RetryWindow-rows)).Error; err != nil {
				b.Fatal(err)
			}
		}
		longest = 0
		b.StartTimer()
		n, err := st.SweepRetries(ctx, benchDate, store.RetrySweepBatch)
		if err != nil || n != rows {
			b.Fatalf("swept %d (%v); want %d", n, err, rows)
		}
		worst = max(worst, longest)
	}
	b.ReportMetric(float64(worst.Microseconds())/1000, "max-batch-ms")
}
