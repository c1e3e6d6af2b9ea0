package seed_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

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

func TestMain(m *testing.M) { testutil.Run(m) }

var now = time.Unix(1_800_000_000, 0)

const base = `{
  "options": {"messagesPerPage": 20},
  "users": [{"user_id": 1, "username": "alice"}, {"user_id": 2, "username": "bob"}, {"user_id": 3, "username": "carol"}],
  "conversations": [{
    "conversation_id": 10, "title": "Trip", "user_id": 1, "recipients": [2, 3],
    "messages": [
      {"message_id": 100, "user_id": 1, "message": "hi", "message_date": 1767225600},
      {"message_id": 102, "user_id": 2, "message": "later", "message_date": 1767225800}]
  }],
  "read_state": [{"conversation_id": 10, "user_id": 2, "last_read_date": 1767225600}],
  "api_keys": [
    {"key": "plain-text-key-at-least-32-characters-long", "type": "user", "user_id": 1,
     "scopes": ["conversation:read", "conversation:write"], "active": true, "expires_at": null}
  ]
}`

func dialects(t *testing.T, body func(t *testing.T, gdb *gorm.DB)) {
	open := func(t *testing.T, url string) *gorm.DB {
		gdb, err := migrate.Open(context.Background(), url, nil, true, migrations.Set)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close(gdb) })
		return gdb
	}
	t.Run("postgres", func(t *testing.T) { body(t, open(t, testutil.NewDatabase(t, migrations.Set))) })
	t.Run("sqlite", func(t *testing.T) { body(t, open(t, "sqlite:"+filepath.Join(t.TempDir(), "forum.db"))) })
}

func load(t *testing.T, gdb *gorm.DB, text string) (seed.Summary, error) {
	t.Helper()
	f, err := seed.Parse(strings.NewReader(text))
	if err != nil {
		return seed.Summary{}, err
	}
	return seed.Load(context.Background(), gdb, f, now)
}

func mustLoad(t *testing.T, gdb *gorm.DB, text string) {
	t.Helper()
	if _, err := load(t, gdb, text); err != nil {
		t.Fatal(err)
	}
}

// dump is the whole content of the forum tables, for before/after comparisons.
// participants lists the {user_id last_read_date} of a conversation's participants, by user.
func participants(gdb *gorm.DB, conversationID int64) string {
	var rs []struct{ UserID, LastReadDate int64 }
	gdb.Raw("SELECT user_id, last_read_date FROM conversation_participants WHERE conversation_id = ? ORDER BY user_id", conversationID).Scan(&rs)
	return fmt.Sprint(rs)
}

func dump(t *testing.T, gdb *gorm.DB) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		"SELECT user_id, username FROM users ORDER BY 1",
		"SELECT conversation_id, title, user_id, start_date, message_count, first_message_id, last_message_id, last_message_date FROM conversations ORDER BY 1",
		"SELECT conversation_id, user_id, last_read_date FROM conversation_participants ORDER BY 1, 2",
		"SELECT message_id, conversation_id, user_id, message, message_date, position FROM conversation_messages ORDER BY 1",
		"SELECT key_hash, key_type, COALESCE(user_id, 0), scopes, active, COALESCE(expires_at, 0) FROM api_keys ORDER BY 1",
		"SELECT messages_per_page FROM forum_options",
	} {
		rows, err := gdb.Raw(q).Rows()
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				if bs, ok := v.([]byte); ok {
					vals[i] = string(bs)
				}
				if bv, ok := v.(bool); ok { // SQLite gives 0/1
					vals[i] = map[bool]int64{false: 0, true: 1}[bv]
				}
			}
			fmt.Fprintln(&b, vals...)
		}
		rows.Close()
		b.WriteString("--\n")
	}
	return b.String()
}

