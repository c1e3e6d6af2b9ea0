package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// bareServerArg runs this program as the bare SSE server: `events bare-server ADDR`.
const bareServerArg = "bare-server"

// bareHub fans each published event out to the streams of its users; a stream that does not take
// its event at once (a full queue) loses it, which the client's check counts. It keeps how long
// each event took from its publication to its flush to a stream, as forum-svc's
// event_stream_delivery_seconds does from the commit.
type bareHub struct {
	mu   sync.Mutex
	subs map[int64]map[chan bareEvent]struct{}

	delaysMu sync.Mutex
	delays   []time.Duration
}

// bareEvent is an event's bytes and when it was published.
type bareEvent struct {
	b  []byte
	at time.Time
}

func (h *bareHub) delivered(at time.Time) {
	d := time.Since(at)
	h.delaysMu.Lock()
	h.delays = append(h.delays, d)
	h.delaysMu.Unlock()
}

// takeDelays returns the delays kept since the last call.
func (h *bareHub) takeDelays() []time.Duration {
	h.delaysMu.Lock()
	defer h.delaysMu.Unlock()
	d := h.delays
	h.delays = nil
	return d
}

func (h *bareHub) add(user int64, ch chan bareEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs[user] == nil {
		h.subs[user] = map[chan bareEvent]struct{}{}
	}
	h.subs[user][ch] = struct{}{}
}

func (h *bareHub) remove(user int64, ch chan bareEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs[user], ch)
}

func (h *bareHub) publish(users []int64, b []byte) {
	ev := bareEvent{b, time.Now()}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, u := range users {
		for ch := range h.subs[u] {
			select {
			case ch <- ev:
			default:
			}
		}
	}
}

// bareMessage is what the bare server sends and answers for a reply, shaped as forum-svc's
// ConversationMessage so that both write events of a like size.
type bareMessage struct {
	MessageID       int64  `json:"message_id"`
	ConversationID  int64  `json:"conversation_id"`
	UserID          int64  `json:"user_id"`
	Username        string `json:"username"`
	MessageDate     int64  `json:"message_date"`
	Message         string `json:"message"`
	MessageParsed   string `json:"message_parsed"`
	CanEdit         bool   `json:"can_edit"`
	CanReact        bool   `json:"can_react"`
	ReactionScore   int    `json:"reaction_score"`
	IsUnread        bool   `json:"is_unread"`
	ViewURL         string `json:"view_url"`
	AttachmentCount int    `json:"attachment_count"`
}

// serveBare serves GET /api/events (the user from Forum-Api-User, no authentication), POST
// /api/conversation-messages/ (publishes message_created to the conversation's two users, then
// answers) and GET /delays (the publication-to-flush delays since the last GET, in nanoseconds, a
// line each) on addr, with net/http and nothing else.
func serveBare(addr string) error {
	h := &bareHub{subs: map[int64]map[chan bareEvent]struct{}{}}
	var nextID atomic.Int64
	nextID.Store(10_000_000)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /api/events", func(w http.ResponseWriter, r *http.Request) {
		user, err := strconv.ParseInt(r.Header.Get("Forum-Api-User"), 10, 64)
		if err != nil || user <= 0 {
			http.Error(w, "Forum-Api-User", http.StatusBadRequest)
			return
		}
		ch := make(chan bareEvent, 16)
		h.add(user, ch)
		defer h.remove(user, ch)
		rc := http.NewResponseController(w)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-store")
		if _, err := w.Write([]byte("retry: 3000\n\nevent: unread_count\ndata: {\"me\":{\"conversations_unread\":0}}\n\n")); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
		for {
			select {
			case <-r.Context().Done():
				return
			case ev := <-ch:
				_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
				if _, err := w.Write(ev.b); err != nil || rc.Flush() != nil {
					return
				}
				h.delivered(ev.at)
			}
		}
	})
	mux.HandleFunc("GET /delays", func(w http.ResponseWriter, _ *http.Request) {
		var b []byte
		for _, d := range h.takeDelays() {
			b = strconv.AppendInt(b, int64(d), 10)
			b = append(b, '\n')
		}
		_, _ = w.Write(b)
	})
	mux.HandleFunc("POST /api/conversation-messages/", func(w http.ResponseWriter, r *http.Request) {
		conv, err := strconv.ParseInt(r.FormValue("conversation_id"), 10, 64)
		user, err2 := strconv.ParseInt(r.Header.Get("Forum-Api-User"), 10, 64)
		if err != nil || err2 != nil || conv <= 0 {
			http.Error(w, "conversation_id, Forum-Api-User", http.StatusBadRequest)
			return
		}
		text := r.FormValue("message")
		m := bareMessage{MessageID: nextID.Add(1), ConversationID: conv, UserID: user, Username: "user" + strconv.FormatInt(user, 10),
			MessageDate: time.Now().Unix(), Message: text, MessageParsed: text, CanEdit: true, CanReact: true,
			ViewURL: "https://forum.example/conversations/" + strconv.FormatInt(conv, 10)}
		body, _ := json.Marshal(map[string]bareMessage{"message": m})
		ev := append([]byte("id: "+strconv.FormatInt(m.MessageID, 10)+"\nevent: message_created\ndata: "), body...)
		ev = append(ev, "\n\n"...)
		p := participants(conv)
		h.publish(p[:], ev)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return srv.ListenAndServe()
}
