package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"forumstats.local/tools/bench"
	"forumstats.local/tools/stack"
)

// The bench's data: one long conversation between users 1 and 2, read by user 1 with 20 messages
// a page (the schema's default page size); user 1's inbox of o.conversations conversations (the
// long one and short ones with user 2), listed 20 a page (the default discussionsPerPage); and
// replyConvs short conversations of users 3 and 4, into which user 3 replies.
const (
	convID     = 1
	userID     = 1
	perPage    = 20
	t0         = 1_767_225_600
	replyUser  = 3
	replyOther = 4 // the other participant of the reply conversations
	replyConvs = 16
	// The rest of the forum: a user's inbox is a small part of conversation_participants, as
	// on a real forum, which is what the planner's choice of the inbox index depends on.
	otherUsers = 1000
	otherConvs = 50_000
)

// benchEnv is forum-svc serving a filled database.
type benchEnv struct {
	svc      *stack.Service
	others   []*stack.Service // the -compare binaries, on the same database
	dbURL    string
	key      string // a user key of userID with conversation:read
	writeKey string // a user key of replyUser with conversation:read and conversation:write
	// attachKey is a user key of replyUser with attachment:read and attachment:write, reactKey
	// one of reactUser with conversation:write; attachSvc serves the attachment runs alone.
	attachKey, reactKey string
	attachSvc           *stack.Service
	messages            int // in the long conversation
	lastPage            int
	// listPages is the number of pages of user 1's conversation list; replyConv is the first of
	// the reply conversations (replyConv .. replyConv+replyConvs-1).
	listPages, replyConv int
	bench.Cleanups
}

// setup builds forum-svc, creates and fills the bench database through the service's commands and
// plain SQL, and starts the service on it.
func setup(ctx context.Context, o options) (_ *benchEnv, err error) {
	e := &benchEnv{lastPage: (o.messages + perPage - 1) / perPage, listPages: (o.conversations + perPage - 1) / perPage,
		replyConv: o.conversations + 1, messages: o.messages}
	defer e.CloseOnError(&err)
	bin, dbURL, env, err := e.Prepare(ctx, stack.Forum, o.Flags)
	if err != nil {
		return nil, err
	}
	e.dbURL = dbURL
	start := time.Now()
	if err := fill(ctx, e.dbURL, o.messages, o.conversations); err != nil {
		return nil, fmt.Errorf("fill: %w", err)
	}
	if e.key, err = createKey(ctx, bin, env, userID, "conversation:read"); err != nil {
		return nil, err
	}
	if e.writeKey, err = createKey(ctx, bin, env, replyUser, "conversation:read,conversation:write"); err != nil {
		return nil, err
	}
	if e.attachKey, err = createKey(ctx, bin, env, replyUser, "attachment:read,attachment:write"); err != nil {
		return nil, err
	}
	if e.reactKey, err = createKey(ctx, bin, env, reactUser, "conversation:write"); err != nil {
		return nil, err
	}
	fmt.Printf("database %s: 1 conversation of %d messages (%d pages of %d); user %d in %d conversations; "+
		"%d conversations to reply to; filled in %.1f s\n",
		o.DB, o.messages, e.lastPage, perPage, userID, o.conversations, replyConvs, time.Since(start).Seconds())

	if e.svc, err = e.StartService(stack.Forum, bin, append(env, serviceEnv...)); err != nil {
		return nil, err
	}
	if e.attachSvc, err = attachmentService(e, bin, env); err != nil {
		return nil, err
	}
	for _, path := range o.compare {
		svc, err := e.StartService(path, path, append(env, serviceEnv...))
		if err != nil {
			return nil, err
		}
		e.others = append(e.others, svc)
	}
	return e, nil
}

// firstReplyMessage is the id of the first message of the first reply conversation (fill gives
// conversation c's first message the id messages + c); user 3 wrote it.
func (e *benchEnv) firstReplyMessage() int64 { return int64(e.messages + e.replyConv) }

