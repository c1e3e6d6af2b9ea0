package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/forum-svc/internal/seed"
	"forumstats.local/forum-svc/internal/store"
	"forumstats.local/forum-svc/migrations"
	"forumstats.local/shared/migrate/migratetest"
)

// migratedDB is a new database of dialect ("postgres" or "sqlite") with forum-svc's migrations
// applied, closed (and dropped) when the test ends.
func migratedDB(t testing.TB, dialect string) *gorm.DB {
	t.Helper()
	if dialect == "postgres" {
		return migratetest.Postgres(t, migrations.Set)
	}
	return migratetest.SQLite(t, migrations.Set)
}

// reactStore is a store on a fresh database of the dialect with users 1..users in conversation
// 10, whose message 100 is user 1's, and user users+1 in none.
func reactStore(t testing.TB, dialect string, users int) (*store.Store, *gorm.DB) {
	t.Helper()
	ctx := context.Background()
	gdb := migratedDB(t, dialect)
	date := int64(1_800_000_000)
	f := &seed.File{Conversations: []seed.Conversation{{ConversationID: 10, Title: "T", UserID: 1,
		Messages: []seed.Message{{MessageID: 100, UserID: 1, Message: "[b]first[/b]", MessageDate: &date}}}}}
	for i := 1; i <= users+1; i++ {
		f.Users = append(f.Users, seed.User{UserID: int64(i), Username: fmt.Sprintf("user%d", i)})
		if i > 1 && i <= users {
			f.Conversations[0].Recipients = append(f.Conversations[0].Recipients, int64(i))
		}
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

// storedScore is message 100's reaction_score and the sum of its stored reactions' scores.
func storedScore(t *testing.T, gdb *gorm.DB) (kept, sum int64) {
	t.Helper()
	if err := gdb.Raw(`SELECT reaction_score FROM conversation_messages WHERE message_id = 100`).Row().Scan(&kept); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	if err := gdb.Raw(`SELECT reaction_id FROM conversation_message_reactions WHERE message_id = 100`).Scan(&ids).Error; err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		score, ok := conversation.ReactionScore(id)
		if !ok {
			t.Fatalf("stored reaction %d is none", id)
		}
		sum += score
	}
	return kept, sum
}

func react(st *store.Store, userID, reactionID int64) (string, error) {
	var action string
	_, err := st.React(context.Background(), conversation.NewReaction{MessageID: 100, UserID: userID, ReactionID: reactionID, Date: 1},
		nil, func(a string) ([]byte, error) { action = a; return nil, nil })
	return action, err
}

// Reacting, replacing and taking back move the stored reaction and the score together; the seed
// stores the message's HTML; one's own message and another conversation's are refused.
func TestReactions(t *testing.T) {
	for _, dialect := range []string{"postgres", "sqlite"} {
		t.Run(dialect, func(t *testing.T) {
			st, gdb := reactStore(t, dialect, 3)
			steps := []struct {
				user, reaction int64
				action         string
				err            error
				score          int64
				visitor        int64 // user's reaction after the step
			}{
				{2, 1, conversation.ReactionInserted, nil, 1, 1},
				{3, 5, conversation.ReactionInserted, nil, 1, 5},
				{3, 2, conversation.ReactionInserted, nil, 2, 2}, // replaced: Sad 0 -> Love 1
				{2, 6, conversation.ReactionInserted, nil, 1, 6}, // replaced: Like 1 -> Angry 0
				{2, 6, conversation.ReactionDeleted, nil, 1, 0},  // the same again: taken back
				{3, 2, conversation.ReactionDeleted, nil, 0, 0},
				{1, 1, "", conversation.ErrReactOwnContent, 0, 0},
				{4, 1, "", conversation.ErrMessageNotFound, 0, 0},
			}
			for i, s := range steps {
				action, err := react(st, s.user, s.reaction)
				if action != s.action || !errors.Is(err, s.err) {
					t.Fatalf("step %d: %q, %v; want %q, %v", i, action, err, s.action, s.err)
				}
				kept, sum := storedScore(t, gdb)
				if kept != s.score || sum != s.score {
					t.Fatalf("step %d: reaction_score %d, stored reactions' sum %d; want %d", i, kept, sum, s.score)
				}
				if s.err != nil {
					continue
				}
				m, _, err := st.Message(context.Background(), 100, s.user)
				if err != nil {
					t.Fatal(err)
				}
				page, err := st.MessagePage(context.Background(), 10, s.user, 1)
				if err != nil {
					t.Fatal(err)
				}
				p := page.Messages[0]
				if m.VisitorReactionID != s.visitor || p.VisitorReactionID != s.visitor || m.ReactionScore != s.score || p.ReactionScore != s.score {
					t.Fatalf("step %d: message %+v, page %+v; want reaction %d, score %d", i, m, p, s.visitor, s.score)
				}
				if m.MessageParsed != "<b>first</b>" || p.MessageParsed != m.MessageParsed {
					t.Fatalf("step %d: message_parsed %q and %q", i, m.MessageParsed, p.MessageParsed)
				}
			}
		})
	}
}

// 16 goroutines, four to a user, react, replace and take back at once on one message: the same
// user's reactions race each other's read of the current one, and reaction_score ends equal to the
// scores of the reactions stored.
func TestConcurrentReactionsKeepTheScore(t *testing.T) {
	for _, dialect := range []string{"postgres", "sqlite"} {
		t.Run(dialect, func(t *testing.T) {
			const workers, rounds = 16, 25
			const users = 4
			st, gdb := reactStore(t, dialect, users+1)
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := range workers {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(w), 7))
					for range rounds {
						// Few reactions, so that the same one again (taking it back) is frequent.
						if _, err := react(st, int64(2+w%users), 1+rng.Int64N(3)*2); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			kept, sum := storedScore(t, gdb)
			if kept != sum {
				t.Fatalf("reaction_score %d, but the stored reactions score %d", kept, sum)
			}
			var n int64
			if err := gdb.Raw(`SELECT COUNT(*) FROM conversation_message_reactions`).Row().Scan(&n); err != nil || n == 0 {
				t.Fatalf("%d reactions stored (%v): the test reacted nothing", n, err)
			}
		})
	}
}
