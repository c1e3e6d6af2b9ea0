package conversation

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// heldStore answers Options and holds every reply until release is closed; no other method is
// called.
type heldStore struct {
	Store
	started chan struct{}
	release chan struct{}
}

func (h *heldStore) Options(context.Context) (Options, error) {
	return Options{DiscussionsPerPage: 20, MaxRecipients: 20, MessageMaxLength: 100}, nil
}

func (h *heldStore) Reply(_ context.Context, _ NewReply, _ *Retry, answer func(MessageRow, ConversationRow) ([]byte, error)) (Answer, error) {
	h.started <- struct{}{}
	<-h.release
	body, err := answer(MessageRow{MessageID: 1}, ConversationRow{ConversationID: 7})
	return Answer{Status: 200, Body: body}, err
}

// A repeat of a write with its Idempotency-Key while the first runs in this process is
// ErrRequestInProgress at once, whatever the store; another key, another user or another API key
// is not held up, and once the first is done the key is free for the store to replay.
func TestRetryInProgressHere(t *testing.T) {
	store := &heldStore{started: make(chan struct{}, 8), release: make(chan struct{})}
	s := NewService(store, nil)
	fields := Fields{FieldConversationID: {"7"}, FieldMessage: {"hi"}}
	render := func(Message) ([]byte, error) { return []byte("{}"), nil }
	reply := func(owner string, user int64, key string) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := s.Reply(context.Background(), user, fields, &Retry{Owner: owner, UserID: user, Key: key, Fingerprint: "f"}, render)
			done <- err
		}()
		return done
	}
	first := reply("key-a", 1, "k1")
	<-store.started
	for _, tc := range []struct {
		name       string
		owner      string
		user       int64
		key        string
		inProgress bool
	}{
		{"the same key", "key-a", 1, "k1", true},
		{"another key", "key-a", 1, "k2", false},
		{"another user", "key-a", 2, "k1", false},
		{"another API key", "key-b", 1, "k1", false},
	} {
		done := reply(tc.owner, tc.user, tc.key)
		if tc.inProgress {
			if err := <-done; !errors.Is(err, ErrRequestInProgress) {
				t.Fatalf("%s: %v, want ErrRequestInProgress", tc.name, err)
			}
			continue
		}
		<-store.started // it reached the store while the first is still held
	}
	close(store.release)
	if err := <-first; err != nil {
		t.Fatalf("first: %v", err)
	}
	// Done: the key is free again (the store would now replay the recorded answer).
	again := reply("key-a", 1, "k1")
	<-store.started
	if err := <-again; err != nil {
		t.Fatalf("after the first: %v", err)
	}
	// Without a key nothing is claimed.
	if _, err := s.Reply(context.Background(), 1, fields, nil, render); err != nil {
		t.Fatal(err)
	}
}

// usersStore knows the users of users and records the users looked up; no write reaches it.
type usersStore struct {
	Store
	users map[int64]bool
	asked [][]int64
}

func (u *usersStore) Options(context.Context) (Options, error) {
	return Options{DiscussionsPerPage: 20, MaxRecipients: 5, MessageMaxLength: 100}, nil
}

func (u *usersStore) UnknownUsers(_ context.Context, ids []int64) ([]int64, error) {
	u.asked = append(u.asked, slices.Clone(ids))
	var unknown []int64
	for _, id := range ids {
		if !u.users[id] {
			unknown = append(unknown, id)
		}
	}
	return unknown, nil
}

// A refusal of malformed recipients also names the well-formed ones that are no user, for a start
// and an invite alike, in the order sent; the well-formed ones alone are looked up.
func TestRecipientsRefusedAtOnce(t *testing.T) {
	fields := Fields{FieldRecipients: {"9", "2", "x", "8", "-1"}, FieldTitle: {"Hi"}, FieldMessage: {"m"}}
	want := []string{"9", "x", "-1"}
	for _, op := range []string{"start", "invite"} {
		store := &usersStore{users: map[int64]bool{2: true, 8: true}}
		s := NewService(store, nil)
		var err error
		if op == "start" {
			_, err = s.Start(context.Background(), 1, fields, nil, func(Conversation) ([]byte, error) { return nil, nil })
		} else {
			err = s.Invite(context.Background(), 1, 7, fields)
		}
		var ir *InvalidRecipientsError
		if !errors.As(err, &ir) || !slices.Equal(ir.Values, want) {
			t.Errorf("%s: %v; want invalid %q", op, err, want)
		}
		// One question, with every well-formed id.
		if len(store.asked) != 1 || !slices.Equal(store.asked[0], []int64{9, 2, 8}) {
			t.Errorf("%s: asked %v", op, store.asked)
		}
	}
	// A failed look-up is that failure, not a refusal.
	broken := &failingUsers{usersStore: usersStore{users: map[int64]bool{}}}
	_, err := NewService(broken, nil).Start(context.Background(), 1, fields, nil, func(Conversation) ([]byte, error) { return nil, nil })
	if !errors.Is(err, errLookup) {
		t.Fatalf("failed look-up: %v", err)
	}
}

var errLookup = errors.New("lookup failed")

type failingUsers struct{ usersStore }

func (f *failingUsers) UnknownUsers(context.Context, []int64) ([]int64, error) { return nil, errLookup }
