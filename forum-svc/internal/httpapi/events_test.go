package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/forum-svc/internal/event"
	"forumstats.local/forum-svc/internal/httpapi"
)

// sseEvent is one server-sent event as a client reads it.
type sseEvent struct {
	id, typ, data string
}

// openStream opens GET target on srv with the headers and returns the response and its events.
func openStream(t *testing.T, srv *httptest.Server, target string, headers ...string) (*http.Response, <-chan sseEvent) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+target, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ":")
		req.Header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	events := make(chan sseEvent, 100)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		var e sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if e.typ != "" {
					events <- e
				}
				e = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				e.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				e.typ = line[7:]
			case strings.HasPrefix(line, "data: "):
				e.data = line[6:]
			}
		}
	}()
	return resp, events
}

// next returns the next event of the stream other than unread_count, within 10 s.
func next(t *testing.T, events <-chan sseEvent, skipUnread bool) sseEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatal("the stream ended")
			}
			if skipUnread && e.typ == "unread_count" {
				continue
			}
			return e
		case <-timeout:
			t.Fatal("no event within 10 s")
		}
	}
}

func TestEventStream(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			opts := envOptions{}
			if dialect == "sqlite" {
				opts.databaseURL = "sqlite:" + t.TempDir() + "/forum.db"
			}
			e := newEnv(t, opts)
			srv := httptest.NewServer(e.h)
			t.Cleanup(srv.Close)
			reply := func(text string) int64 {
				t.Helper()
				r := e.post("/api/conversation-messages", url.Values{"conversation_id": {"10"}, "message": {text}}, key(keyAlice))
				if r.status != http.StatusOK {
					t.Fatalf("reply: %d %s", r.status, r.body)
				}
				n, err := r.json(t)["message"].(map[string]any)["message_id"].(json.Number).Int64()
				if err != nil {
					t.Fatal(err)
				}
				return n
			}

			resp, events := openStream(t, srv, "/api/events", key(keyBob))
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
				t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			first := next(t, events, false)
			var me struct {
				Me struct {
					ConversationsUnread int64 `json:"conversations_unread"`
				} `json:"me"`
			}
			if first.typ != "unread_count" || json.Unmarshal([]byte(first.data), &me) != nil {
				t.Fatalf("first event %+v, want unread_count", first)
			}
			id := reply("live one")
			got := next(t, events, true)
			var msg struct {
				Message struct {
					MessageID int64  `json:"message_id"`
					Message   string `json:"message"`
					IsUnread  bool   `json:"is_unread"`
				} `json:"message"`
			}
			if got.typ != "message_created" || json.Unmarshal([]byte(got.data), &msg) != nil || msg.Message.MessageID != id ||
				msg.Message.Message != "live one" || !msg.Message.IsUnread {
				t.Fatalf("after a reply: %+v", got)
			}
			firstID, _ := strconv.ParseInt(got.id, 10, 64)
			if firstID < 1 {
				t.Fatalf("event id %q", got.id)
			}

			// Resume after the first: nothing is repeated, the next reply comes live.
			_, resumed := openStream(t, srv, "/api/events", key(keyBob), "Last-Event-ID: "+got.id)
			id2 := reply("second")
			got2 := next(t, resumed, true)
			if got2.typ != "message_created" || got2.id != strconv.FormatInt(firstID+1, 10) || !strings.Contains(got2.data, `"message_id":`+strconv.FormatInt(id2, 10)) {
				t.Fatalf("resumed stream: %+v, want message %d with id %d", got2, id2, firstID+1)
			}
			// Resume from before both: both replayed, in order.
			_, replay := openStream(t, srv, "/api/events?last_event_id="+strconv.FormatInt(firstID-1, 10), key(keyBob))
			for _, want := range []int64{firstID, firstID + 1} {
				if e := next(t, replay, true); e.id != strconv.FormatInt(want, 10) || e.typ != "message_created" {
					t.Fatalf("replay: %+v, want id %d", e, want)
				}
			}
			// An id the user never had: resync, with the last id.
			_, lost := openStream(t, srv, "/api/events", key(keyBob), "Last-Event-ID: 999999")
			if e := next(t, lost, true); e.typ != "resync" || e.id != strconv.FormatInt(firstID+1, 10) {
				t.Fatalf("resume from a future id: %+v", e)
			}

			// A ticket opens one stream, once.
			tr := e.post("/api/events/ticket", url.Values{}, key(keyBob))
			if tr.status != http.StatusOK {
				t.Fatalf("ticket: %d %s", tr.status, tr.body)
			}
			ticket := tr.json(t)["ticket"].(string)
			_, byTicket := openStream(t, srv, "/api/events?ticket="+url.QueryEscape(ticket))
			if e := next(t, byTicket, false); e.typ != "unread_count" {
				t.Fatalf("stream by ticket: %+v", e)
			}
			wantError(t, e.get("/api/events?ticket="+url.QueryEscape(ticket)), http.StatusUnauthorized, httpapi.CodeAPIKeyNotFound, nil)
			wantError(t, e.get("/api/events?ticket=nope"), http.StatusUnauthorized, httpapi.CodeAPIKeyNotFound, nil)
			wantError(t, e.get("/api/events"), http.StatusBadRequest, httpapi.CodeNoAPIKey, nil)
			wantError(t, e.get("/api/events", key(keyBob), "Last-Event-ID: -1"), http.StatusBadRequest, httpapi.CodeInvalidLastEventID, nil)
			wantError(t, e.get("/api/events", key(keyAliceWrite)), http.StatusForbidden, httpapi.CodeMissingScope, map[string]any{"scope": "conversation:read"})
		})
	}
}