func TestLoadAndIdempotence(t *testing.T) {
	dialects(t, func(t *testing.T, gdb *gorm.DB) {
		sum, err := load(t, gdb, base)
		if err != nil {
			t.Fatal(err)
		}
		if sum.String() != "3 users, 1 conversations, 2 messages, 1 read states, 1 API keys" {
			t.Fatalf("summary %s", sum)
		}
		first := dump(t, gdb)
		mustLoad(t, gdb, base)
		if again := dump(t, gdb); again != first {
			t.Fatalf("a second load changed the database:\n%s\nvs\n%s", first, again)
		}
		// Participants: the starter and the recipients; a participant without read_state has read nothing.
		if got := participants(gdb, 10); got != "[{1 0} {2 1767225600} {3 0}]" {
			t.Fatalf("participants %s", got)
		}
		// Only the hash of the key is stored.
		var hash string
		gdb.Raw("SELECT key_hash FROM api_keys").Scan(&hash)
		if hash != auth.Hash("plain-text-key-at-least-32-characters-long") || strings.Contains(dump(t, gdb), "plain-text-key") {
			t.Fatalf("stored key %q", hash)
		}
	})
}

// A message that lands between existing ones shifts the positions after it; aggregates follow.
func TestPositionsRecomputed(t *testing.T) {
	dialects(t, func(t *testing.T, gdb *gorm.DB) {
		mustLoad(t, gdb, base)
		more := strings.Replace(base, `{"message_id": 102,`,
			`{"message_id": 101, "user_id": 3, "message": "middle", "message_date": 1767225700},
			 {"message_id": 99, "user_id": 3, "message": "same second as 100, lower id", "message_date": 1767225600},
			 {"message_id": 102,`, 1)
		mustLoad(t, gdb, more)
		var order []int64
		gdb.Raw("SELECT message_id FROM conversation_messages WHERE conversation_id = 10 ORDER BY position").Scan(&order)
		if fmt.Sprint(order) != "[99 100 101 102]" {
			t.Fatalf("order by position %v", order)
		}
		var positions []int64
		gdb.Raw("SELECT position FROM conversation_messages WHERE conversation_id = 10 ORDER BY position").Scan(&positions)
		if fmt.Sprint(positions) != "[1 2 3 4]" {
			t.Fatalf("positions %v", positions)
		}
		var c struct{ MessageCount, FirstMessageID, LastMessageID, StartDate, LastMessageDate int64 }
		gdb.Raw("SELECT message_count, first_message_id, last_message_id, start_date, last_message_date FROM conversations WHERE conversation_id = 10").Scan(&c)
		if c != (struct{ MessageCount, FirstMessageID, LastMessageID, StartDate, LastMessageDate int64 }{4, 99, 102, 1767225600, 1767225800}) {
			t.Fatalf("aggregates %+v", c)
		}
		// A message's date edited in a later file moves it.
		moved := strings.Replace(more, `"message": "hi", "message_date": 1767225600`, `"message": "hi", "message_date": 1767229999`, 1)
		mustLoad(t, gdb, moved)
		order = nil
		gdb.Raw("SELECT message_id FROM conversation_messages WHERE conversation_id = 10 ORDER BY position").Scan(&order)
		if fmt.Sprint(order) != "[99 101 102 100]" {
			t.Fatalf("after moving 100 last: %v", order)
		}
	})
}

// A conversation's participants become exactly its starter and recipients; kept ones keep their
// read state. A file may add to what the database holds without repeating it.
func TestParticipantsReplacedAndIncrementalFiles(t *testing.T) {
	dialects(t, func(t *testing.T, gdb *gorm.DB) {
		mustLoad(t, gdb, base)
		mustLoad(t, gdb, `{"conversations": [{"conversation_id": 10, "title": "Trip!", "user_id": 1, "recipients": [2], "messages": []}]}`)
		if got := participants(gdb, 10); got != "[{1 0} {2 1767225600}]" {
			t.Fatalf("participants %s", got)
		}
		var n int64
		gdb.Raw("SELECT message_count FROM conversations WHERE conversation_id = 10").Scan(&n)
		if n != 2 {
			t.Fatalf("messages kept: %d", n)
		}
		// read_state for a conversation defined only in the database.
		mustLoad(t, gdb, `{"read_state": [{"conversation_id": 10, "user_id": 1, "last_read_date": 5}]}`)
		// A new user in the database can be referenced by a later file.
		mustLoad(t, gdb, `{"users": [{"user_id": 7, "username": "gus"}]}`)
		mustLoad(t, gdb, `{"api_keys": [{"key": "gus-key-0123456789abcdef0123456789ab", "type": "user", "user_id": 7, "scopes": []}]}`)
	})
}

