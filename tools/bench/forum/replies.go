package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"time"
)

// Replies: o.clients clients (-clients) post replies as user 3, all into one conversation (every
// reply waits for the conversation's row lock) or each into its own; pgbench runs the statements
// the service ran for a reply, in the same shapes, in alternating rounds.

// withHousekeeping adds to a request's own roles the statements any request may run but a
// script leaves out: auth's lookups on a cache miss, and pgx's check of a connection idle for a
// second before it is reused.
func withHousekeeping(roles []role) []role {
	return append(roles,
		role{name: "API key", marker: "FROM api_keys WHERE key_hash", cached: true},
		role{name: "acting user", marker: "SELECT 1 FROM users WHERE user_id", cached: true},
		role{name: "connection check", marker: "-- ping", cached: true},
		// What the service runs in the background, whatever the requests: the webhooks' worker's
		// poll for due deliveries, the sweeps of expired Idempotency-Key answers, attachment keys,
		// stream tickets and events (at start, then every IDEMPOTENCY_SWEEP_INTERVAL), and the
		// message_parsed backfill at start (a loaded machine may run them late, while the bench
		// captures a request's statements).
		role{name: "webhook poll", marker: "UPDATE webhook_deliveries SET lease_owner", cached: true},
		role{name: "sweep of answers", marker: "DELETE FROM idempotency_keys WHERE (api_key_hash", cached: true},
		role{name: "sweep of attachment keys", marker: "DELETE FROM attachment_keys WHERE attachment_key IN (", cached: true},
		role{name: "sweep of event tickets", marker: "DELETE FROM event_tickets WHERE expires_at", cached: true},
		role{name: "sweep of events", marker: "DELETE FROM event_log WHERE (user_id, event_id)", cached: true},
		role{name: "message_parsed backfill", marker: "(message_parsed IS NULL OR message_parsed = '')", cached: true})
}

// participantsRole is the read of the conversation's active participants with which a write
// records its change for the recorders (store.recordForParticipants); conv is its parameter.
func participantsRole(conv string) role {
	return role{name: "read the participants", marker: "SELECT user_id FROM conversation_participants WHERE conversation_id",
		params: []string{conv}}
}

// enqueueRole is the insert of a change's webhook deliveries (webhook.Enqueue), in the write's
// transaction: the conversation, the message, the actor, the event type, its date and the
// enqueue time in milliseconds (:ms) as the statement takes them. The bench's database has no
// webhooks, so it inserts nothing on either side.
func enqueueRole(conv, message, eventType string) role {
	t := sqlString(eventType)
	return role{name: "enqueue webhook deliveries", marker: "INSERT INTO webhook_deliveries",
		params: []string{conv, message, ":uid", t, ":date", ":ms", ":ms", conv, ":ms", t}}
}

// replyText is every reply's message.
const replyText = "A reply from the benchmark, about as long as a short chat message usually is."

// replyRoles are the statements forum-svc runs for POST /api/conversation-messages/ without an
// Idempotency-Key, in its order: the forum options (the message's length limit), then the
// transaction of store.Reply; auth's statements run on a cache miss only. The parameters follow
// the store's statements; bindParams fails when their number changes. pgbench's \set takes
// numbers only, so the text goes in as a literal, and so does its HTML (message_parsed), which for
// this plain text is the text itself.
func replyRoles() []role {
	text := sqlString(replyText)
	return withHousekeeping(append(append([]role{
		{name: "options", marker: "FROM forum_options"},
		{name: "begin", marker: "begin"},
		{name: "lock the conversation", marker: "FOR UPDATE OF c", params: []string{":conv", ":uid"}},
		{name: "insert the message", marker: "INSERT INTO conversation_messages", gset: true,
			params: []string{":conv", ":uid", text, text, ":date", ":conv"}},
		{name: "move the conversation", marker: "UPDATE conversations SET message_count",
			params: []string{":message_id", ":date", ":conv"}},
		// left_state: 1 (left) comes back as 0 (in); forum-svc's store.stateLeft and stateIn. Its
		// RETURNING lists the participants who see the reply (users 3 and 4), for the recorders.
		{name: "move the participants", marker: "UPDATE conversation_participants SET last_message_date",
			params: []string{":date", "1", "0", ":uid", ":date", ":date", ":date", ":date", ":conv"}},
		{name: "read the message", marker: "FROM conversation_messages m", params: []string{":uid", ":message_id"}},
		{name: "read the recipients", marker: "ORDER BY p.user_id", params: []string{":conv", ":uid"}},
		// The recorders run last, right before the commit, in the order the service adds them: the
		// webhooks' deliveries, then the event log (its counters stay locked briefly).
		enqueueRole(":conv", ":message_id", "message.created"),
	}, eventRoles("message_created", ":conv", ":message_id")...), role{name: "commit", marker: "commit"}))
}