// Leaving a conversation (ignoring it) stops its events: the leave reaches the user's other
// streams, and later changes of the conversation do not.
func TestEventStreamLeave(t *testing.T) {
	e := newEnv(t, envOptions{databaseURL: "sqlite:" + t.TempDir() + "/forum.db"})
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	_, events := openStream(t, srv, "/api/events", key(keyBob))
	next(t, events, false)
	if r := e.raw(http.MethodDelete, "/api/conversations/10?ignore=1", "", "", key(keyBob)); r.status != http.StatusOK {
		t.Fatalf("leave: %d %s", r.status, r.body)
	}
	if got := next(t, events, true); got.typ != "participant_left" || got.data != `{"conversation_id":10}` {
		t.Fatalf("after the leave: %+v", got)
	}
	for _, text := range []string{"after bob left", "again"} {
		if r := e.post("/api/conversation-messages", url.Values{"conversation_id": {"10"}, "message": {text}}, key(keyAlice)); r.status != http.StatusOK {
			t.Fatalf("reply: %d %s", r.status, r.body)
		}
	}
	// A change bob sees comes next, none of conversation 10's before it.
	if r := e.post("/api/conversation-messages", url.Values{"conversation_id": {"12"}, "message": {"in 12"}}, key(keyAlice)); r.status != http.StatusOK {
		t.Fatalf("reply: %d %s", r.status, r.body)
	}
	if got := next(t, events, true); got.typ != "message_created" || !strings.Contains(got.data, `"message":"in 12"`) {
		t.Fatalf("after the leave, the next event is %+v", got)
	}
}

// The stream ends once its key is deactivated and the key cache (30 s) has let it go.
func TestEventStreamEndsWithItsKey(t *testing.T) {
	e := newEnv(t, envOptions{databaseURL: "sqlite:" + t.TempDir() + "/forum.db",
		stream: event.StreamOptions{CheckEvery: 20 * time.Millisecond}})
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	_, events := openStream(t, srv, "/api/events", key(keyBob))
	next(t, events, false)
	if err := e.gdb.Exec(`UPDATE api_keys SET active = ? WHERE key_hash = ?`, false, auth.Hash(keyBob)).Error; err != nil {
		t.Fatal(err)
	}
	// Within the cache's life the stream goes on.
	select {
	case _, ok := <-events:
		if !ok {
			t.Fatal("the stream ended before the key cache let the key go")
		}
	case <-time.After(200 * time.Millisecond):
	}
	e.clock.Add(31 * time.Second)
	deadline := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-events:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the stream of a deactivated key did not end")
		}
	}
}

