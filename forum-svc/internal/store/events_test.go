package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/forum-svc/internal/event"
	"forumstats.local/forum-svc/internal/seed"
	"forumstats.local/forum-svc/internal/store"
)

// A user's event ids commit in order: replies written at once into eight conversations that all
// hold user 1 give user 1 events that a reader polling the log all along sees one after the other,
// never an id before the one below it has committed.
func TestEventIDsCommitInOrder(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			gdb := migratedDB(t, dialect)
			const conversations, replies = 8, 25
			date := int64(1_800_000_000)
			f := &seed.File{Users: []seed.User{{UserID: 1, Username: "hub"}}}
			for i := range conversations {
				other := int64(i + 2)
				f.Users = append(f.Users, seed.User{UserID: other, Username: fmt.Sprintf("user%d", other)})
				f.Conversations = append(f.Conversations, seed.Conversation{ConversationID: int64(10 + i), Title: "T", UserID: 1,
					Recipients: []int64{other}, Messages: []seed.Message{{MessageID: int64(100 + i), UserID: 1, Message: "m", MessageDate: &date}}})
			}
			if _, err := seed.Load(ctx, gdb, f, time.Unix(date, 0)); err != nil {
				t.Fatal(err)
			}
			st, err := store.New(gdb)
			if err != nil {
				t.Fatal(err)
			}
			st.AddRecorder(st.EventLog())
			total := int64(conversations * replies)
			var writers sync.WaitGroup
			errs := make(chan error, conversations)
			for i := range conversations {
				writers.Go(func() {
					for j := range replies {
						_, err := st.Reply(ctx, conversation.NewReply{ConversationID: int64(10 + i), UserID: int64(i + 2),
							Message: fmt.Sprint(j), Parsed: fmt.Sprint(j), Date: date + 1}, nil,
							func(conversation.MessageRow, conversation.ConversationRow) ([]byte, error) { return nil, nil })
						if err != nil {
							errs <- err
							return
						}
					}
				})
			}
			var cursor int64
			deadline := time.Now().Add(60 * time.Second)
			for cursor < total {
				entries, err := st.EventsAfter(ctx, 1, cursor, 1000)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range entries {
					if e.ID != cursor+1 {
						t.Fatalf("after event %d the reader saw %d: a later id committed first", cursor, e.ID)
					}
					if e.Type != event.TypeMessageCreated {
						t.Fatalf("event %d: %s", e.ID, e.Type)
					}
					cursor = e.ID
				}
				select {
				case err := <-errs:
					t.Fatal(err)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("read %d of %d events within 60 s", cursor, total)
				}
			}
			writers.Wait()
			oldest, last, err := st.EventBounds(ctx, 1)
			if err != nil || oldest != 1 || last != total {
				t.Fatalf("bounds %d, %d, %v; want 1, %d", oldest, last, err, total)
			}
			// Each partner got their own conversation's replies, numbered from 1.
			for i := range conversations {
				_, last, err := st.EventBounds(ctx, int64(i+2))
				if err != nil || last != replies {
					t.Fatalf("user %d: last event %d, %v; want %d", i+2, last, err, replies)
				}
			}
			// The sweep takes the events before a date, and the ids go on from the counter.
			n, err := st.SweepEvents(ctx, date+2, 7)
			if err != nil || n != total+conversations*replies {
				t.Fatalf("swept %d, %v; want %d", n, err, total+conversations*replies)
			}
			oldest, last, err = st.EventBounds(ctx, 1)
			if err != nil || oldest != 0 || last != total {
				t.Fatalf("bounds after the sweep %d, %d, %v; want 0, %d", oldest, last, err, total)
			}
		})
	}
}

// A ticket is used once, and not after it expired.
func TestTickets(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			st, _ := reactStore(t, dialect, 2)
			ctx := context.Background()
			if err := st.CreateTicket(ctx, "h1", "key", 2, 100); err != nil {
				t.Fatal(err)
			}
			if err := st.CreateTicket(ctx, "h2", "key", 2, 100); err != nil {
				t.Fatal(err)
			}
			k, u, ok, err := st.UseTicket(ctx, "h1", 99)
			if err != nil || !ok || k != "key" || u != 2 {
				t.Fatalf("first use: %q %d %v %v", k, u, ok, err)
			}
			if _, _, ok, err := st.UseTicket(ctx, "h1", 99); err != nil || ok {
				t.Fatalf("second use: %v %v", ok, err)
			}
			if _, _, ok, err := st.UseTicket(ctx, "h2", 100); err != nil || ok {
				t.Fatalf("use at expiry: %v %v", ok, err)
			}
			if _, _, ok, err := st.UseTicket(ctx, "nope", 1); err != nil || ok {
				t.Fatalf("unknown ticket: %v %v", ok, err)
			}
		})
	}
}