// serviceEnv is the service's configuration for the bench: the rate limit stays in the path but
// never refuses, and request logs (Info) are off, as a log shipper would take them off the
// service's hands; writing them into the bench's pipe would measure the bench's reading.
var serviceEnv = []string{"RATE_LIMIT_PER_MINUTE=1073741824", "RATE_LIMIT_BURST=1073741824", "LOG_LEVEL=warn"}

// fill writes the long conversation of n messages, user 1's other conversations (inbox in all),
// the reply conversations and everybody else's, in set-based statements, then moves the id
// sequences past the ids written (as forum-svc seed does), so that the service's new messages get
// the next ids. The long conversation's dates advance every third message, so ties on
// message_date are common; positions follow (message_date, message_id) order, which here is
// message_id order. The inbox's activity dates are a permutation of its conversations (7919 is
// prime to any inbox size the bench takes), so the list's order is not the ids' order; a third
// of it is unread and a tenth starred.
func fill(ctx context.Context, dbURL string, n, inbox int) error {
	conn, err := sql.Open("pgx", dbURL)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, q := range []string{
		`INSERT INTO users (user_id, username) VALUES (1, 'alice'), (2, 'bob'), (3, 'carol'), (4, 'dave')`,
		`INSERT INTO conversations (conversation_id, title, user_id) VALUES (1, 'A long conversation', 1)`,
		`INSERT INTO conversation_participants (conversation_id, user_id, last_read_date) VALUES (1, 1, 0), (1, 2, 0)`,
		// message_parsed is the HTML forum-svc stores with each message it writes; these texts have
		// no markup, so theirs is the text itself.
		fmt.Sprintf(`INSERT INTO conversation_messages (message_id, conversation_id, user_id, message, message_parsed, message_date, position)
		 SELECT g, 1, 1 + g %% 2, t, t, %d + g / 3, g
		 FROM generate_series(1, %d) AS g,
		      LATERAL (SELECT 'Message number ' || g || ' of the long conversation, with some text to carry.' AS t) AS text`, t0, n),
		`UPDATE conversations SET message_count = (SELECT COUNT(*) FROM conversation_messages WHERE conversation_id = 1),
		   first_message_id = 1, start_date = (SELECT message_date FROM conversation_messages WHERE message_id = 1),
		   last_message_id = (SELECT MAX(message_id) FROM conversation_messages),
		   last_message_date = (SELECT MAX(message_date) FROM conversation_messages)`,
		// The inbox: conversations 2..inbox with user 2, started by either, one message each.
		fmt.Sprintf(`INSERT INTO conversations (conversation_id, title, user_id, start_date, message_count,
		   first_message_id, last_message_id, last_message_date)
		 SELECT g, 'Conversation ' || g, 1 + g %% 2, d, 1, %[1]d + g, %[1]d + g, d
		 FROM generate_series(2, %[2]d) AS g, LATERAL (SELECT %[3]d + (g * 7919 %% %[2]d) * 60 AS d) AS dates`, n, inbox, t0),
		// The reply conversations: user 3 and user 4.
		fmt.Sprintf(`INSERT INTO conversations (conversation_id, title, user_id, start_date, message_count,
		   first_message_id, last_message_id, last_message_date)
		 SELECT g, 'Replies ' || g, 3, %[3]d, 1, %[1]d + g, %[1]d + g, %[3]d
		 FROM generate_series(%[2]d + 1, %[2]d + %[4]d) AS g`, n, inbox, t0, replyConvs),
		// Everybody else's: users 5..1004, two a conversation.
		fmt.Sprintf(`INSERT INTO users (user_id, username) SELECT g, 'user' || g FROM generate_series(5, %d) AS g`, 4+otherUsers),
		fmt.Sprintf(`INSERT INTO conversations (conversation_id, title, user_id, start_date, message_count,
		   first_message_id, last_message_id, last_message_date)
		 SELECT %[1]d + g, 'Conversation ' || g, 5 + g %% %[4]d, %[3]d + g, 1, %[5]d + g, %[5]d + g, %[3]d + g
		 FROM generate_series(1, %[2]d) AS g`, inbox+replyConvs, otherConvs, t0, otherUsers, n+inbox+replyConvs),
		fmt.Sprintf(`INSERT INTO conversation_participants (conversation_id, user_id, last_read_date)
		 SELECT c.conversation_id, u, c.last_message_date
		 FROM conversations c, LATERAL (SELECT c.conversation_id - %[1]d AS g) AS k,
		      LATERAL (VALUES (c.user_id), (5 + (k.g %% %[2]d + 1 + k.g / %[2]d %% %[3]d) %% %[2]d)) AS p (u)
		 WHERE c.conversation_id > %[1]d`, inbox+replyConvs, otherUsers, otherUsers-1),
		fmt.Sprintf(`INSERT INTO conversation_messages (message_id, conversation_id, user_id, message, message_parsed, message_date, position)
		 SELECT %d + conversation_id, conversation_id, user_id, t, t, start_date, 1
		 FROM conversations, LATERAL (SELECT 'The first message of ' || title AS t) AS text WHERE conversation_id > 1`, n),
		fmt.Sprintf(`INSERT INTO conversation_participants (conversation_id, user_id, last_read_date, starred)
		 SELECT c.conversation_id, u.user_id,
		        CASE WHEN c.conversation_id %% 3 = 0 AND u.user_id <> c.user_id THEN 0 ELSE c.last_message_date END,
		        c.conversation_id %% 10 = 0
		 FROM conversations c, (VALUES (1), (2), (3), (4)) AS u (user_id)
		 WHERE c.conversation_id BETWEEN 2 AND %d AND (u.user_id IN (1, 2)) = (c.user_id IN (1, 2))`, inbox+replyConvs),
		`UPDATE conversation_participants p SET last_message_date = c.last_message_date
		 FROM conversations c WHERE c.conversation_id = p.conversation_id`,
		`SELECT setval(pg_get_serial_sequence('conversations', 'conversation_id'), (SELECT MAX(conversation_id) FROM conversations))`,
		`SELECT setval(pg_get_serial_sequence('conversation_messages', 'message_id'), (SELECT MAX(message_id) FROM conversation_messages))`,
		`VACUUM ANALYZE`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// createKey creates a user key of user with scopes (comma-separated, as --scopes takes them) with
// `forum-svc apikey create`, which prints it on stdout.
func createKey(ctx context.Context, bin string, env []string, user int, scopes string) (string, error) {
	stdout, stderr, err := stack.RunSplit(ctx, time.Minute, bin, env, "apikey", "create",
		"--type", "user", "--user-id", strconv.Itoa(user), "--scopes", scopes)
	if err != nil {
		return "", fmt.Errorf("forum-svc apikey create: %w\n%s", err, stderr)
	}
	key := strings.TrimSpace(stdout)
	if key == "" || strings.ContainsAny(key, " \n") {
		return "", fmt.Errorf("forum-svc apikey create printed %q", stdout)
	}
	return key, nil
}

// pageStatement is the message-page statement as the service sent it to PostgreSQL, read from
// pg_stat_activity while the service serves a few hundred pages (sampleStatements): the one
// statement on conversation_messages among those, the service's background statements left out
// (withHousekeeping), since the pool hands the page's connection to them between two polls.
// pgbench runs exactly that text.
func pageStatement(ctx context.Context, e *benchEnv, path string) (string, error) {
	client := &http.Client{}
	statements, err := sampleStatements(ctx, e.dbURL, func() error {
		for i := range 300 {
			if _, err := get(client, e.svc.URL+path+strconv.Itoa(1+i*7919%e.lastPage), e.key); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	var found []string
	for _, q := range statements {
		if !strings.Contains(q, "conversation_messages") || isHousekeeping(q) {
			continue
		}
		found = append(found, q)
	}
	if len(found) != 1 {
		return "", errors.New("expected one message-page statement in pg_stat_activity, found: " + strings.Join(found, " | "))
	}
	return found[0], nil
}

// isHousekeeping tells whether q is one of the statements withHousekeeping knows.
func isHousekeeping(q string) bool {
	folded := strings.Join(strings.Fields(q), " ")
	for _, r := range withHousekeeping(nil) {
		if strings.Contains(folded, r.marker) {
			return true
		}
	}
	return false
}