// eventRoles are the event log's statements of a change seen by users 3 and 4 (the reply
// conversations' participants): their counters moved, then one row each, numbered from the counter
// the transaction just moved (the service reads it from the counter's RETURNING).
func eventRoles(eventType, conv, message string) []role {
	row := func(user int) []string {
		return []string{strconv.Itoa(user), fmt.Sprintf("(SELECT last_event_id FROM event_counters WHERE user_id = %d)", user),
			sqlString(eventType), conv, message, ":uid", ":date"}
	}
	return []role{
		{name: "count the events", marker: "INSERT INTO event_counters",
			params: []string{strconv.Itoa(replyUser), "1", strconv.Itoa(replyOther), "1"}},
		{name: "log the events", marker: "INSERT INTO \"event_log\"", params: append(row(replyUser), row(replyOther)...)},
	}
}

// replyScenario is one reply throughput measurement.
type replyScenario struct {
	name  string
	convs int // conversations the clients reply to: client i into replyConv + i % convs
	min   float64
	run   *throughput
}

// replyRequests posts replyText as client i's reply.
func replyRequests(addr, key string, firstConv, convs int) requestFunc {
	text := url.QueryEscape(replyText)
	return func(b []byte, i int, _ *rand.Rand) []byte {
		form := "conversation_id=" + strconv.Itoa(firstConv+i%convs) + "&message=" + text
		return postForm(b, addr, "/api/conversation-messages/", key, form)
	}
}

// measureReplies captures the reply statements, then runs each scenario's rounds.
func measureReplies(ctx context.Context, e *benchEnv, o options, scenarios []*replyScenario) (string, error) {
	capture := newLoad(e.svc.Addr, o.clients, replyRequests(e.svc.Addr, e.writeKey, e.replyConv, replyConvs))
	defer capture.close()
	statements, err := sampleStatements(ctx, e.dbURL, func() error {
		_, _, err := capture.run(2 * time.Second)
		return err
	})
	if err != nil {
		return "", err
	}
	roles := replyRoles()
	ordered, err := matchRoles(statements, roles)
	if err != nil {
		return "", err
	}
	var shown string
	for _, sc := range scenarios {
		conv := strconv.Itoa(e.replyConv)
		if sc.convs > 1 {
			conv += " + :client_id % " + strconv.Itoa(sc.convs)
		}
		script, err := rolesScript([]string{
			"conv " + conv, "uid " + strconv.Itoa(replyUser), "date " + strconv.FormatInt(time.Now().Unix(), 10),
			"ms " + strconv.FormatInt(time.Now().UnixMilli(), 10),
		}, ordered, roles)
		if err != nil {
			return "", err
		}
		shown = script
		pg, err := newPgbench(e.dbURL, script, o.clients)
		if err != nil {
			return "", err
		}
		sc.run = &throughput{name: sc.name, svc: e.svc,
			load: newLoad(e.svc.Addr, o.clients, replyRequests(e.svc.Addr, e.writeKey, e.replyConv, sc.convs))}
		err = measureThroughput([]*throughput{sc.run}, pg, o)
		sc.run.load.close()
		pg.cleanup()
		if err != nil {
			return "", err
		}
	}
	return shown, nil
}

// replyIntegrity checks the reply conversations after the runs (the service's replies and
// pgbench's, thousands of them under contention): in each, positions are 1..N without gaps or
// repeats, and message_count and last_message_id agree with the messages. It returns the
// conversations checked, the messages in them, and the first conversation that is wrong.
func replyIntegrity(ctx context.Context, e *benchEnv) (convs, messages int64, bad string, err error) {
	conn, err := sql.Open("pgx", e.dbURL)
	if err != nil {
		return 0, 0, "", err
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, `
SELECT c.conversation_id, c.message_count, COUNT(m.message_id), COUNT(DISTINCT m.position),
       COALESCE(MIN(m.position), 0), COALESCE(MAX(m.position), 0), c.last_message_id, COALESCE(MAX(m.message_id), 0)
FROM conversations c LEFT JOIN conversation_messages m ON m.conversation_id = c.conversation_id
WHERE c.conversation_id BETWEEN $1 AND $2
GROUP BY c.conversation_id, c.message_count, c.last_message_id
ORDER BY c.conversation_id`, e.replyConv, e.replyConv+replyConvs-1)
	if err != nil {
		return 0, 0, "", err
	}
	defer rows.Close()
	for rows.Next() {
		var id, count, n, distinct, lo, hi, last, maxID int64
		if err := rows.Scan(&id, &count, &n, &distinct, &lo, &hi, &last, &maxID); err != nil {
			return 0, 0, "", err
		}
		convs++
		messages += n
		if bad == "" && (count != n || distinct != n || lo != 1 || hi != n || last != maxID) {
			bad = fmt.Sprintf("conversation %d: message_count %d, %d messages, %d distinct positions %d..%d, last_message_id %d (newest %d)",
				id, count, n, distinct, lo, hi, last, maxID)
		}
	}
	return convs, messages, bad, rows.Err()
}
