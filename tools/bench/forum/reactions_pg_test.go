package main

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"forumstats.local/shared/testutil"
)

// The reaction script toggles as the store does: run by pgbench, each client gives and takes back
// its Like in turn, so that every message's reaction_score stays the number of its reactions,
// 0 or 1. A script that always inserted (or never read the stored reaction) would count past 1;
// one that deleted what is not there would leave the score negative.
func TestReactScriptToggles(t *testing.T) {
	ctx := context.Background()
	dbURL := testutil.NewDatabase(t)
	conn, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const first = 100
	for _, q := range []string{
		`CREATE TABLE conversation_messages (message_id BIGINT PRIMARY KEY, conversation_id BIGINT NOT NULL, user_id BIGINT NOT NULL,
		   reaction_score BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE conversation_participants (conversation_id BIGINT, user_id BIGINT, left_state INT NOT NULL DEFAULT 0,
		   PRIMARY KEY (conversation_id, user_id))`,
		`CREATE TABLE webhook_deliveries (webhook_id BIGINT, conversation_id BIGINT, message_id BIGINT, actor_id BIGINT,
		   event_type TEXT, event_at BIGINT, created_at BIGINT, next_attempt_at BIGINT)`,
		`CREATE TABLE event_counters (user_id BIGINT PRIMARY KEY, last_event_id BIGINT NOT NULL)`,
		`CREATE TABLE event_log (user_id BIGINT, event_id BIGINT, event_type TEXT, conversation_id BIGINT, message_id BIGINT,
		   actor_id BIGINT, created_at BIGINT, PRIMARY KEY (user_id, event_id))`,
		`CREATE TABLE conversation_message_reactions (message_id BIGINT, user_id BIGINT, reaction_id BIGINT NOT NULL,
		   reaction_date BIGINT NOT NULL, PRIMARY KEY (message_id, user_id))`,
		`INSERT INTO conversation_messages (message_id, conversation_id, user_id) SELECT 100 + g, g, 3 FROM generate_series(0, 15) AS g`,
		`INSERT INTO conversation_participants (conversation_id, user_id) SELECT g, u FROM generate_series(0, 15) AS g, (VALUES (3), (4)) AS v (u)`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// The statements as forum-svc's store sends them (GORM's $n placeholders), and the
	// housekeeping the script leaves out.
	captured := []string{
		"begin",
		`SELECT m.user_id, m.conversation_id FROM conversation_messages m JOIN conversation_participants p ON p.conversation_id = m.conversation_id AND p.user_id = $1 AND p.left_state = 0 WHERE m.message_id = $2 FOR UPDATE OF m`,
		`SELECT reaction_id FROM conversation_message_reactions WHERE message_id = $1 AND user_id = $2`,
		`INSERT INTO conversation_message_reactions (message_id, user_id, reaction_id, reaction_date) VALUES ($1, $2, $3, $4) ON CONFLICT (message_id, user_id) DO UPDATE SET reaction_id = excluded.reaction_id, reaction_date = excluded.reaction_date`,
		`DELETE FROM conversation_message_reactions WHERE message_id = $1 AND user_id = $2`,
		`UPDATE conversation_messages SET reaction_score = reaction_score + $1 WHERE message_id = $2`,
		`SELECT user_id FROM conversation_participants WHERE conversation_id = $1 AND left_state = 0 ORDER BY user_id`,
		`INSERT INTO webhook_deliveries (conversation_id, message_id, actor_id, event_type, event_at, created_at, next_attempt_at, webhook_id)
		 SELECT CAST($1 AS BIGINT), CAST($2 AS BIGINT), CAST($3 AS BIGINT), CAST($4 AS TEXT), CAST($5 AS BIGINT), CAST($6 AS BIGINT),
		   GREATEST(CAST($7 AS BIGINT), CAST($9 AS BIGINT)), 0 WHERE CAST($8 AS BIGINT) > 0 AND CAST($10 AS TEXT) = 'none'`,
		`INSERT INTO event_counters (user_id, last_event_id) VALUES ($1, $2), ($3, $4) ON CONFLICT (user_id) DO UPDATE SET last_event_id = event_counters.last_event_id + excluded.last_event_id RETURNING user_id, last_event_id`,
		`INSERT INTO "event_log" ("user_id","event_id","event_type","conversation_id","message_id","actor_id","created_at") VALUES ($1,$2,$3,$4,$5,$6,$7),($8,$9,$10,$11,$12,$13,$14)`,
		"commit",
		`SELECT key_hash FROM api_keys WHERE key_hash = $1`,
	}
	roles := reactRoles()
	ordered, err := matchRoles(captured, roles)
	if err != nil {
		t.Fatal(err)
	}
	script, err := reactScript(ordered, roles, first)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(script, `\aset`) || !strings.Contains(script, `\if :reaction_id = 1`) {
		t.Fatalf("script:\n%s", script)
	}
	pg, err := newPgbench(dbURL, script, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.cleanup()
	tps, err := pg.run(time.Second)
	if err != nil || tps <= 0 {
		t.Fatalf("pgbench: %v tps, %v\n%s", tps, err, script)
	}
	e := &benchEnv{dbURL: dbURL, messages: first, replyConv: 0}
	if bad, err := reactIntegrity(ctx, e); err != nil || bad != "" {
		t.Fatalf("after pgbench: %q, %v", bad, err)
	}
	// Every toggle logged one event for each participant, numbered without gaps.
	var events, counted, gaps int
	if err := conn.QueryRowContext(ctx, `SELECT COUNT(*), (SELECT SUM(last_event_id) FROM event_counters),
	  COUNT(*) - COUNT(DISTINCT (user_id, event_id)) FROM event_log WHERE event_type = 'reaction_changed'`).Scan(&events, &counted, &gaps); err != nil ||
		events == 0 || events != counted || gaps != 0 {
		t.Fatalf("event log: %d rows, counters at %d, %d repeated (%v)", events, counted, gaps, err)
	}
	var wrong int
	if err := conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM conversation_messages WHERE reaction_score NOT IN (0, 1)`).Scan(&wrong); err != nil || wrong != 0 {
		t.Fatalf("%d messages with a score other than 0 or 1 (%v)", wrong, err)
	}

	// A statement with a parameter more than the bench knows fails the script.
	changed := append([]string(nil), ordered...)
	changed[5] = `UPDATE conversation_messages SET reaction_score = reaction_score + $1 WHERE message_id = $2 AND $3 = 0`
	if _, err := reactScript(changed, roles, first); err == nil {
		t.Fatal("a statement with a third parameter: no error")
	}
}
