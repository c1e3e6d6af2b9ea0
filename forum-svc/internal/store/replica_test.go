package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/forum-svc/internal/seed"
	"forumstats.local/forum-svc/internal/store"
	"forumstats.local/forum-svc/migrations"
	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/testutil"
)

// routedPair builds a Store over two databases standing in for a primary and its replica,
// routing its reads (RouteReads): the same users and conversation, whose title and message text
// name the database, and an API key only the primary has (created after the replica was copied).
func routedPair(t *testing.T, clock *testutil.Clock) (r *store.Store, primary *gorm.DB, dropReplica func()) {
	t.Helper()
	admin, err := testutil.PostgresURL()
	if err != nil {
		t.Fatalf("no PostgreSQL (TEST_POSTGRES_URL, 127.0.0.1:5432 or Docker): %v", err)
	}
	ctx := context.Background()
	var dbs [2]*gorm.DB
	for i, name := range []string{"primary", "replica"} {
		u, drop, err := testutil.CreateDatabase(ctx, admin, fmt.Sprintf("test_forum_routed_%s_%d", name, os.Getpid()), "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(drop)
		if i == 1 {
			dropReplica = drop
		}
		gdb := testutil.OpenDB(t, u)
		if _, err := migrate.Up(ctx, gdb, migrations.Set); err != nil {
			t.Fatal(err)
		}
		date := int64(1700000000)
		f := &seed.File{
			Users: []seed.User{{UserID: 1, Username: "alice"}, {UserID: 2, Username: "bob"}},
			Conversations: []seed.Conversation{{ConversationID: 10, Title: "on the " + name, UserID: 1, Recipients: []int64{2},
				Messages: []seed.Message{{MessageID: 100, UserID: 1, Message: "from the " + name, MessageDate: &date}}}},
		}
		if i == 0 {
			uid := int64(1)
			f.APIKeys = []seed.APIKey{{Key: "primary-only-key-0123456789abcdef", Type: "user", UserID: &uid, Scopes: []string{"conversation:read"}}}
		}
		if _, err := seed.Load(ctx, gdb, f, time.Unix(date, 0)); err != nil {
			t.Fatal(err)
		}
		dbs[i] = gdb
	}
	reads, err := db.NewReads(dbs[0], dbs[1], db.ReadsOptions{Service: "forum-test", Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.New(dbs[0])
	if err != nil {
		t.Fatal(err)
	}
	st.RouteReads(reads)
	return st, dbs[0], dropReplica
}

func TestReplicaReadsAndWrites(t *testing.T) {
	ctx := context.Background()
	clock := testutil.NewClock(time.Now())
	r, primary, dropReplica := routedPair(t, clock)
	title := func(user int64) string {
		t.Helper()
		c, err := r.Conversation(ctx, 10, user)
		if err != nil {
			t.Fatal(err)
		}
		return c.Title
	}
	if got := title(2); got != "on the replica" {
		t.Fatalf("read: %q", got)
	}
	page, err := r.MessagePage(ctx, 10, 2, 1)
	if err != nil || len(page.Messages) != 1 || page.Messages[0].Message != "from the replica" {
		t.Fatalf("page: %+v, %v", page, err)
	}
	m, _, err := r.Message(ctx, 100, 2)
	if err != nil || m.Message != "from the replica" {
		t.Fatalf("message: %+v, %v", m, err)
	}

	// A write goes to the primary, and its writer reads the primary for a few seconds.
	if err := r.MarkRead(ctx, 10, 1, 1700000500); err != nil {
		t.Fatal(err)
	}
	var last int64
	if err := primary.Raw("SELECT last_read_date FROM conversation_participants WHERE conversation_id = 10 AND user_id = 1").Scan(&last).Error; err != nil || last != 1700000500 {
		t.Fatalf("primary's last_read_date %d, %v", last, err)
	}
	if got := title(1); got != "on the primary" {
		t.Fatalf("the writer reads %q right after its write", got)
	}
	if page, err := r.MessagePage(ctx, 10, 1, 1); err != nil || page.LastReadDate != 1700000500 {
		t.Fatalf("the writer's page: %+v, %v", page, err)
	}
	if got := title(2); got != "on the replica" {
		t.Fatalf("another user reads %q", got)
	}
	clock.Add(db.DefaultPinAfterWrite)
	if got := title(1); got != "on the replica" {
		t.Fatalf("the writer still reads %q after the pin", got)
	}

	// A key only the primary has (the replica lags) is found.
	k, found, err := r.LookupKey(ctx, auth.Hash("primary-only-key-0123456789abcdef"))
	if err != nil || !found || k.UserID != 1 {
		t.Fatalf("key: %+v %v %v", k, found, err)
	}
	if _, found, err := r.LookupKey(ctx, auth.Hash("no-such-key")); err != nil || found {
		t.Fatalf("unknown key: %v %v", found, err)
	}

	// The replica goes away: every read is answered by the primary, and counted.
	before := promtestutil.ToFloat64(db.FallbacksCounter("forum-test"))
	dropReplica()
	if got := title(2); got != "on the primary" {
		t.Fatalf("replica down: %q", got)
	}
	if page, err := r.MessagePage(ctx, 10, 2, 1); err != nil || page.Messages[0].Message != "from the primary" {
		t.Fatalf("replica down, page: %+v, %v", page, err)
	}
	if ok, err := r.UserExists(ctx, 2); err != nil || !ok {
		t.Fatalf("replica down, user: %v %v", ok, err)
	}
	if unknown, err := r.UnknownUsers(ctx, []int64{2, 99}); err != nil || !slices.Equal(unknown, []int64{99}) {
		t.Fatalf("replica down, unknown users: %v %v", unknown, err)
	}
	if n := promtestutil.ToFloat64(db.FallbacksCounter("forum-test")) - before; n < 4 {
		t.Fatalf("%v fallbacks counted", n)
	}
}

// The conversations API with routed reads: the list and /api/me/ read the replica, the options the
// writes check against come from the primary, and every write runs on the primary and pins its
// writer's reads there.
func TestReplicaConversationsAPI(t *testing.T) {
	ctx := context.Background()
	clock := testutil.NewClock(time.Now())
	r, primary, _ := routedPair(t, clock)
	// The primary differs: bob has read conversation 10, maxRecipients is 7, user 3 exists.
	testutil.Exec(t, primary,
		"UPDATE conversation_participants SET last_read_date = 1700000000 WHERE user_id = 2",
		"UPDATE forum_options SET max_recipients = 7",
		"INSERT INTO users (user_id, username) VALUES (3, 'carol')")

	list, err := r.ListConversations(ctx, 2, conversation.ListFilter{}, 1)
	if err != nil || len(list.Conversations) != 1 || list.Conversations[0].Title != "on the replica" {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if _, unread, err := r.Me(ctx, 2); err != nil || unread != 1 {
		t.Fatalf("me: %d unread, %v; want the replica's 1", unread, err)
	}
	if opts, err := r.Options(ctx); err != nil || opts.MaxRecipients != 7 {
		t.Fatalf("options: %+v, %v; want the primary's", opts, err)
	}

	// onPrimary checks that query counts 1 on the primary.
	onPrimary := func(name, query string) {
		t.Helper()
		var n int64
		if err := primary.Raw(query).Scan(&n).Error; err != nil || n != 1 {
			t.Fatalf("%s: %d on the primary (%v); want 1", name, n, err)
		}
	}
	yes := true
	const date = 1700000100
	for _, w := range []struct {
		name      string
		user      int64
		write     func() error
		onPrimary string // counts 1 on the primary after the write
	}{
		{"start", 1, func() error {
			_, err := r.StartConversation(ctx, conversation.NewConversation{StarterID: 1, Recipients: []int64{2}, Title: "started", Message: "m", Open: true, Date: date}, nil,
				func(conversation.ConversationRow) ([]byte, error) { return nil, nil })
			return err
		}, "SELECT COUNT(*) FROM conversations WHERE title = 'started'"},
		{"reply", 2, func() error {
			_, err := r.Reply(ctx, conversation.NewReply{ConversationID: 10, UserID: 2, Message: "reply", Date: date}, nil,
				func(conversation.MessageRow, conversation.ConversationRow) ([]byte, error) { return nil, nil })
			return err
		}, "SELECT COUNT(*) FROM conversation_messages WHERE message = 'reply'"},
		{"edit", 1, func() error {
			_, _, err := r.EditMessage(ctx, conversation.MessageEdit{MessageID: 100, UserID: 1, Text: "edited"})
			return err
		}, "SELECT COUNT(*) FROM conversation_messages WHERE message_id = 100 AND message = 'edited'"},
		{"update", 1, func() error {
			_, err := r.UpdateConversation(ctx, 10, 1, conversation.ConversationUpdate{OpenInvite: &yes})
			return err
		}, "SELECT COUNT(*) FROM conversations WHERE conversation_id = 10 AND open_invite"},
		{"star", 2, func() error {
			_, err := r.Star(ctx, 10, 2, &yes)
			return err
		}, "SELECT COUNT(*) FROM conversation_participants WHERE conversation_id = 10 AND user_id = 2 AND starred"},
		{"invite", 1, func() error { return r.Invite(ctx, 10, 1, []int64{3}, 7) },
			"SELECT COUNT(*) FROM conversation_participants WHERE conversation_id = 10 AND user_id = 3"},
		{"mark-unread", 1, func() error { return r.MarkUnread(ctx, 10, 1) },
			"SELECT COUNT(*) FROM conversation_participants WHERE conversation_id = 10 AND user_id = 1 AND last_read_date = 0"},
	} {
		title := func() string {
			t.Helper()
			c, err := r.Conversation(ctx, 10, w.user)
			if err != nil {
				t.Fatalf("%s: %v", w.name, err)
			}
			return c.Title
		}
		if got := title(); got != "on the replica" {
			t.Fatalf("%s: user %d reads %q before the write", w.name, w.user, got)
		}
		if err := w.write(); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		onPrimary(w.name, w.onPrimary)
		if got := title(); got != "on the primary" {
			t.Fatalf("%s: the writer reads %q right after its write", w.name, got)
		}
		clock.Add(db.DefaultPinAfterWrite)
	}
	// Leaving: on the primary bob is gone from the conversation, on the replica he is still in it.
	if err := r.Leave(ctx, 10, 2, false); err != nil {
		t.Fatal(err)
	}
	onPrimary("leave", "SELECT COUNT(*) FROM conversation_participants WHERE conversation_id = 10 AND user_id = 2 AND left_state <> 0")
	if _, err := r.Conversation(ctx, 10, 2); !errors.Is(err, conversation.ErrConversationNotFound) {
		t.Fatalf("the leaver reads conversation 10 right after leaving: %v", err)
	}
}
