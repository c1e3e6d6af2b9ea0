package webhook

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"gorm.io/gorm"

	sdb "forumstats.local/shared/db"
)

// The worker drains the outbox. Every replica runs one; they share the work through the
// database alone:
//
//   - A stream is the deliveries of one (webhook, conversation). Only its oldest pending delivery
//     (its head) may be sent, so a stream's deliveries arrive in the order of their changes; a head
//     waiting for its retry holds the stream back. Streams go out in parallel.
//   - A worker takes a head by a lease: one conditional UPDATE that succeeds for one worker only
//     (PostgreSQL re-checks the condition on the row the winner just changed; SQLite has one
//     writer). The lease outlasts the longest attempt, so no other replica sends the delivery
//     meanwhile; a worker that dies mid-attempt leaves it to another once the lease ends, which
//     makes delivery at-least-once.
//   - The scan for due heads reads due rows only: a stream's later deliveries are due no earlier
//     than its head (Enqueue, and failed pushes them back with their head), so a stream held back
//     by a retry adds nothing to the scan, whatever its backlog.
//   - An attempt that gets no 2xx answer is retried after RetryMin, then twice as long each time
//     up to RetryMax, each pause lengthened by up to a quarter at random (jitter) so that retries
//     of many deliveries spread out; a delivery whose next attempt would fall after Window from
//     its creation is dead-lettered instead (state dead), and its stream moves on.
//   - A retry that succeeds makes the webhook's other waiting streams due at once (wakeSQL): a
//     target back from an outage gets its backlog within a poll, not after each stream's backoff.

// Options tune a Worker; zero values take the defaults.
type Options struct {
	PollInterval time.Duration // pause when nothing is due (DefaultPollInterval)
	RetryMin     time.Duration // first retry (DefaultRetryMin)
	RetryMax     time.Duration // longest pause between attempts (DefaultRetryMax)
	Window       time.Duration // retries stop this long after a delivery's creation (DefaultWindow)
	Timeout      time.Duration // one attempt, connection to answer (DefaultTimeout)
	Concurrency  int           // attempts at once (DefaultConcurrency)
	AllowPrivate bool          // dial private and loopback targets (tests, local runs)
	Owner        string        // the lease owner's name; "" a random one
	Client       *http.Client  // nil: NewClient(Timeout, AllowPrivate)
	Now          func() time.Time
	Jitter       func() float64 // in [0, 1); nil: random
	Log          *slog.Logger
}

// Defaults of Options.
const (
	DefaultPollInterval = 250 * time.Millisecond
	DefaultRetryMin     = 5 * time.Second
	DefaultRetryMax     = time.Hour
	DefaultWindow       = 24 * time.Hour
	DefaultTimeout      = 10 * time.Second
	DefaultConcurrency  = 8
)

// Renderer makes a delivery's data from its change.
type Renderer interface {
	Data(ctx context.Context, c Change) (Data, error)
}

// Worker sends the outbox's deliveries.
type Worker struct {
	db     *gorm.DB
	render Renderer
	o      Options
	lease  time.Duration

	claimSQL string // claimSQL for the database's dialect
}