// Every refusal names the entry, and a refused file writes nothing.
func TestRefusals(t *testing.T) {
	conv := func(body string) string {
		return `{"conversations": [{"conversation_id": 20, "title": "T", "user_id": 1, "recipients": [2], ` + body + `}]}`
	}
	msg := func(m string) string {
		return conv(`"messages": [{"message_id": 200, "user_id": 1, "message": "ok", "message_date": 1}, ` + m + `]`)
	}
	key := func(k string) string { return `{"api_keys": [` + k + `]}` }
	cases := []struct{ file, want string }{
		{`{"users": [{"user_id": 5, "username": "eve"}], "bogus": 1}`, `seed file: json: unknown field "bogus"`},
		{`[]`, "seed file: json: cannot unmarshal array"},
		{`{"users": []} {}`, "seed file: unexpected data after the JSON value"},
		{`{"options": {"messagesPerPage": 0}}`, "options: messagesPerPage must be between 1 and 100, got 0"},
		{`{"options": {"messagesPerPage": 101}}`, "options: messagesPerPage must be between 1 and 100"},
		{`{"options": {"perPage": 10}}`, `options: json: unknown field "perPage"`},
		{`{"users": [{"user_id": 5, "username": "eve"}, {"user_id": 0, "username": "x"}]}`, "users[1]: user_id must be a positive integer"},
		{`{"users": [{"user_id": 5, "username": "eve"}, {"user_id": 5, "username": "x"}]}`, "users[1]: user_id 5 appears twice (also users[0])"},
		{`{"users": [{"user_id": 5, "username": " "}]}`, "users[0]: username must not be empty"},
		{`{"users": [{"user_id": 5, "username": "eve", "email": "e@x"}]}`, `users[0]: json: unknown field "email"`},
		{`{"users": [{"user_id": "5", "username": "eve"}]}`, "users[0]: json: cannot unmarshal string"},
		{`{"users": [null]}`, "users[0]: an entry must be an object, not null"},
		{conv(`"messages": []`), "conversations[0]: a conversation needs at least one message"},
		{`{"conversations": [{"conversation_id": -1, "title": "T", "user_id": 1, "messages": []}]}`, "conversations[0]: conversation_id must be a positive integer"},
		{`{"conversations": [{"conversation_id": 20, "title": "", "user_id": 1, "messages": []}]}`, "conversations[0]: title must not be empty"},
		{`{"conversations": [{"conversation_id": 20, "title": "T", "user_id": 9, "messages": []}]}`, "conversations[0]: user_id 9 does not exist"},
		{conv(`"messages": [], "starter": 1`), `conversations[0]: json: unknown field "starter"`},
		{`{"conversations": [{"conversation_id": 20, "title": "T", "user_id": 1, "recipients": [2, 9], "messages": []}]}`, "conversations[0].recipients[1]: user_id 9 does not exist"},
		{`{"conversations": [{"conversation_id": 20, "title": "T", "user_id": 1, "recipients": [1], "messages": []}]}`, "conversations[0].recipients[0]: user_id 1 is the starter of the conversation"},
		{`{"conversations": [{"conversation_id": 20, "title": "T", "user_id": 1, "recipients": [2, 2], "messages": []}]}`, "conversations[0].recipients[1]: user_id 2 appears twice"},
		{msg(`{"message_id": 201, "user_id": 9, "message": "x", "message_date": 1}`), "conversations[0].messages[1]: user_id 9 does not exist"},
		{msg(`{"message_id": 201, "user_id": 3, "message": "x", "message_date": 1}`), "conversations[0].messages[1]: user_id 3 is not a participant of the conversation"},
		{msg(`{"message_id": 200, "user_id": 1, "message": "x", "message_date": 1}`), "conversations[0].messages[1]: message_id 200 appears twice (also conversations[0].messages[0])"},
		{msg(`{"message_id": 100, "user_id": 1, "message": "x", "message_date": 1}`), "conversations[0].messages[1]: message_id 100 belongs to conversation 10"},
		{msg(`{"message_id": 201, "user_id": 1, "message": "", "message_date": 1}`), "conversations[0].messages[1]: message must not be empty"},
		{msg(`{"message_id": 201, "user_id": 1, "message": "` + strings.Repeat("я", 65537) + `", "message_date": 1}`), "conversations[0].messages[1]: message is longer than 65536 characters"},
		{`{"conversations": [{"conversation_id": 20, "title": "` + strings.Repeat("ж", 151) + `", "user_id": 1, "messages": []}]}`, "conversations[0]: title is longer than 150 characters"},
		{msg(`{"message_id": 201, "user_id": 1, "message": "x"}`), "conversations[0].messages[1]: message_date is required"},
		{msg(`{"message_id": 201, "user_id": 1, "message": "x", "message_date": -5}`), "conversations[0].messages[1]: message_date must not be negative"},
		{msg(`{"message_id": 201, "user_id": 1, "message": "x", "message_date": 1.5}`), "conversations[0].messages[1]: json: cannot unmarshal number 1.5"},
		{msg(`{"message_id": 0, "user_id": 1, "message": "x", "message_date": 1}`), "conversations[0].messages[1]: message_id must be a positive integer"},
		{`{"conversations": [{"conversation_id": 10, "title": "T", "user_id": 1, "messages": []}, {"conversation_id": 10, "title": "T", "user_id": 1, "messages": []}]}`, "conversations[1]: conversation_id 10 appears twice (also conversations[0])"},
		{`{"read_state": [{"conversation_id": 99, "user_id": 1, "last_read_date": 1}]}`, "read_state[0]: conversation_id 99 does not exist"},
		{`{"read_state": [{"conversation_id": 10, "user_id": 9, "last_read_date": 1}]}`, "read_state[0]: user_id 9 is not a participant of conversation 10"},
		{`{"read_state": [{"conversation_id": 10, "user_id": 1}]}`, "read_state[0]: last_read_date is required"},
		{`{"read_state": [{"conversation_id": 10, "user_id": 1, "last_read_date": 1}, {"conversation_id": 10, "user_id": 1, "last_read_date": 2}]}`, "read_state[1]: appears twice (also read_state[0])"},
		{key(`{"key": "short", "type": "user", "user_id": 1, "scopes": []}`), "api_keys[0]: key must be 32 to 256 characters long"},
		{key(`{"key": "with space 0123456789abcdef0123456789", "type": "user", "user_id": 1, "scopes": []}`), "api_keys[0]: key must be visible ASCII characters only"},
		{key(`{"key": "k-0123456789abcdef0123456789abcdef", "type": "admin", "scopes": []}`), `api_keys[0]: type "admin" is not one of user, super, guest`},
		{key(`{"key": "k-0123456789abcdef0123456789abcdef", "type": "user", "scopes": []}`), "api_keys[0]: a user key needs a positive user_id"},
		{key(`{"key": "k-0123456789abcdef0123456789abcdef", "type": "super", "user_id": 1, "scopes": []}`), "api_keys[0]: a super key has no user_id"},
		{key(`{"key": "k-0123456789abcdef0123456789abcdef", "type": "user", "user_id": 9, "scopes": []}`), "api_keys[0]: user_id 9 does not exist"},
		{key(`{"key": "k-0123456789abcdef0123456789abcdef", "type": "guest", "scopes": ["admin"]}`), `api_keys[0]: scope "admin" is not one of conversation:read, conversation:write`},
		{key(`{"key": "k-0123456789abcdef0123456789abcdef", "type": "guest", "scopes": ["conversation:read", "conversation:read"]}`), `api_keys[0]: scope "conversation:read" appears twice`},
		{key(`{"key": "k-0123456789abcdef0123456789abcdef", "type": "guest", "scopes": [], "expires_at": 0}`), "api_keys[0]: expires_at must be a positive Unix time or null"},
		{key(`{"key": "k-0123456789abcdef0123456789abcdef", "type": "guest", "scopes": []}, {"key": "k-0123456789abcdef0123456789abcdef", "type": "guest", "scopes": []}`), "api_keys[1]: key appears twice (also api_keys[0])"},
	}
	dialects(t, func(t *testing.T, gdb *gorm.DB) {
		mustLoad(t, gdb, base)
		before := dump(t, gdb)
		for _, c := range cases {
			// Each refused file also carries valid changes, which must not be written either.
			file := c.file
			if strings.HasPrefix(file, "{") && !strings.Contains(file, `"users"`) && !strings.Contains(file, `"options"`) {
				file = `{"users": [{"user_id": 1, "username": "renamed"}], "options": {"messagesPerPage": 7},` + file[1:]
			}
			_, err := load(t, gdb, file)
			if err == nil {
				t.Errorf("accepted: %s", c.file)
				continue
			}
			if !seed.IsRefusal(err) {
				t.Errorf("%s: not a refusal: %v", c.file, err)
			}
			if !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("%s:\n got %q\nwant %q", c.file, err, c.want)
			}
			if after := dump(t, gdb); after != before {
				t.Fatalf("refused file %s changed the database", c.file)
			}
		}
	})
}

