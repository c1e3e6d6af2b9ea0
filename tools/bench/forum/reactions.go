package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Reactions: o.clients clients (-clients) of user 4 (reactUser) toggle a Like on the first
// messages of the reactConvs reply conversations (user 3's), client i on message i % reactConvs:
// each request gives the reaction or takes it back, whichever the stored state calls for. pgbench
// runs the statements the service ran for a reaction, read back from pg_stat_activity, and takes
// the same branch the store takes: it reads the stored reaction and inserts or deletes.

const (
	reactUser  = 4
	reactConvs = replyConvs
	reactionID = 1 // Like, score 1: every toggle moves reaction_score
)

// reactRoles are the statements forum-svc runs for POST conversation-messages/{id}/react without
// an Idempotency-Key, in store.React's order: the message locked for a participant (its
// conversation kept for the statements after it), the stored reaction, then the insert (or the
// replacement) or the delete, the score, the change recorded (the conversation's active
// participants, then the webhooks' deliveries and the event log's counters and rows), and commit.
func reactRoles() []role {
	return withHousekeeping(append(append([]role{
		{name: "begin", marker: "begin"},
		{name: "lock the message", marker: "FOR UPDATE OF m", params: []string{":uid", ":msg"}, gset: true},
		{name: "read the reaction", marker: "SELECT reaction_id FROM conversation_message_reactions", params: []string{":msg", ":uid"}},
		{name: "insert the reaction", marker: "INSERT INTO conversation_message_reactions",
			params: []string{":msg", ":uid", strconv.Itoa(reactionID), ":date"}},
		{name: "delete the reaction", marker: "DELETE FROM conversation_message_reactions", params: []string{":msg", ":uid"}},
		{name: "move the score", marker: "UPDATE conversation_messages SET reaction_score", params: []string{":delta", ":msg"}},
		participantsRole(":conversation_id"),
		enqueueRole(":conversation_id", ":msg", "reaction.changed"),
	}, eventRoles("reaction_changed", ":conversation_id", ":msg")...), role{name: "commit", marker: "commit"}))
}

// reactScript is the pgbench script of a toggle: the message locked (its user_id and
// conversation_id kept by \gset), the stored reaction read into reaction_id (\aset leaves the 0
// set before it when there is none), then the insert or the delete, as
// conversation.ChangeReaction decides for a Like, and the rest in the store's order.
func reactScript(statements []string, roles []role, firstMessage int64) (string, error) {
	bound := map[string]string{}
	var order []string
	for i, r := range roles {
		if r.cached {
			continue
		}
		s, err := bindParams(statements[i], r.params)
		if err != nil {
			return "", fmt.Errorf("statement %q: %w", r.name, err)
		}
		bound[r.name] = s
		order = append(order, r.name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\\set msg %d + :client_id %% %d\n\\set uid %d\n\\set date %d\n\\set ms %d\n\\set reaction_id 0\n",
		firstMessage, reactConvs, reactUser, time.Now().Unix(), time.Now().UnixMilli())
	for _, name := range order {
		switch name {
		case "lock the message":
			b.WriteString(bound[name] + " \\gset\n")
		case "read the reaction":
			b.WriteString(bound[name] + " \\aset\n")
		case "insert the reaction":
			fmt.Fprintf(&b, "\\if :reaction_id = %d\n\\set delta -1\n%s;\n\\else\n\\set delta 1\n%s;\n\\endif\n",
				reactionID, bound["delete the reaction"], bound[name])
		case "delete the reaction":
			// written with the insert, in its branch
		default:
			b.WriteString(bound[name] + ";\n")
		}
	}
	return b.String(), nil
}

// reactRequests toggles client i's Like on message firstMessage + i % reactConvs.
func reactRequests(addr, key string, firstMessage int64) requestFunc {
	return func(b []byte, i int, _ *rand.Rand) []byte {
		path := "/api/conversation-messages/" + strconv.FormatInt(firstMessage+int64(i%reactConvs), 10) + "/react"
		return postForm(b, addr, path, key, "reaction_id="+strconv.Itoa(reactionID))
	}
}

// measureReactions captures the statements of reactions, then runs the rounds; it returns the
// figures and the pgbench script.
func measureReactions(ctx context.Context, e *benchEnv, o options) (*throughput, string, error) {
	first := e.firstReplyMessage()
	capture := newLoad(e.svc.Addr, o.clients, reactRequests(e.svc.Addr, e.reactKey, first))
	defer capture.close()
	// Long enough for both branches (the insert and the delete) to be caught.
	statements, err := sampleStatements(ctx, e.dbURL, func() error {
		_, _, err := capture.run(2 * time.Second)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	roles := reactRoles()
	ordered, err := matchRoles(statements, roles)
	if err != nil {
		return nil, "", err
	}
	script, err := reactScript(ordered, roles, first)
	if err != nil {
		return nil, "", err
	}
	pg, err := newPgbench(e.dbURL, script, o.clients)
	if err != nil {
		return nil, "", err
	}
	defer pg.cleanup()
	t := &throughput{name: "reactions", svc: e.svc, load: newLoad(e.svc.Addr, o.clients, reactRequests(e.svc.Addr, e.reactKey, first))}
	defer t.load.close()
	if err := measureThroughput([]*throughput{t}, pg, o); err != nil {
		return nil, "", err
	}
	return t, script, nil
}

// reactIntegrity checks the reacted messages after the runs: each one's reaction_score must be
// the number of its reactions (all Likes, score 1). It returns the first that is wrong.
func reactIntegrity(ctx context.Context, e *benchEnv) (string, error) {
	conn, err := sql.Open("pgx", e.dbURL)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	first := e.firstReplyMessage()
	rows, err := conn.QueryContext(ctx, `
SELECT m.message_id, m.reaction_score, COUNT(r.message_id)
FROM conversation_messages m LEFT JOIN conversation_message_reactions r ON r.message_id = m.message_id
WHERE m.message_id BETWEEN $1 AND $2
GROUP BY m.message_id, m.reaction_score
ORDER BY m.message_id`, first, first+reactConvs-1)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var id, score, n int64
		if err := rows.Scan(&id, &score, &n); err != nil {
			return "", err
		}
		seen++
		if score != n {
			return fmt.Sprintf("message %d: reaction_score %d, %d reactions", id, score, n), rows.Err()
		}
	}
	if seen != reactConvs {
		return fmt.Sprintf("%d of the %d reacted messages found", seen, reactConvs), rows.Err()
	}
	return "", rows.Err()
}
