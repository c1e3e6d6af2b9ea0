package store_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/forum-svc/internal/event"
	"forumstats.local/forum-svc/internal/store"
)

// changeLog is a recorder that keeps every change it is given, and fails while fail is set.
type changeLog struct {
	mu      sync.Mutex
	changes []event.Change
	fail    error
}

func (l *changeLog) Record(tx *gorm.DB, changes []event.Change) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return l.fail
	}
	l.changes = append(l.changes, changes...)
	return nil
}

func (l *changeLog) take() []event.Change {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.changes
	l.changes = nil
	return c
}

func countMessages(t *testing.T, gdb *gorm.DB) int64 {
	t.Helper()
	var n int64
	if err := gdb.Raw(`SELECT COUNT(*) FROM conversation_messages WHERE conversation_id = 10`).Row().Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func reply(st *store.Store, userID int64, text string) (conversation.Answer, error) {
	return st.Reply(context.Background(), conversation.NewReply{ConversationID: 10, UserID: userID, Message: text, Parsed: text,
		Date: 1_800_000_100}, nil, func(conversation.MessageRow, conversation.ConversationRow) ([]byte, error) { return nil, nil })
}

// A recorder's error rolls the write back: the reply is not stored, and the error is the write's.
func TestFailingRecorderRollsBackReply(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			st, gdb := reactStore(t, dialect, 3)
			log := &changeLog{}
			st.AddRecorder(log)
			before := countMessages(t, gdb)
			broken := errors.New("recorder broken")
			log.fail = broken
			if _, err := reply(st, 2, "lost"); !errors.Is(err, broken) {
				t.Fatalf("reply with a failing recorder: err %v, want %v", err, broken)
			}
			if got := countMessages(t, gdb); got != before {
				t.Fatalf("messages after the rolled-back reply: %d, want %d", got, before)
			}
			var count int64
			if err := gdb.Raw(`SELECT message_count FROM conversations WHERE conversation_id = 10`).Row().Scan(&count); err != nil {
				t.Fatal(err)
			}
			if count != before {
				t.Fatalf("message_count %d after the rolled-back reply, want %d", count, before)
			}
			log.fail = nil
			if _, err := reply(st, 2, "kept"); err != nil {
				t.Fatal(err)
			}
			if got := countMessages(t, gdb); got != before+1 {
				t.Fatalf("messages after the reply: %d, want %d", got, before+1)
			}
			if got := log.take(); len(got) != 1 || got[0].Type != event.TypeMessageCreated {
				t.Fatalf("changes of the reply: %+v", got)
			}
		})
	}
}