// An allowed origin's preflight is answered, and its requests carry Access-Control-Allow-Origin;
// any other origin gets no CORS header, and its preflight stays 405.
func TestEventStreamCORS(t *testing.T) {
	const origin = "https://app.example"
	e := newEnv(t, envOptions{databaseURL: "sqlite:" + t.TempDir() + "/forum.db", corsOrigins: []string{origin}})
	pre := e.raw(http.MethodOptions, "/api/events/ticket", "", "", "Origin: "+origin, "Access-Control-Request-Method: POST",
		"Access-Control-Request-Headers: forum-api-key")
	if pre.status != http.StatusNoContent || pre.header.Get("Access-Control-Allow-Origin") != origin ||
		!strings.Contains(pre.header.Get("Access-Control-Allow-Headers"), "Forum-Api-Key") {
		t.Fatalf("preflight of an allowed origin: %d %v", pre.status, pre.header)
	}
	r := e.raw(http.MethodPost, "/api/events/ticket", "", "", key(keyBob), "Origin: "+origin)
	if r.status != http.StatusOK || r.header.Get("Access-Control-Allow-Origin") != origin {
		t.Fatalf("ticket for an allowed origin: %d %v", r.status, r.header)
	}
	other := e.raw(http.MethodOptions, "/api/events/ticket", "", "", "Origin: https://evil.example", "Access-Control-Request-Method: POST")
	wantError(t, other, http.StatusMethodNotAllowed, httpapi.CodeMethodNotAllowed, nil)
	if other.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("another origin got %v", other.header)
	}
	if r := e.raw(http.MethodPost, "/api/events/ticket", "", "", key(keyBob), "Origin: https://evil.example"); r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("another origin's ticket answer: %v", r.header)
	}
}

// The streams of one user get each event as their own key sees its object: a key with
// attachment:write sees can_upload_attachment, one without does not, though the write's events are
// rendered once for each distinct view, not once a stream.
func TestEventStreamViewPerKey(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		attachKey := "alice-attach-key-0123456789abcdef0123"
		if err := e.gdb.Exec(`INSERT INTO api_keys (key_hash, key_type, user_id, scopes, active, created_at)
VALUES (?, 'user', 1, 'conversation:read conversation:write attachment:write', TRUE, 1)`, auth.Hash(attachKey)).Error; err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(e.h)
		t.Cleanup(srv.Close)
		keys := []string{keyAlice, attachKey, keyAlice}
		var streams []<-chan sseEvent
		for _, k := range keys {
			_, events := openStream(t, srv, "/api/events", key(k))
			if first := next(t, events, false); first.typ != "unread_count" {
				t.Fatalf("first event %+v", first)
			}
			streams = append(streams, events)
		}
		if r := e.post("/api/conversation-messages", url.Values{"conversation_id": {"10"}, "message": {"hi"}}, key(keyBob)); r.status != http.StatusOK {
			t.Fatalf("reply: %d %s", r.status, r.body)
		}
		for i, events := range streams {
			got := next(t, events, true)
			var msg struct {
				Message struct {
					Conversation struct {
						CanUploadAttachment bool `json:"can_upload_attachment"`
					} `json:"conversation"`
				} `json:"message"`
			}
			if got.typ != "message_created" || json.Unmarshal([]byte(got.data), &msg) != nil {
				t.Fatalf("stream %d: %+v", i, got)
			}
			if want := keys[i] == attachKey; msg.Message.Conversation.CanUploadAttachment != want {
				t.Fatalf("stream %d (key %s): can_upload_attachment %v, want %v", i, keys[i], !want, want)
			}
		}
	})
}
