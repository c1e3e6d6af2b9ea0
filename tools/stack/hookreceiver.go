package stack

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// HookReceiver is a webhook target for the benchmarks and the fault tests: it checks each
// delivery's Standard Webhooks signature on its own (it shares no code with forum-svc, so a
// signing bug shows), records every delivery it accepts, and behaves as SetMode says: up, down
// (its port refuses connections), hanging, answering 500, or closing the connection unanswered.
type HookReceiver struct {
	addr    string
	key     atomic.Pointer[[]byte]
	mode    atomic.Int32
	refused atomic.Int64 // attempts answered other than 2xx (500, hang, close, bad signature)
	badSig  atomic.Int64

	mu   sync.Mutex
	srv  *http.Server
	got  []HookDelivery
	stop chan struct{} // closed by Close: hanging handlers return
}

// HookMode is how a HookReceiver answers.
type HookMode int32

// The modes of a HookReceiver.
const (
	HookUp    HookMode = iota // verify, record, 204
	HookDown                  // nothing listens on the port: connections are refused
	HookHang                  // read the request, never answer (until the sender gives up)
	Hook500                   // answer 500 without recording
	HookClose                 // close the connection without an answer
)

// HookDelivery is one accepted delivery: its webhook-id, its ids and when it arrived.
type HookDelivery struct {
	ID           string
	Conversation int64
	Message      int64
	At           time.Time
}

// NewHookReceiver listens on a free port of 127.0.0.1, up, accepting no delivery until SetSecret.
func NewHookReceiver() (*HookReceiver, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	r := &HookReceiver{addr: addr, stop: make(chan struct{})}
	if err := r.listen(); err != nil {
		return nil, err
	}
	return r, nil
}

// URL is the receiver's address, the webhook's URL.
func (r *HookReceiver) URL() string { return "http://" + r.addr + "/hook" }

// SetSecret sets the webhook's secret ("whsec_" and base64), the key signatures are checked with.
func (r *HookReceiver) SetSecret(secret string) error {
	s, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		return fmt.Errorf("secret %q: no whsec_ prefix", secret)
	}
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fmt.Errorf("secret: %w", err)
	}
	r.key.Store(&key)
	return nil
}

// SetMode switches the receiver's behaviour; HookDown closes the port and any other mode opens
// it again on the same address.
func (r *HookReceiver) SetMode(m HookMode) error {
	r.mode.Store(int32(m))
	r.mu.Lock()
	defer r.mu.Unlock()
	if m == HookDown {
		if r.srv != nil {
			err := r.srv.Close()
			r.srv = nil
			return err
		}
		return nil
	}
	if r.srv == nil {
		r.mu.Unlock()
		err := r.listen()
		r.mu.Lock()
		return err
	}
	return nil
}