// NewWorker returns a worker over gdb (the primary).
func NewWorker(gdb *gorm.DB, r Renderer, o Options) (*Worker, error) {
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.RetryMin <= 0 {
		o.RetryMin = DefaultRetryMin
	}
	if o.RetryMax <= 0 {
		o.RetryMax = DefaultRetryMax
	}
	o.RetryMax = max(o.RetryMax, o.RetryMin)
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Owner == "" {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, err
		}
		o.Owner = hex.EncodeToString(b[:])
	}
	if o.Client == nil {
		o.Client = NewClient(o.Timeout, o.AllowPrivate)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Jitter == nil {
		o.Jitter = mrand.Float64
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	for _, r := range []string{StateDelivered, "failed", StateDead} {
		attempts(r) // exported at 0 from the start, so that a rate over it is defined
	}
	// An attempt's rendering, request and record take at most about twice its timeout; the lease
	// leaves a margin on top.
	lock := ""
	if sdb.DialectOf(gdb).Name == sdb.Postgres.Name {
		lock = " FOR UPDATE OF d SKIP LOCKED"
	}
	return &Worker{db: gdb, render: r, o: o, lease: 2*o.Timeout + 30*time.Second, claimSQL: fmt.Sprintf(claimSQL, lock)}, nil
}

var (
	metricsOnce sync.Once
	attemptsVec *prometheus.CounterVec
)

// attempts is webhook_delivery_attempts_total{result}: delivered, failed (to be retried) and
// dead (dead-lettered: failed, and out of retries).
func attempts(result string) prometheus.Counter {
	metricsOnce.Do(func() {
		attemptsVec = promauto.NewCounterVec(prometheus.CounterOpts{
			Name: "webhook_delivery_attempts_total",
			Help: "Webhook delivery attempts by result: delivered, failed (retried later) or dead (failed, out of retries: dead-lettered).",
		}, []string{"result"})
	})
	return attemptsVec.WithLabelValues(result)
}

// AttemptsCounter is webhook_delivery_attempts_total of result (tests read it).
func AttemptsCounter(result string) prometheus.Counter { return attempts(result) }

// Run sends due deliveries until ctx is done, pausing PollInterval whenever none was due.
func (w *Worker) Run(ctx context.Context) {
	for ctx.Err() == nil {
		n, err := w.RunOnce(ctx)
		if err != nil && ctx.Err() == nil {
			w.o.Log.Warn("webhook deliveries", "err", err)
		}
		if n > 0 && err == nil {
			continue
		}
		t := time.NewTimer(w.o.PollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// claimSQL leases up to n due heads of streams of active webhooks, most overdue first, and returns
// them: one statement, whatever the number. On PostgreSQL the heads are locked as they are read,
// skipping those another worker is leasing at the same moment, and the lease's conditions are
// checked again on the row as that worker left it; SQLite runs one writer at a time.
const claimSQL = `UPDATE webhook_deliveries SET lease_owner = ?, lease_until = ?
WHERE lease_until <= ? AND state = 'pending' AND delivery_id IN (
  SELECT d.delivery_id FROM webhook_deliveries d JOIN webhooks w ON w.webhook_id = d.webhook_id
  WHERE d.state = 'pending' AND d.next_attempt_at <= ? AND d.lease_until <= ? AND w.active
  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.webhook_id = d.webhook_id
    AND e.conversation_id = d.conversation_id AND e.state = 'pending' AND e.delivery_id < d.delivery_id)
  ORDER BY d.next_attempt_at, d.delivery_id LIMIT ?%s)
RETURNING delivery_id, webhook_id, conversation_id, message_id, actor_id, event_type, event_at, created_at, attempts, payload`

// RunOnce leases the due heads (at most Concurrency), attempts them in parallel, and returns
// how many it attempted.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	now := w.o.Now().UnixMilli()
	var claimed []leased
	if err := w.db.WithContext(ctx).Raw(w.claimSQL, w.o.Owner, now+w.lease.Milliseconds(), now, now, now, w.o.Concurrency).
		Scan(&claimed).Error; err != nil {
		return 0, fmt.Errorf("lease due deliveries: %w", err)
	}
	if len(claimed) == 0 {
		return 0, nil
	}
	ids := make([]int64, 0, len(claimed))
	for _, d := range claimed {
		ids = append(ids, d.WebhookID)
	}
	var targets []struct {
		WebhookID int64
		URL       string `gorm:"column:url"`
		Secret    string
	}
	if err := w.db.WithContext(ctx).Raw(`SELECT webhook_id, url, secret FROM webhooks WHERE webhook_id IN ?`, ids).
		Scan(&targets).Error; err != nil {
		for _, d := range claimed {
			_ = w.release(d.ID, err)
		}
		return 0, fmt.Errorf("read webhooks: %w", err)
	}
	var wg sync.WaitGroup
	for _, d := range claimed {
		for _, t := range targets {
			if t.WebhookID == d.WebhookID {
				d.URL, d.Secret = t.URL, t.Secret
			}
		}
		wg.Go(func() {
			if err := w.attempt(ctx, d); err != nil && ctx.Err() == nil {
				w.o.Log.Warn("webhook delivery", "delivery_id", d.ID, "err", err)
			}
		})
	}
	wg.Wait()
	return len(claimed), nil
}

// leased is a leased delivery with what its attempt needs.
type leased struct {
	Delivery
	URL     string `gorm:"column:url"`
	Secret  string
	Payload *string
}

// Body is a delivery's body.
type Body struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"` // the change's time, RFC 3339, UTC
	Data      Data   `json:"data"`
}

// Data is a delivery's data: the ids of the change, and the object it concerns as the acting user
// sees it through the API (Message, with its Conversation, when the change names a message; else
// Conversation), or neither when the actor can no longer see it (they left).
type Data struct {
	ConversationID int64 `json:"conversation_id"`
	MessageID      int64 `json:"message_id,omitempty"`
	ActorID        int64 `json:"actor_id"`
	Conversation   any   `json:"conversation,omitempty"`
	Message        any   `json:"message,omitempty"`
}

// attempt sends leased delivery d once and records the outcome, with the body the first time it
// is made.
func (w *Worker) attempt(ctx context.Context, d leased) error {
	var body []byte
	if d.Payload != nil {
		body = []byte(*d.Payload)
	} else {
		c := Change{Type: d.EventType, ConversationID: d.ConversationID, MessageID: d.MessageID, ActorID: d.ActorID, At: d.EventAt}
		data, err := w.render.Data(ctx, c)
		if err != nil {
			if ctx.Err() != nil {
				return w.release(d.ID, err)
			}
			return w.failed(d, nil, 0, fmt.Errorf("render: %w", err))
		}
		body, err = json.Marshal(Body{Type: d.EventType, Timestamp: time.Unix(d.EventAt, 0).UTC().Format(time.RFC3339), Data: data})
		if err != nil {
			return w.failed(d, nil, 0, fmt.Errorf("render: %w", err))
		}
	}
	key, err := ParseSecret(d.Secret)
	if err != nil {
		return w.failed(d, body, 0, err)
	}
	status, err := w.post(ctx, d.URL, key, MessageID(d.ID), body)
	if ctx.Err() != nil {
		return w.release(d.ID, ctx.Err()) // shutting down: the attempt does not count
	}
	if err == nil && status >= 200 && status < 300 {
		return w.delivered(d, body, status)
	}
	if err == nil {
		err = fmt.Errorf("HTTP %d", status)
	}
	return w.failed(d, body, status, err)
}

// post sends one attempt and returns the answer's status. The answer's body is read up to
// maxAnswer bytes, so that the connection can serve again, and never kept.
func (w *Worker) post(ctx context.Context, url string, key []byte, msgID string, body []byte) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, w.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "forum-svc-webhooks")
	SetHeaders(req.Header, key, msgID, w.o.Now(), body)
	resp, err := w.o.Client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// Backoff is the pause before attempt n+1 after n failed attempts (n >= 1), jitter in [0, 1).
func Backoff(n int, lo, hi time.Duration, jitter float64) time.Duration {
	d := lo
	for i := 1; i < n && d < hi; i++ {
		d *= 2
	}
	return time.Duration(float64(min(d, hi)) * (1 + jitter/4))
}

// payload is the body to keep with an attempt's outcome: the one sent, unless one was kept
// before (nil: none made).
func payload(body []byte) any {
	if body == nil {
		return nil
	}
	return string(body)
}

// delivered records a success. A success after failed attempts says the target is back: the
// webhook's other streams waiting for a retry are made due at once (see wakeSQL).
func (w *Worker) delivered(d leased, body []byte, status int) error {
	attempts(StateDelivered).Inc()
	now := w.o.Now().UnixMilli()
	res := w.db.Exec(`UPDATE webhook_deliveries SET state = 'delivered', attempts = attempts + 1, last_status = ?, last_error = '',
finished_at = ?, lease_owner = '', lease_until = 0, payload = COALESCE(payload, ?)
WHERE delivery_id = ? AND lease_owner = ? AND state = 'pending'`,
		status, now, payload(body), d.ID, w.o.Owner)
	if res.Error != nil || res.RowsAffected == 0 || d.Attempts == 0 {
		return res.Error
	}
	if err := w.db.Exec(wakeSQL, now, d.WebhookID, now).Error; err != nil {
		return fmt.Errorf("wake the webhook's waiting deliveries: %w", err)
	}
	return nil
}

// wakeSQL makes a webhook's pending deliveries that wait for a later retry due now. It runs when
// a delivery to the webhook succeeded after failed attempts: the target that was failing answers
// again, and the other streams need not sit out the rest of their backoff (after an outage of an
// hour, up to another hour). A stream's rows all become due together, so its order holds. Only
// a retry's success wakes them, not a first attempt's: a delivery that fails on its own (a body
// the target refuses while it takes the others) is then woken at most once per retried delivery
// that got through, not at every delivery the webhook sends.
const wakeSQL = `UPDATE webhook_deliveries SET next_attempt_at = ?
WHERE webhook_id = ? AND state = 'pending' AND next_attempt_at > ?`

// maxError bounds the error text kept with a delivery.
const maxError = 300

// failed records a failed attempt: retried later, or dead-lettered when the next attempt would
// fall after the window.
func (w *Worker) failed(d leased, body []byte, status int, cause error) error {
	msg := cause.Error()
	if len(msg) > maxError {
		msg = msg[:maxError]
	}
	now := w.o.Now()
	n := d.Attempts + 1
	next := now.Add(Backoff(n, w.o.RetryMin, w.o.RetryMax, w.o.Jitter()))
	if next.UnixMilli() > d.CreatedAt+w.o.Window.Milliseconds() {
		attempts(StateDead).Inc()
		w.o.Log.Warn("webhook delivery dead-lettered", "delivery_id", d.ID, "webhook_id", d.WebhookID, "attempts", n, "err", msg)
		return w.db.Exec(`UPDATE webhook_deliveries SET state = 'dead', attempts = ?, last_status = ?, last_error = ?, finished_at = ?,
lease_owner = '', lease_until = 0, payload = COALESCE(payload, ?) WHERE delivery_id = ? AND lease_owner = ? AND state = 'pending'`,
			n, status, msg, now.UnixMilli(), payload(body), d.ID, w.o.Owner).Error
	}
	attempts("failed").Inc()
	// The stream's later deliveries wait as long: out of the scan of due rows until then.
	return w.db.Transaction(func(tx *gorm.DB) error {
		res := tx.Exec(`UPDATE webhook_deliveries SET attempts = ?, last_status = ?, last_error = ?, next_attempt_at = ?,
lease_owner = '', lease_until = 0, payload = COALESCE(payload, ?) WHERE delivery_id = ? AND lease_owner = ? AND state = 'pending'`,
			n, status, msg, next.UnixMilli(), payload(body), d.ID, w.o.Owner)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error
		}
		return tx.Exec(`UPDATE webhook_deliveries SET next_attempt_at = ? WHERE webhook_id = ? AND conversation_id = ?
AND state = 'pending' AND delivery_id > ? AND next_attempt_at < ?`, next.UnixMilli(), d.WebhookID, d.ConversationID, d.ID, next.UnixMilli()).Error
	})
}

// release gives a lease back without counting an attempt (shutdown, a database error).
func (w *Worker) release(id int64, cause error) error {
	if err := w.db.Exec(`UPDATE webhook_deliveries SET lease_owner = '', lease_until = 0 WHERE delivery_id = ? AND lease_owner = ?`,
		id, w.o.Owner).Error; err != nil {
		return errors.Join(cause, err)
	}
	return cause
}