// Every write hands its recorders the changes it made, for the users who may see them.
func TestWritesRecordTheirChanges(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			// Users 1, 2, 3 in conversation 10 (1 its starter, the author of message 100); 4 in none.
			st, _ := reactStore(t, dialect, 3)
			log := &changeLog{}
			st.AddRecorder(log)
			now := time.Unix(1_800_000_500, 0)
			st.SetClock(func() time.Time { return now })
			check := func(name string, want ...event.Change) {
				t.Helper()
				got := log.take()
				for i := range got {
					if got[i].MessageID != 0 && want[i].MessageID == -1 {
						want[i].MessageID = got[i].MessageID // a new message: its id is the store's
					}
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: changes\n got %+v\nwant %+v", name, got, want)
				}
			}
			at := now.Unix()

			a, err := reply(st, 2, "hello")
			if err != nil {
				t.Fatal(err)
			}
			_ = a
			check("reply", event.Change{Type: event.TypeMessageCreated, ConversationID: 10, MessageID: -1, ActorID: 2,
				UserIDs: []int64{1, 2, 3}, At: 1_800_000_100})

			if _, _, err := st.EditMessage(ctx, conversation.MessageEdit{MessageID: 100, UserID: 1, Text: "x", Parsed: "x",
				Date: 1_800_000_200}); err != nil {
				t.Fatal(err)
			}
			check("edit", event.Change{Type: event.TypeMessageUpdated, ConversationID: 10, MessageID: 100, ActorID: 1,
				UserIDs: []int64{1, 2, 3}, At: 1_800_000_200})

			if _, err := react(st, 3, 1); err != nil {
				t.Fatal(err)
			}
			check("react", event.Change{Type: event.TypeReactionChanged, ConversationID: 10, MessageID: 100, ActorID: 3,
				UserIDs: []int64{1, 2, 3}, At: 1})

			title := "New"
			if _, err := st.UpdateConversation(ctx, 10, 1, conversation.ConversationUpdate{Title: &title}); err != nil {
				t.Fatal(err)
			}
			check("update", event.Change{Type: event.TypeConversationUpdated, ConversationID: 10, ActorID: 1,
				UserIDs: []int64{1, 2, 3}, At: at})
			if _, err := st.UpdateConversation(ctx, 10, 1, conversation.ConversationUpdate{}); err != nil {
				t.Fatal(err)
			}
			check("empty update")

			if err := st.MarkRead(ctx, 10, 2, 0); err != nil {
				t.Fatal(err)
			}
			check("mark read", event.Change{Type: event.TypeReadStateChanged, ConversationID: 10, ActorID: 2, UserIDs: []int64{2}, At: at})
			if err := st.MarkUnread(ctx, 10, 3); err != nil {
				t.Fatal(err)
			}
			check("mark unread", event.Change{Type: event.TypeReadStateChanged, ConversationID: 10, ActorID: 3, UserIDs: []int64{3}, At: at})

			if _, err := st.Star(ctx, 10, 3, nil); err != nil {
				t.Fatal(err)
			}
			check("star", event.Change{Type: event.TypeConversationUpdated, ConversationID: 10, ActorID: 3, UserIDs: []int64{3}, At: at})

			if err := st.Leave(ctx, 10, 3, false); err != nil {
				t.Fatal(err)
			}
			check("leave", event.Change{Type: event.TypeParticipantLeft, ConversationID: 10, ActorID: 3, UserIDs: []int64{3}, At: at})

			// 3 left: the invite's conversation_updated skips them; inviting 3 again changes nothing.
			if err := st.Invite(ctx, 10, 1, []int64{4, 3}, 100); err != nil {
				t.Fatal(err)
			}
			check("invite",
				event.Change{Type: event.TypeConversationCreated, ConversationID: 10, ActorID: 1, UserIDs: []int64{4}, At: at},
				event.Change{Type: event.TypeConversationUpdated, ConversationID: 10, ActorID: 1, UserIDs: []int64{1, 2}, At: at})

			// A reply brings back 3, who left without ignoring.
			if _, err := reply(st, 4, "back"); err != nil {
				t.Fatal(err)
			}
			check("reply bringing back", event.Change{Type: event.TypeMessageCreated, ConversationID: 10, MessageID: -1, ActorID: 4,
				UserIDs: []int64{1, 2, 3, 4}, At: 1_800_000_100})

			var started conversation.ConversationRow
			if _, err := st.StartConversation(ctx, conversation.NewConversation{StarterID: 4, Recipients: []int64{2, 1}, Title: "S",
				Message: "m", Parsed: "m", Open: true, Date: 1_800_000_300}, nil,
				func(c conversation.ConversationRow) ([]byte, error) { started = c; return nil, nil }); err != nil {
				t.Fatal(err)
			}
			check("start", event.Change{Type: event.TypeConversationCreated, ConversationID: started.ConversationID,
				MessageID: started.FirstMessageID, ActorID: 4, UserIDs: []int64{1, 2, 4}, At: 1_800_000_300})

			// A refused write records nothing.
			if _, err := reply(st, 9, "nobody"); !errors.Is(err, conversation.ErrConversationNotFound) {
				t.Fatalf("reply of a non-participant: %v", err)
			}
			check("refused reply")
		})
	}
}

// AddCommitted's function runs inside the write's transaction, where the store's reads see the
// write (the message it created, the recipients' unread conversations), and what it returns runs
// once the write has committed; a write that rolls back runs nothing.
func TestCommittedPreparesInTheTransaction(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			st, gdb := reactStore(t, dialect, 3)
			log := &changeLog{}
			st.AddRecorder(log)
			var (
				seen      conversation.MessageRow
				created   int64 // the change's message id
				unread    int64
				readErr   error
				committed int
				inside    int64 // messages a read outside the transaction counted while preparing
			)
			st.AddCommitted(func(ctx context.Context, changes []event.Change) func() {
				if changes[0].Type != event.TypeMessageCreated {
					return nil
				}
				created = changes[0].MessageID
				seen, _, readErr = st.Message(ctx, created, 3)
				if readErr == nil {
					_, unread, readErr = st.Me(ctx, 3)
				}
				if dialect == "postgres" { // SQLite's one connection is the transaction's
					inside = countMessages(t, gdb)
				}
				return func() { committed++ }
			})
			before := countMessages(t, gdb)
			if _, err := reply(st, 2, "seen before the commit"); err != nil {
				t.Fatal(err)
			}
			if readErr != nil || created == 0 || seen.MessageID != created || seen.Message != "seen before the commit" {
				t.Fatalf("read in the transaction: %+v, %v; want message %d", seen, readErr, created)
			}
			if unread < 1 {
				t.Errorf("user 3's unread conversations read in the transaction: %d, want at least 1", unread)
			}
			if dialect == "postgres" && inside != before {
				t.Errorf("a read outside the transaction saw %d messages while it prepared, want %d (uncommitted)", inside, before)
			}
			if committed != 1 {
				t.Fatalf("after the commit: ran %d times, want 1", committed)
			}
			log.fail = errors.New("recorder broken")
			if _, err := reply(st, 2, "rolled back"); err == nil {
				t.Fatal("reply with a failing recorder succeeded")
			}
			if committed != 1 {
				t.Fatalf("a rolled-back write ran the committed function: %d runs", committed)
			}
		})
	}
}