// The demo seed file shipped with the repository loads.
func TestDemoSeedLoads(t *testing.T) {
	_, self, _, _ := runtime.Caller(0)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "..", "demo", "seed.json"))
	if err != nil {
		t.Fatal(err)
	}
	dialects(t, func(t *testing.T, gdb *gorm.DB) {
		mustLoad(t, gdb, string(data))
		mustLoad(t, gdb, string(data))
	})
	// The keys its README hands out are the file's.
	readme, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "..", "demo", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := seed.Parse(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range f.APIKeys {
		if !strings.Contains(string(readme), k.Key) {
			t.Errorf("demo/README.md does not list the key %s", k.Key)
		}
	}
}

// The options of the conversations API, the participants' copy of last_message_date, and ids:
// after a load, a row inserted without an id gets one above the file's, and above every id given
// before, deleted rows' included.
func TestSeedOptionsAndIDs(t *testing.T) {
	dialects(t, func(t *testing.T, gdb *gorm.DB) {
		mustLoad(t, gdb, strings.Replace(base, `"options": {"messagesPerPage": 20}`,
			`"options": {"messagesPerPage": 20, "discussionsPerPage": 7, "maxRecipients": 3, "messageMaxLength": 500}`, 1))
		var opts string
		gdb.Raw("SELECT discussions_per_page || ',' || max_recipients || ',' || message_max_length FROM forum_options").Scan(&opts)
		if opts != "7,3,500" {
			t.Fatalf("options %q", opts)
		}
		var dates []int64
		gdb.Raw("SELECT last_message_date FROM conversation_participants WHERE conversation_id = 10 ORDER BY user_id").Scan(&dates)
		if fmt.Sprint(dates) != "[1767225800 1767225800 1767225800]" {
			t.Fatalf("participants' last_message_date %v", dates)
		}
		var convID, msgID int64
		if err := gdb.Raw("INSERT INTO conversations (title, user_id) VALUES ('new', 1) RETURNING conversation_id").Row().Scan(&convID); err != nil {
			t.Fatal(err)
		}
		if err := gdb.Raw("INSERT INTO conversation_messages (conversation_id, user_id, message, message_date, position) VALUES (?, 1, 'm', 1, 1) RETURNING message_id", convID).Row().Scan(&msgID); err != nil {
			t.Fatal(err)
		}
		if convID <= 10 || msgID <= 102 {
			t.Fatalf("new ids %d, %d are not above the seeded 10, 102", convID, msgID)
		}
		// Deleted, then the file loaded again: the ids given before stay unused.
		if err := gdb.Exec("DELETE FROM conversations WHERE conversation_id = ?", convID).Error; err != nil {
			t.Fatal(err)
		}
		mustLoad(t, gdb, base)
		var convAgain, msgAgain int64
		if err := gdb.Raw("INSERT INTO conversations (title, user_id) VALUES ('again', 1) RETURNING conversation_id").Row().Scan(&convAgain); err != nil {
			t.Fatal(err)
		}
		if err := gdb.Raw("INSERT INTO conversation_messages (conversation_id, user_id, message, message_date, position) VALUES (?, 1, 'm', 1, 1) RETURNING message_id", convAgain).Row().Scan(&msgAgain); err != nil {
			t.Fatal(err)
		}
		if convAgain <= convID || msgAgain <= msgID {
			t.Fatalf("after a delete and a reload, new ids %d, %d; want above the deleted %d, %d", convAgain, msgAgain, convID, msgID)
		}
		for _, bad := range []string{`{"options": {"maxRecipients": 0}}`, `{"options": {"messageMaxLength": 65537}}`, `{"options": {"discussionsPerPage": 101}}`} {
			if _, err := load(t, gdb, bad); err == nil || !strings.Contains(err.Error(), "must be between") {
				t.Errorf("%s: %v", bad, err)
			}
		}
	})
}

