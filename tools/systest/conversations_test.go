//go:build faults

package systest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"forumstats.local/tools/badinput"
	"forumstats.local/tools/stack"
)

// The forum options' defaults the corpus and the security tests assume (the fixture sets no option).
const (
	defaultDiscussionsPerPage = 20
	defaultMaxRecipients      = 20
	defaultMessageMaxLength   = 10000
)

// convState is what the conversations API tests build through the API on top of the fixture.
type convState struct {
	Joined, JoinedMessage       int64 // user 2 started it with user 1, open_invite off
	Closed                      int64 // user 1 started it with user 2, closed
	Left, LeftMessage           int64 // user 1 started it with user 2 and left it for good (ignore)
	LeftSoft, LeftSoftMessage   int64 // the same, left without ignore (gone until a reply)
	ForeignClosed, ForeignOwned int64 // user 3 started them with user 4: closed; open_invite on
	Full                        int64 // user 1 started it with maxRecipients others
}

// actor is the headers that make a request act as user (1 with the user key, others through
// the super key).
func actor(fx stack.ForumFixture, user int64) http.Header {
	if user == 1 {
		return http.Header{"Forum-Api-Key": {fx.UserKey}}
	}
	return http.Header{"Forum-Api-Key": {fx.SuperKey}, "Forum-Api-User": {strconv.FormatInt(user, 10)}}
}

// call sends a form as user and decodes a 200 answer into out (nil: ignored).
func call(t *testing.T, svc *stack.Service, fx stack.ForumFixture, user int64, method, path string, form url.Values, out any) {
	t.Helper()
	h := actor(fx, user)
	body := ""
	if form != nil {
		h.Set("Content-Type", "application/x-www-form-urlencoded")
		body = form.Encode()
	}
	st, _, b := doReq(t, method, svc.URL+path, h, body)
	if st != http.StatusOK {
		t.Fatalf("setup: %s %s as user %d: %d %s", method, path, user, st, b)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(b), out); err != nil {
			t.Fatalf("setup: %s %s: %v: %s", method, path, err, b)
		}
	}
}

type started struct {
	Conversation struct {
		ConversationID int64 `json:"conversation_id"`
		FirstMessageID int64 `json:"first_message_id"`
	} `json:"conversation"`
}

// start starts a conversation as starter with recipients and extra fields; it returns its id
// and first message.
func start(t *testing.T, svc *stack.Service, fx stack.ForumFixture, starter int64, title string, extra url.Values, recipients ...int64) (int64, int64) {
	t.Helper()
	f := url.Values{"title": {title}, "message": {"first message of " + title}}
	for _, r := range recipients {
		f.Add("recipient_ids[]", strconv.FormatInt(r, 10))
	}
	for k, vs := range extra {
		f[k] = vs
	}
	var s started
	call(t, svc, fx, starter, "POST", "/api/conversations/", f, &s)
	if s.Conversation.ConversationID == 0 || s.Conversation.FirstMessageID == 0 {
		t.Fatalf("setup: start %q answered no conversation or first message id", title)
	}
	return s.Conversation.ConversationID, s.Conversation.FirstMessageID
}

// setupConversations builds the conversations of convState through the API.
func setupConversations(t *testing.T, svc *stack.Service, fx stack.ForumFixture) convState {
	t.Helper()
	var s convState
	s.Joined, s.JoinedMessage = start(t, svc, fx, 2, "Joined", nil, 1)
	s.Closed, _ = start(t, svc, fx, 1, "Closed", url.Values{"conversation_open": {"0"}}, 2)
	s.Left, s.LeftMessage = start(t, svc, fx, 1, "Left", nil, 2)
	call(t, svc, fx, 1, "DELETE", fmt.Sprintf("/api/conversations/%d/?ignore=1", s.Left), nil, nil)
	s.LeftSoft, s.LeftSoftMessage = start(t, svc, fx, 1, "Left softly", nil, 2)
	call(t, svc, fx, 1, "DELETE", fmt.Sprintf("/api/conversations/%d/", s.LeftSoft), nil, nil)
	s.ForeignClosed, _ = start(t, svc, fx, 3, "Foreign closed", url.Values{"conversation_open": {"false"}}, 4)
	s.ForeignOwned, _ = start(t, svc, fx, 3, "Foreign, open invite", url.Values{"open_invite": {"true"}}, 4)
	full := make([]int64, defaultMaxRecipients)
	for i := range full {
		full[i] = int64(2 + i)
	}
	s.Full, _ = start(t, svc, fx, 1, "Full", nil, full...)
	return s
}

// conversationService starts a forum-svc on a small fixture with the conversations of convState
// (on SQLite when sqlite, else PostgreSQL).
func conversationService(t *testing.T, sqlite bool) (*stack.Service, stack.ForumFixture, convState) {
	t.Helper()
	fx := stack.NewForumFixture(30, 20)
	var env []string
	if sqlite {
		env = forumSQLiteEnv(t, fx)
	} else {
		env = forumEnv(t, postgres(t), fx)
	}
	svc := service(t, stack.Forum, env...)
	return svc, fx, setupConversations(t, svc, fx)
}

// forumSQLiteEnv is forumEnv on the embedded SQLite database (the API is the same on both).
func forumSQLiteEnv(t *testing.T, fx stack.ForumFixture, extra ...string) []string {
	t.Helper()
	dir := tempDir(t)
	data, err := fx.SeedJSON()
	if err != nil {
		t.Fatal(err)
	}
	file, err := stack.WriteTemp(dir, "seed-*.json", data)
	if err != nil {
		t.Fatal(err)
	}
	url := "sqlite:" + filepath.Join(dir, "forum.db")
	if out, err := stack.Run(context.Background(), 2*time.Minute, bin(t, stack.Forum), []string{"DATABASE_URL=" + url}, "seed", "--file", file); err != nil {
		t.Fatalf("forum-svc seed on SQLite: %v\n%s", err, out)
	}
	return forumURLEnv(url, extra...)
}

// conversationData is the corpus's data: the fixture's and the conversations built on it.
func conversationData(t *testing.T, svc *stack.Service, fx stack.ForumFixture) badinput.ForumData {
	t.Helper()
	s := setupConversations(t, svc, fx)
	d := forumData(fx)
	d.Joined, d.JoinedMessage, d.Closed, d.Left, d.LeftMessage = s.Joined, s.JoinedMessage, s.Closed, s.Left, s.LeftMessage
	d.Full = s.Full
	// Spare: five extra conversations of user 1 that no load target uses.
	d.Spare = fx.ExtraOwn + int64(fx.ExtraConvs) - 5
	// User 1's list: Own, the extra ones, Joined, Closed and Full (not the two left).
	inList := 1 + fx.ExtraConvs + 3
	d.ListLastPage = (inList + defaultDiscussionsPerPage - 1) / defaultDiscussionsPerPage
	d.MaxRecipients, d.MessageMaxLength = defaultMaxRecipients, defaultMessageMaxLength
	return d
}
