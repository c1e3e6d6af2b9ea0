package app

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/event"
	"forumstats.local/forum-svc/internal/seed"
	"forumstats.local/forum-svc/internal/store"
	"forumstats.local/forum-svc/internal/webhook"
)

const demoAliceKey = "demo-alice-user-key-0123456789abcdef"

// seedDemo loads the demo forum into gdb.
func seedDemo(t *testing.T, gdb *gorm.DB) {
	t.Helper()
	fh, err := os.Open("../../demo/seed.json")
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	f, err := seed.Parse(fh)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := seed.Load(context.Background(), gdb, f, time.Now()); err != nil {
		t.Fatal(err)
	}
}

// A reply through the API reaches a registered webhook, signed, with the message as its author
// sees it; the worker stops with the service.
func TestWebhookOfAReply(t *testing.T) {
	for _, dialect := range []string{"postgres", "sqlite"} {
		t.Run(dialect, func(t *testing.T) {
			gdb, _ := sweepDB(t, dialect)
			seedDemo(t, gdb)
			secret, err := webhook.NewSecret()
			if err != nil {
				t.Fatal(err)
			}
			key, _ := webhook.ParseSecret(secret)
			var mu sync.Mutex
			var bodies []string
			rcv := httptest.NewServer(webhook.Receiver(key, time.Now, func(_ string, body []byte, err error) {
				if err != nil {
					t.Errorf("signature: %v", err)
				}
				mu.Lock()
				bodies = append(bodies, string(body))
				mu.Unlock()
			}))
			defer rcv.Close()
			if _, err := webhook.Add(context.Background(), gdb, rcv.URL, []string{"message.created"}, secret, time.Now()); err != nil {
				t.Fatal(err)
			}
			cfg := Config{Webhooks: WebhookConfig{Concurrency: 2, RetryMin: 50 * time.Millisecond, RetryMax: time.Second,
				Window: time.Hour, Timeout: 2 * time.Second, PollInterval: 10 * time.Millisecond, AllowPrivate: true}}
			a, err := New(context.Background(), cfg, nil, WithDB(gdb))
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			stop := a.startWebhooks(context.Background())
			defer stop()

			r := httptest.NewRequest(http.MethodPost, "/api/conversation-messages",
				strings.NewReader(url.Values{"conversation_id": {"10"}, "message": {"[b]hello[/b] hook"}}.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			r.Header.Set("Forum-Api-Key", demoAliceKey)
			w := httptest.NewRecorder()
			a.Handler().ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				t.Fatalf("reply: %d %s", w.Code, w.Body)
			}
			var answer struct {
				Message struct {
					MessageID int64 `json:"message_id"`
				} `json:"message"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &answer); err != nil {
				t.Fatal(err)
			}
			eventually(t, "the delivery", func() bool { mu.Lock(); defer mu.Unlock(); return len(bodies) == 1 })
			var got struct {
				Type string `json:"type"`
				Data struct {
					ConversationID int64 `json:"conversation_id"`
					MessageID      int64 `json:"message_id"`
					ActorID        int64 `json:"actor_id"`
					Message        struct {
						MessageParsed string `json:"message_parsed"`
						CanEdit       bool   `json:"can_edit"`
						Conversation  struct {
							ConversationID int64 `json:"conversation_id"`
						} `json:"Conversation"`
					} `json:"message"`
				} `json:"data"`
			}
			mu.Lock()
			body := bodies[0]
			mu.Unlock()
			if err := json.Unmarshal([]byte(body), &got); err != nil {
				t.Fatal(err)
			}
			d := got.Data
			if got.Type != "message.created" || d.ConversationID != 10 || d.MessageID != answer.Message.MessageID || d.ActorID != 1 ||
				d.Message.MessageParsed != "<b>hello</b> hook" || !d.Message.CanEdit || d.Message.Conversation.ConversationID != 10 {
				t.Errorf("delivery %s", body)
			}
			stop()
			if webhooksRunning() {
				t.Error("the worker still runs after stop")
			}
		})
	}
}

// webhooksRunning reports whether a goroutine runs the webhook worker.
func webhooksRunning() bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), "webhook.(*Worker).Run")
}

// failing is a recorder that fails every write after the webhooks' recorder wrote its rows.
type failing struct{}

var errRecorder = errors.New("recorder failed")

func (failing) Record(*gorm.DB, []event.Change) error { return errRecorder }

// A write that rolls back after the webhooks' recorder wrote leaves no delivery.
func TestRolledBackWriteLeavesNoDelivery(t *testing.T) {
	for _, dialect := range []string{"postgres", "sqlite"} {
		t.Run(dialect, func(t *testing.T) {
			gdb, _ := sweepDB(t, dialect)
			seedDemo(t, gdb)
			if _, err := webhook.Add(context.Background(), gdb, "https://hooks.example/", []string{"*"}, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", time.Now()); err != nil {
				t.Fatal(err)
			}
			st, err := store.New(gdb)
			if err != nil {
				t.Fatal(err)
			}
			st.AddRecorder(webhook.Recorder{})
			st.AddRecorder(failing{})
			if err := st.MarkUnread(context.Background(), 10, 1); !errors.Is(err, errRecorder) {
				t.Fatalf("MarkUnread: %v", err)
			}
			var n int64
			if err := gdb.Raw(`SELECT COUNT(*) FROM webhook_deliveries`).Scan(&n).Error; err != nil || n != 0 {
				t.Fatalf("%d deliveries after a rolled-back write (%v)", n, err)
			}
			// Without the failing recorder the same write leaves its delivery.
			st2, _ := store.New(gdb)
			st2.AddRecorder(webhook.Recorder{})
			if err := st2.MarkUnread(context.Background(), 10, 1); err != nil {
				t.Fatal(err)
			}
			if err := gdb.Raw(`SELECT COUNT(*) FROM webhook_deliveries WHERE event_type = 'read_state.changed'`).Scan(&n).Error; err != nil || n != 1 {
				t.Fatalf("%d deliveries after the write (%v)", n, err)
			}
		})
	}
}
