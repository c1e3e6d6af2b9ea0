package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"forumstats.local/tools/bench"
	"forumstats.local/tools/stack"
)

// The bench's data: one conversation between users 1 and 2, read by user 1 with 20 messages a
// page (the schema's default page size).
const (
	convID  = 1
	userID  = 1
	perPage = 20
	t0      = 1_767_225_600
)

// benchEnv is forum-svc serving a filled database.
type benchEnv struct {
	svc      *stack.Service
	others   []*stack.Service // the -compare binaries, on the same database
	dbURL    string
	key      string // a user key of userID with conversation:read
	lastPage int
	bench.Cleanups
}

// setup builds forum-svc, creates and fills the bench database through the service's commands and
// plain SQL, and starts the service on it.
func setup(ctx context.Context, o options) (_ *benchEnv, err error) {
	e := &benchEnv{lastPage: (o.messages + perPage - 1) / perPage}
	defer e.CloseOnError(&err)
	bin, dbURL, env, err := e.Prepare(ctx, stack.Forum, o.Flags)
	if err != nil {
		return nil, err
	}
	e.dbURL = dbURL
	start := time.Now()
	if err := fill(ctx, e.dbURL, o.messages); err != nil {
		return nil, fmt.Errorf("fill: %w", err)
	}
	if e.key, err = createKey(ctx, bin, env); err != nil {
		return nil, err
	}
	fmt.Printf("database %s: 1 conversation of %d messages (%d pages of %d), filled in %.1f s\n",
		o.DB, o.messages, e.lastPage, perPage, time.Since(start).Seconds())

	if e.svc, err = e.StartService(stack.Forum, bin, append(env, serviceEnv...)); err != nil {
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

// serviceEnv is the service's configuration for the bench: the rate limit stays in the path but
// never refuses, and request logs (Info) are off, as a log shipper would take them off the
// service's hands; writing them into the bench's pipe would measure the bench's reading.
var serviceEnv = []string{"RATE_LIMIT_PER_MINUTE=1073741824", "RATE_LIMIT_BURST=1073741824", "LOG_LEVEL=warn"}

// fill writes two users, the conversation, its participants and n messages in set-based
// statements. Dates advance every third message, so ties on message_date are common; positions
// follow (message_date, message_id) order, which here is message_id order.
func fill(ctx context.Context, dbURL string, n int) error {
	conn, err := sql.Open("pgx", dbURL)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, q := range []string{
		`INSERT INTO users (user_id, username) VALUES (1, 'alice'), (2, 'bob')`,
		`INSERT INTO conversations (conversation_id, title, user_id) VALUES (1, 'A long conversation', 1)`,
		`INSERT INTO conversation_participants (conversation_id, user_id, last_read_date) VALUES (1, 1, 0), (1, 2, 0)`,
		fmt.Sprintf(`INSERT INTO conversation_messages (message_id, conversation_id, user_id, message, message_date, position)
		 SELECT g, 1, 1 + g %% 2, 'Message number ' || g || ' of the long conversation, with some text to carry.',
		        %d + g / 3, g
		 FROM generate_series(1, %d) AS g`, t0, n),
		`UPDATE conversations SET message_count = (SELECT COUNT(*) FROM conversation_messages WHERE conversation_id = 1),
		   first_message_id = 1, start_date = (SELECT message_date FROM conversation_messages WHERE message_id = 1),
		   last_message_id = (SELECT MAX(message_id) FROM conversation_messages),
		   last_message_date = (SELECT MAX(message_date) FROM conversation_messages)`,
		`ANALYZE`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// createKey creates the reader's key with `forum-svc apikey create`, which prints it on stdout.
func createKey(ctx context.Context, bin string, env []string) (string, error) {
	stdout, stderr, err := stack.RunSplit(ctx, time.Minute, bin, env, "apikey", "create",
		"--type", "user", "--user-id", strconv.Itoa(userID), "--scopes", "conversation:read")
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
// pg_stat_activity once the service has served pages: the last statement of each of its
// connections that reads messages. pgbench runs exactly that text.
func pageStatement(ctx context.Context, dbURL string) (string, error) {
	conn, err := sql.Open("pgx", dbURL)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, `
SELECT DISTINCT query, (SELECT setting::int FROM pg_settings WHERE name = 'track_activity_query_size')
FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE '%conversation_messages%'`)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var found []string
	for rows.Next() {
		var q string
		var limit int
		if err := rows.Scan(&q, &limit); err != nil {
			return "", err
		}
		if len(q) >= limit-1 {
			return "", fmt.Errorf("the page statement is cut at track_activity_query_size (%d bytes): raise it", limit)
		}
		found = append(found, q)
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	if len(found) != 1 {
		return "", errors.New("expected one message-page statement in pg_stat_activity, found: " + strings.Join(found, " | "))
	}
	return found[0], nil
}