// statementCounter counts the statements run on a database while on.
type statementCounter struct {
	on bool // set and read by the test's goroutine only: the counted statements run on it
	n  int
}

func countStatements(t *testing.T, gdb *gorm.DB) *statementCounter {
	t.Helper()
	c := &statementCounter{}
	count := func(*gorm.DB) {
		if c.on {
			c.n++
		}
	}
	cb := gdb.Callback()
	if err := errors.Join(cb.Row().Before("gorm:row").Register("test:count", count),
		cb.Raw().Before("gorm:raw").Register("test:count", count),
		cb.Query().Before("gorm:query").Register("test:count", count)); err != nil {
		t.Fatal(err)
	}
	return c
}

// statements runs fn and returns how many statements it ran.
func (c *statementCounter) statements(fn func()) int {
	c.n, c.on = 0, true
	fn()
	c.on = false
	return c.n
}

// Once a write's changes are over, the rows its answer and its events' renderings read are read
// once: the author's rendering is the answer, the other participants read their own rows only
// (the recipients are the same for all). What is reused is as a read would find it, per user,
// and the reader's to change.
func TestCommittedReusesTheWritesFinalReads(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			st, gdb := reactStore(t, dialect, 3) // conversation 10: user 1 started it, 2 and 3 are in it
			log := &changeLog{}
			st.AddRecorder(log)
			// User 3 left (a reply brings them back); user 4 was never in it.
			if err := gdb.Exec(`UPDATE conversation_participants SET left_state = 1 WHERE conversation_id = 10 AND user_id = 3`).Error; err != nil {
				t.Fatal(err)
			}
			counter := countStatements(t, gdb)
			var (
				answerM                  conversation.MessageRow
				answerC                  conversation.ConversationRow
				authorM                  conversation.MessageRow
				authorC, otherC, otherC2 conversation.ConversationRow
				authorReads, otherReads  int
				againReads, convReads    int
				errs                     []error
			)
			st.AddCommitted(func(ctx context.Context, changes []event.Change) func() {
				id := changes[0].MessageID
				authorReads = counter.statements(func() {
					var err error
					authorM, authorC, err = st.Message(ctx, id, 2)
					errs = append(errs, err)
				})
				otherReads = counter.statements(func() {
					_, c, err := st.Message(ctx, id, 3)
					otherC = c
					errs = append(errs, err)
				})
				otherC.Recipients[0].Username = "changed by its reader"
				againReads = counter.statements(func() {
					_, c, err := st.Message(ctx, id, 3)
					otherC2 = c
					errs = append(errs, err)
				})
				convReads = counter.statements(func() {
					_, err := st.Conversation(ctx, 10, 1)
					errs = append(errs, err)
				})
				return nil
			})
			_, err := st.Reply(context.Background(), conversation.NewReply{ConversationID: 10, UserID: 2, Message: "hi", Parsed: "hi",
				Date: 1_800_000_100}, nil, func(m conversation.MessageRow, c conversation.ConversationRow) ([]byte, error) {
				answerM, answerC = m, c
				return nil, nil
			})
			if err := errors.Join(append(errs, err)...); err != nil {
				t.Fatal(err)
			}
			if changes := log.take(); len(changes) != 1 || !reflect.DeepEqual(changes[0].UserIDs, []int64{1, 2, 3}) {
				t.Fatalf("changes %+v, want one for users 1, 2 and 3 (3 brought back)", changes)
			}
			if authorReads != 0 || !reflect.DeepEqual(authorM, answerM) || !reflect.DeepEqual(authorC, answerC) {
				t.Errorf("the author's rendering ran %d statements, read %+v %+v; want none, the answer's %+v %+v",
					authorReads, authorM, authorC, answerM, answerC)
			}
			if otherReads != 1 || againReads != 0 || convReads != 1 {
				t.Errorf("statements: user 3's message %d (want 1), again %d (want 0), user 1's conversation %d (want 1)",
					otherReads, againReads, convReads)
			}
			if answerC.LastReadDate != 1_800_000_100 || otherC2.LastReadDate >= 1_800_000_100 {
				t.Errorf("read dates: the author's %d, user 3's %d; want the reply's for the author only", answerC.LastReadDate, otherC2.LastReadDate)
			}
			want := []conversation.Recipient{{UserID: 2, Username: "user2"}, {UserID: 3, Username: "user3"}}
			if !reflect.DeepEqual(otherC2.Recipients, want) || !reflect.DeepEqual(answerC.Recipients, want) {
				t.Errorf("recipients: user 3's second read %+v, the answer's %+v; want %+v", otherC2.Recipients, answerC.Recipients, want)
			}
		})
	}
}
