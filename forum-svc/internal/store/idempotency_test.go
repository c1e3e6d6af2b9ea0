package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/forum-svc/internal/seed"
	"forumstats.local/forum-svc/internal/store"
)

// retryStore is a store on a fresh database of the dialect (postgres or sqlite) with users 1 and 2
// in conversation 10.
func retryStore(t *testing.T, dialect string, date int64) (*store.Store, *gorm.DB) {
	t.Helper()
	ctx := context.Background()
	gdb := migratedDB(t, dialect)
	f := &seed.File{
		Users: []seed.User{{UserID: 1, Username: "alice"}, {UserID: 2, Username: "bob"}},
		Conversations: []seed.Conversation{{ConversationID: 10, Title: "T", UserID: 1, Recipients: []int64{2},
			Messages: []seed.Message{{MessageID: 100, UserID: 1, Message: "first", MessageDate: &date}}}},
	}
	if _, err := seed.Load(ctx, gdb, f, time.Unix(date, 0)); err != nil {
		t.Fatal(err)
	}
	st, err := store.New(gdb)
	if err != nil {
		t.Fatal(err)
	}
	return st, gdb
}

// A repeat of a write with its Idempotency-Key while the first still runs: on PostgreSQL 409 at
// once (request_in_progress); SQLite runs one writer at a time, so the repeat waits for the first
// and replays its answer. Either way one message, and a later repeat replays the first answer.
func TestRetryWhileTheFirstRuns(t *testing.T) {
	for _, dialect := range []string{"postgres", "sqlite"} {
		t.Run(dialect, func(t *testing.T) {
			const date = 1_800_000_000
			st, gdb := retryStore(t, dialect, date)
			ctx := context.Background()
			reply := conversation.NewReply{ConversationID: 10, UserID: 1, Message: "once", Date: date}
			// The owner and the fingerprint are SHA-256 hex digests (CHAR(64) on PostgreSQL).
			retry := func() *conversation.Retry {
				return &conversation.Retry{Owner: strings.Repeat("a", 64), UserID: 1, Key: "k", Fingerprint: strings.Repeat("f", 64), Date: date}
			}
			type result struct {
				a   conversation.Answer
				err error
			}
			run := func(answer func() []byte) <-chan result {
				out := make(chan result, 1)
				go func() {
					a, err := st.Reply(ctx, reply, retry(), func(conversation.MessageRow, conversation.ConversationRow) ([]byte, error) {
						return answer(), nil
					})
					out <- result{a, err}
				}()
				return out
			}
			wait := func(c <-chan result) result {
				t.Helper()
				select {
				case r := <-c:
					return r
				case <-time.After(20 * time.Second):
					t.Fatal("no answer")
					return result{}
				}
			}
			inside, release := make(chan struct{}), make(chan struct{})
			first := run(func() []byte { close(inside); <-release; return []byte(`"first"`) })
			<-inside
			second := run(func() []byte { return []byte(`"second"`) })
			if dialect == "postgres" {
				if r := wait(second); !errors.Is(r.err, conversation.ErrRequestInProgress) {
					t.Fatalf("repeat while the first runs: %+v; want ErrRequestInProgress", r)
				}
				close(release)
			} else {
				select {
				case r := <-second:
					t.Fatalf("SQLite answered the repeat while the first ran: %+v", r)
				case <-time.After(200 * time.Millisecond):
				}
				close(release)
				if r := wait(second); r.err != nil || !r.a.Replayed || string(r.a.Body) != `"first"` || r.a.Status != 200 {
					t.Fatalf("repeat after the first: %+v; want the first answer replayed", r)
				}
			}
			if r := wait(first); r.err != nil || r.a.Replayed || string(r.a.Body) != `"first"` {
				t.Fatalf("first: %+v", r)
			}
			if r := wait(run(func() []byte { return []byte(`"third"`) })); r.err != nil || !r.a.Replayed || string(r.a.Body) != `"first"` {
				t.Fatalf("repeat after the first committed: %+v (%v)", r, r.err)
			}
			var n int64
			if err := gdb.Raw("SELECT COUNT(*) FROM conversation_messages WHERE message = 'once'").Scan(&n).Error; err != nil || n != 1 {
				t.Fatalf("%d messages (%v); want 1", n, err)
			}
		})
	}
}

// UnknownUsers names, in the order asked, the ids that are no user, on both databases.
func TestUnknownUsers(t *testing.T) {
	for _, dialect := range []string{"postgres", "sqlite"} {
		t.Run(dialect, func(t *testing.T) {
			st, _ := retryStore(t, dialect, 1_700_000_000)
			for _, tt := range []struct {
				ids, want []int64
			}{
				{nil, nil},
				{[]int64{1, 2}, nil},
				{[]int64{9, 2, 8, 1, 9}, []int64{9, 8, 9}},
			} {
				got, err := st.UnknownUsers(context.Background(), tt.ids)
				if err != nil || !slices.Equal(got, tt.want) {
					t.Errorf("UnknownUsers(%v) = %v, %v; want %v", tt.ids, got, err, tt.want)
				}
			}
		})
	}
}
