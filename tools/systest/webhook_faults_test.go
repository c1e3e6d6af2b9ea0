//go:build faults

package systest

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"forumstats.local/tools/stack"
)

// The webhooks' faults: receivers that hang, answer 500 for a while or close the connection,
// and a forum-svc killed (SIGKILL) in the middle of its deliveries. In each, every reply's
// delivery must arrive, under one webhook-id (a receiver that drops repeated webhook-ids sees
// each change once), each conversation's in order; repeated receipts of one webhook-id are
// at-least-once and reported.

// webhookFaultEnv is forum-svc's webhook configuration in these tests: short retries and
// timeouts so that a fault is over in seconds (the policy is the same as with the defaults).
var webhookFaultEnv = []string{"WEBHOOK_ALLOW_PRIVATE=true", "WEBHOOK_RETRY_MIN=200ms", "WEBHOOK_RETRY_MAX=2s",
	"WEBHOOK_TIMEOUT=1s", "WEBHOOK_POLL_INTERVAL=50ms", "LOG_LEVEL=warn"}

// hookStack is a seeded forum-svc's environment with a webhook (message.created) to a receiver.
type hookStack struct {
	env   []string
	fx    stack.ForumFixture
	recv  *stack.HookReceiver
	convs []int64
}

func newHookStack(t *testing.T) *hookStack {
	t.Helper()
	h := &hookStack{fx: stack.NewForumFixture(30, 20)}
	h.env = forumEnv(t, postgres(t), h.fx, webhookFaultEnv...)
	recv, err := stack.NewHookReceiver()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(recv.Close)
	h.recv = recv
	_, secret, err := stack.AddWebhook(context.Background(), bin(t, stack.Forum), h.env, recv.URL(), "message.created")
	if err != nil {
		t.Fatal(err)
	}
	if err := recv.SetSecret(secret); err != nil {
		t.Fatal(err)
	}
	h.convs = []int64{h.fx.Own}
	for i := range 5 {
		h.convs = append(h.convs, h.fx.ExtraOwn+int64(i))
	}
	return h
}

// reply writes n replies, reply i into conversation i modulo their number, from 4 clients at
// about rate a second, into written (message id → conversation).
func (h *hookStack) reply(t *testing.T, svc *stack.Service, n int, rate float64, written map[int64]int64) {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	errs := make(chan error, n)
	for c := range 4 {
		wg.Go(func() {
			for i := c; i < n; i += 4 {
				time.Sleep(time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
				conv := h.convs[i%len(h.convs)]
				id, err := stack.Reply(client, svc.URL, h.fx.UserKey, conv, "webhook fault reply "+strconv.Itoa(i))
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				written[id] = conv
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// retried counts the deliveries that needed more than one attempt.
func (h *hookStack) retried(t *testing.T) int64 {
	t.Helper()
	var url string
	for _, kv := range h.env {
		if v, ok := strings.CutPrefix(kv, "DATABASE_URL="); ok {
			url = v
		}
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int64
	if err := conn.QueryRow(context.Background(), `SELECT COUNT(*) FROM webhook_deliveries WHERE attempts > 0 AND state = 'pending'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// wait polls the receiver until every written message has arrived or timeout passes, then checks
// them: nothing lost, nothing made twice, each conversation in order.
func (h *hookStack) wait(t *testing.T, written map[int64]int64, timeout time.Duration) stack.HookCheck {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for stack.CheckHooks(written, h.recv.Received()).Unique < len(written) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // a repeated receipt in flight is counted too
	c := stack.CheckHooks(written, h.recv.Received())
	if !c.OK() {
		t.Errorf("deliveries after %s: %s", timeout, c)
	}
	if _, bad := h.recv.Refused(); bad > 0 {
		t.Errorf("%d deliveries with a bad signature", bad)
	}
	return c
}

// TestFaultWebhookReceivers: for each fault, the receiver misbehaves for 4 s while replies go on,
// then recovers; every delivery arrives once per webhook-id, in order per conversation.
func TestFaultWebhookReceivers(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode stack.HookMode
	}{
		{"hangs", stack.HookHang},
		{"answers 500", stack.Hook500},
		{"closes the connection", stack.HookClose},
		{"refuses connections", stack.HookDown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHookStack(t)
			svc := service(t, stack.Forum, h.env...)
			written := map[int64]int64{}
			h.reply(t, svc, 30, 30, written) // up: the streams are flowing
			if err := h.recv.SetMode(tc.mode); err != nil {
				t.Fatal(err)
			}
			h.reply(t, svc, 120, 30, written) // 4 s of the fault
			refused, _ := h.recv.Refused()
			if tc.mode != stack.HookDown && refused == 0 {
				t.Fatal("no attempt met the fault: the test proves nothing")
			}
			// A refused connection leaves no trace at the receiver: the outbox shows the retries.
			if retried := h.retried(t); retried == 0 {
				t.Fatal("no delivery was retried: the fault met no attempt, the test proves nothing")
			}
			if err := h.recv.SetMode(stack.HookUp); err != nil {
				t.Fatal(err)
			}
			back := time.Now()
			h.reply(t, svc, 30, 30, written)
			c := h.wait(t, written, 60*time.Second)
			report(t, "%s; attempts met by the fault: %d; all arrived %.1f s after the receiver recovered",
				c, refused, c.Last.Sub(back).Seconds())
		})
	}
}

// TestFaultWebhookSenderKilled kills forum-svc (SIGKILL) while its attempts hang at the receiver,
// then starts it again on the same database: the killed attempts' leases run out and every
// delivery arrives, those written before the kill and after.
func TestFaultWebhookSenderKilled(t *testing.T) {
	h := newHookStack(t)
	first, err := stack.StartService(stack.Forum, bin(t, stack.Forum), h.env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(first.Kill)
	written := map[int64]int64{}
	h.reply(t, first, 30, 30, written)
	if err := h.recv.SetMode(stack.HookHang); err != nil {
		t.Fatal(err)
	}
	h.reply(t, first, 30, 30, written)
	deadline := time.Now().Add(10 * time.Second)
	for refused, _ := h.recv.Refused(); refused == 0 && time.Now().Before(deadline); refused, _ = h.recv.Refused() {
		time.Sleep(20 * time.Millisecond)
	}
	first.Kill() // SIGKILL, mid-attempt: the hanging ones are leased to a dead process
	refused, _ := h.recv.Refused()
	if refused == 0 {
		t.Fatal("no attempt was in flight at the kill: the test proves nothing")
	}
	if err := h.recv.SetMode(stack.HookUp); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	second := service(t, stack.Forum, h.env...)
	h.reply(t, second, 60, 30, written)
	// The leases of the killed attempts last 2 × WEBHOOK_TIMEOUT + 30 s.
	c := h.wait(t, written, 90*time.Second)
	report(t, "%s; attempts hanging at the kill: %d; all arrived %.1f s after the restart", c, refused, c.Last.Sub(killed).Seconds())
}