func (r *HookReceiver) listen() error {
	var ln net.Listener
	var err error
	// The port was just closed: the kernel may take a moment to let it go.
	for range 50 {
		if ln, err = net.Listen("tcp", r.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	r.mu.Lock()
	r.srv = srv
	r.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
	return nil
}

func (r *HookReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		r.refused.Add(1)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	switch HookMode(r.mode.Load()) {
	case HookHang:
		r.refused.Add(1)
		select {
		case <-req.Context().Done():
		case <-r.stop:
		}
		return
	case Hook500:
		r.refused.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
		return
	case HookClose:
		r.refused.Add(1)
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				_ = c.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	}
	at := time.Now()
	d, err := r.verify(req.Header, body, at)
	if err != nil {
		r.refused.Add(1)
		r.badSig.Add(1)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	r.mu.Lock()
	r.got = append(r.got, d)
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// verify checks the signature and the timestamp (within 5 minutes) and reads the body's ids.
func (r *HookReceiver) verify(h http.Header, body []byte, at time.Time) (HookDelivery, error) {
	key := r.key.Load()
	if key == nil {
		return HookDelivery{}, errors.New("no secret set")
	}
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if id == "" || err != nil {
		return HookDelivery{}, errors.New("webhook-id or webhook-timestamp missing")
	}
	if d := at.Sub(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return HookDelivery{}, errors.New("webhook-timestamp too far from now")
	}
	if !SignatureMatches(*key, id, ts, body, h.Get("webhook-signature")) {
		return HookDelivery{}, errors.New("no signature matches")
	}
	var b struct {
		Data struct {
			ConversationID int64 `json:"conversation_id"`
			MessageID      int64 `json:"message_id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return HookDelivery{}, fmt.Errorf("body: %w", err)
	}
	return HookDelivery{ID: id, Conversation: b.Data.ConversationID, Message: b.Data.MessageID, At: at}, nil
}

// SignatureMatches tells whether one of the space-separated signatures is "v1," and the base64
// of HMAC-SHA256(key, "id.timestamp.body").
func SignatureMatches(key []byte, id, ts string, body []byte, signatures string) bool {
	want := HookSignature(key, id, ts, body)
	for _, s := range strings.Fields(signatures) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return true
		}
	}
	return false
}

// HookSignature is the webhook-signature of one attempt.
func HookSignature(key []byte, id, ts string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Received returns a copy of the accepted deliveries, in their order of arrival.
func (r *HookReceiver) Received() []HookDelivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// Refused counts the attempts the receiver did not accept (its modes, bad signatures) and,
// of them, the bad signatures.
func (r *HookReceiver) Refused() (attempts, badSignatures int64) {
	return r.refused.Load(), r.badSig.Load()
}

// Close stops the receiver and releases hanging handlers.
func (r *HookReceiver) Close() {
	close(r.stop)
	_ = r.SetMode(HookDown)
}

// HookCheck is what a run's deliveries amount to against the messages that were written.
type HookCheck struct {
	Expected   int      // messages written
	Unique     int      // of them, received (at least once)
	Lost       []int64  // messages written, never received
	Unexpected int      // deliveries of messages not written
	Duplicates int      // receipts beyond the first of a webhook-id
	IDsPerMsg  int      // messages received under more than one webhook-id (a delivery made twice)
	OutOfOrder []string // conversations whose first receipts are not in their messages' order
	Last       time.Time
}

// OK tells whether nothing was lost, unexpected, made twice or out of order (duplicate receipts of
// one webhook-id are at-least-once, allowed; count them apart).
func (c HookCheck) OK() bool {
	return len(c.Lost) == 0 && c.Unexpected == 0 && c.IDsPerMsg == 0 && len(c.OutOfOrder) == 0 && c.Unique == c.Expected
}

func (c HookCheck) String() string {
	s := fmt.Sprintf("%d of %d messages delivered, %d duplicate receipts, %d unexpected, %d made twice, %d conversations out of order",
		c.Unique, c.Expected, c.Duplicates, c.Unexpected, c.IDsPerMsg, len(c.OutOfOrder))
	if len(c.Lost) > 0 {
		s += fmt.Sprintf("; lost (first ones): %v", c.Lost[:min(len(c.Lost), 10)])
	}
	if len(c.OutOfOrder) > 0 {
		s += "; " + strings.Join(c.OutOfOrder[:min(len(c.OutOfOrder), 3)], "; ")
	}
	return s
}

// CheckHooks compares the received deliveries with the messages written (message id →
// conversation id): each message must arrive, under one webhook-id, and the first receipts of a
// conversation's messages must follow the messages' order (their ids, taken under the
// conversation's lock). A receipt of a webhook-id already seen is a duplicate (at-least-once).
func CheckHooks(written map[int64]int64, got []HookDelivery) HookCheck {
	c := HookCheck{Expected: len(written)}
	seen := map[string]bool{}
	idOf := map[int64]string{}
	last := map[int64]int64{} // conversation → last message id first received
	bad := map[int64]bool{}
	for _, d := range got {
		if d.At.After(c.Last) {
			c.Last = d.At
		}
		if seen[d.ID] {
			c.Duplicates++
			continue
		}
		seen[d.ID] = true
		conv, ok := written[d.Message]
		if !ok || conv != d.Conversation {
			c.Unexpected++
			continue
		}
		if prev, ok := idOf[d.Message]; ok && prev != d.ID {
			c.IDsPerMsg++
			continue
		}
		idOf[d.Message] = d.ID
		c.Unique++
		if d.Message < last[conv] && !bad[conv] {
			bad[conv] = true
			c.OutOfOrder = append(c.OutOfOrder, fmt.Sprintf("conversation %d: message %d after %d", conv, d.Message, last[conv]))
		}
		last[conv] = max(last[conv], d.Message)
	}
	for m := range written {
		if _, ok := idOf[m]; !ok {
			c.Lost = append(c.Lost, m)
		}
	}
	slices.Sort(c.Lost)
	return c
}

// Reply posts message into conversation conv as the key's user (POST /api/conversation-messages/)
// and returns the new message's id.
func Reply(client *http.Client, baseURL, key string, conv int64, message string) (int64, error) {
	return ReplyAs(client, baseURL, key, 0, conv, message)
}

// ReplyAs is Reply as user (Forum-Api-User, for a super key), or as the key's user when user is 0.
func ReplyAs(client *http.Client, baseURL, key string, user, conv int64, message string) (int64, error) {
	form := "conversation_id=" + strconv.FormatInt(conv, 10) + "&message=" + url.QueryEscape(message)
	req, err := http.NewRequest(http.MethodPost, baseURL+"/api/conversation-messages/", strings.NewReader(form))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Forum-Api-Key", key)
	if user != 0 {
		req.Header.Set("Forum-Api-User", strconv.FormatInt(user, 10))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("reply to %d as user %d: %s %.200s", conv, user, resp.Status, body)
	}
	var b struct {
		Message struct {
			MessageID      int64 `json:"message_id"`
			ConversationID int64 `json:"conversation_id"`
		} `json:"message"`
	}
	if err := json.Unmarshal(body, &b); err != nil || b.Message.MessageID == 0 || b.Message.ConversationID != conv {
		return 0, fmt.Errorf("reply to %d: unexpected answer %.200s", conv, body)
	}
	return b.Message.MessageID, nil
}

// AddWebhook registers a webhook to url for events with `forum-svc webhook add` on the database
// of env and returns its id and secret.
func AddWebhook(ctx context.Context, bin string, env []string, target, events string) (int64, string, error) {
	stdout, stderr, err := RunSplit(ctx, time.Minute, bin, env, "webhook", "add", "--url", target, "--events", events)
	if err != nil {
		return 0, "", fmt.Errorf("forum-svc webhook add: %w\n%s", err, stderr)
	}
	f := strings.Fields(stdout)
	if len(f) != 2 {
		return 0, "", fmt.Errorf("forum-svc webhook add printed %q", stdout)
	}
	id, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, "", fmt.Errorf("forum-svc webhook add printed %q", stdout)
	}
	return id, f[1], nil
}