// A file takes what the API can write: a title of 100 characters in any script (200 bytes in
// Cyrillic), a message as long as the largest messageMaxLength.
func TestSeedTakesWhatTheAPIWrites(t *testing.T) {
	title := strings.Repeat("ж", conversation.MaxTitleLength)
	message := strings.Repeat("я", conversation.MaxMessageLength)
	dialects(t, func(t *testing.T, gdb *gorm.DB) {
		mustLoad(t, gdb, base)
		mustLoad(t, gdb, `{"conversations": [{"conversation_id": 30, "title": "`+title+`", "user_id": 1, "recipients": [2],
			"messages": [{"message_id": 300, "user_id": 1, "message": "`+message+`", "message_date": 1}]}]}`)
		var got struct{ Title, Message string }
		gdb.Raw(`SELECT c.title, m.message FROM conversations c JOIN conversation_messages m ON m.conversation_id = c.conversation_id
WHERE c.conversation_id = 30`).Scan(&got)
		if got.Title != title || got.Message != message {
			t.Fatalf("stored title %d bytes, message %d bytes; want %d and %d", len(got.Title), len(got.Message), len(title), len(message))
		}
	})
}

// A file of more rows than one INSERT carries (store.InsertBatch) is written whole, and loading
// it again updates the rows it names in every batch.
func TestLoadManyRows(t *testing.T) {
	const n = 2*store.InsertBatch + 1
	file := func(name string) *seed.File {
		f := &seed.File{}
		c := seed.Conversation{ConversationID: 1, Title: "big", UserID: 1}
		for i := int64(1); i <= n; i++ {
			f.Users = append(f.Users, seed.User{UserID: i, Username: fmt.Sprintf("%s%d", name, i)})
			if i > 1 && i <= 600 {
				c.Recipients = append(c.Recipients, i)
			}
			date := 1_767_225_600 + i
			c.Messages = append(c.Messages, seed.Message{MessageID: i, UserID: 1 + i%600, Message: fmt.Sprintf("%s message %d", name, i), MessageDate: &date})
		}
		f.Conversations = []seed.Conversation{c}
		return f
	}
	dialects(t, func(t *testing.T, gdb *gorm.DB) {
		ctx := context.Background()
		count := func(q string) (n int64) {
			t.Helper()
			if err := gdb.Raw(q).Row().Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		for _, name := range []string{"first", "second"} {
			if _, err := seed.Load(ctx, gdb, file(name), now); err != nil {
				t.Fatalf("%s load: %v", name, err)
			}
			for q, want := range map[string]int64{
				"SELECT COUNT(*) FROM users":                                                     n,
				"SELECT COUNT(*) FROM users WHERE username LIKE '" + name + "%'":                 n,
				"SELECT COUNT(*) FROM conversation_participants WHERE conversation_id = 1":       600,
				"SELECT COUNT(*) FROM conversation_messages WHERE message LIKE '" + name + " %'": n,
				"SELECT message_count FROM conversations WHERE conversation_id = 1":              n,
				"SELECT COUNT(*) FROM conversation_messages WHERE position = message_id":         n,
				"SELECT last_message_id FROM conversations WHERE conversation_id = 1":            n,
			} {
				if got := count(q); got != want {
					t.Errorf("%s load: %s = %d, want %d", name, q, got, want)
				}
			}
		}
	})
}
