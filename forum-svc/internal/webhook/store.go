package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/event"
)

// EventTypes are the types a webhook may subscribe to, as its deliveries name them: each type of
// change of the store (event.Types: "message_created") with its last underscore made a full stop,
// as the Standard Webhooks specification suggests ("message.created"). AllEvents subscribes to
// every type, also to those added later.
var EventTypes = func() []string {
	out := make([]string, len(event.Types))
	for i, t := range event.Types {
		out[i] = TypeOf(t)
	}
	return out
}()

// AllEvents is the subscription to every type.
const AllEvents = "*"

// TypeOf returns the delivery type of a store change's type: "message_created" is
// "message.created".
func TypeOf(change string) string {
	if i := strings.LastIndexByte(change, '_'); i >= 0 {
		return change[:i] + "." + change[i+1:]
	}
	return change
}

// ParseEvents reads a comma-separated list of event types, in either form (message.created or
// message_created), or "*"; it returns them deduplicated and sorted.
func ParseEvents(list string) ([]string, error) {
	var out []string
	for _, e := range strings.Split(list, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if e != AllEvents {
			if !strings.Contains(e, ".") {
				e = TypeOf(e)
			}
			if !slices.Contains(EventTypes, e) {
				return nil, fmt.Errorf("unknown event %q (one of %s, or *)", e, strings.Join(EventTypes, ", "))
			}
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("--events names no event")
	}
	slices.Sort(out)
	return out, nil
}

// CheckURL accepts an absolute http or https URL with a host, without user information (a
// secret in a URL would show in every listing). Where the host points is checked when a delivery
// dials it (client.go), since a name can resolve elsewhere later.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("--url: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("--url %q is not an absolute http or https URL", raw)
	}
	if u.User != nil {
		return errors.New("--url must not carry user information")
	}
	return nil
}

// Webhook is a stored webhook (its secret aside).
type Webhook struct {
	ID        int64
	URL       string
	Events    []string
	Active    bool
	CreatedAt int64 // Unix seconds
}

// Add stores a webhook and returns its id.
func Add(ctx context.Context, gdb *gorm.DB, rawURL string, events []string, secret string, now time.Time) (int64, error) {
	var id int64
	err := gdb.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Raw(`INSERT INTO webhooks (url, secret, active, created_at) VALUES (?, ?, TRUE, ?) RETURNING webhook_id`,
			rawURL, secret, now.Unix()).Row().Scan(&id); err != nil {
			return fmt.Errorf("insert webhook: %w", err)
		}
		for _, e := range events {
			if err := tx.Exec(`INSERT INTO webhook_events (webhook_id, event_type) VALUES (?, ?)`, id, e).Error; err != nil {
				return fmt.Errorf("insert webhook event: %w", err)
			}
		}
		return nil
	})
	return id, err
}

// List returns every webhook, by id.
func List(ctx context.Context, gdb *gorm.DB) ([]Webhook, error) {
	var rows []struct {
		WebhookID int64
		URL       string `gorm:"column:url"`
		Active    bool
		CreatedAt int64
		EventType string
	}
	err := gdb.WithContext(ctx).Raw(`SELECT w.webhook_id, w.url, w.active, w.created_at, e.event_type
FROM webhooks w LEFT JOIN webhook_events e ON e.webhook_id = w.webhook_id
ORDER BY w.webhook_id, e.event_type`).Scan(&rows).Error
	if err != nil {
		return nil, err
	}
	var out []Webhook
	for _, r := range rows {
		if len(out) == 0 || out[len(out)-1].ID != r.WebhookID {
			out = append(out, Webhook{ID: r.WebhookID, URL: r.URL, Active: r.Active, CreatedAt: r.CreatedAt})
		}
		if r.EventType != "" {
			w := &out[len(out)-1]
			w.Events = append(w.Events, r.EventType)
		}
	}
	return out, nil
}

// ErrNotFound answers an id that names no webhook or delivery.
var ErrNotFound = errors.New("not found")

// Disable stops new deliveries to webhook id; those already in its outbox stay there, pending,
// and are not sent while it is disabled.
func Disable(ctx context.Context, gdb *gorm.DB, id int64) error {
	res := gdb.WithContext(ctx).Exec(`UPDATE webhooks SET active = FALSE WHERE webhook_id = ?`, id)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return fmt.Errorf("webhook %d: %w", id, ErrNotFound)
	}
	return nil
}

// Delivery is one row of the outbox, as the CLI lists it.
type Delivery struct {
	ID             int64 `gorm:"column:delivery_id"`
	WebhookID      int64
	ConversationID int64
	MessageID      int64
	ActorID        int64
	EventType      string
	EventAt        int64
	CreatedAt      int64 // Unix ms
	State          string
	Attempts       int
	NextAttemptAt  int64 // Unix ms
	LastStatus     int
	LastError      string
	FinishedAt     int64 // Unix ms
}

// States of a delivery.
const (
	StatePending   = "pending"
	StateDelivered = "delivered"
	StateDead      = "dead"
)

// MessageID is a delivery's webhook-id: the same on every attempt and on a redelivery.
func MessageID(deliveryID int64) string { return fmt.Sprintf("msg_%d", deliveryID) }

// Deliveries returns webhook id's deliveries, newest first, at most limit.
func Deliveries(ctx context.Context, gdb *gorm.DB, webhookID int64, limit int) ([]Delivery, error) {
	var n int64
	if err := gdb.WithContext(ctx).Raw(`SELECT COUNT(*) FROM webhooks WHERE webhook_id = ?`, webhookID).Scan(&n).Error; err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("webhook %d: %w", webhookID, ErrNotFound)
	}
	var out []Delivery
	err := gdb.WithContext(ctx).Raw(`SELECT delivery_id, webhook_id, conversation_id, message_id, actor_id, event_type, event_at,
created_at, state, attempts, next_attempt_at, last_status, last_error, finished_at
FROM webhook_deliveries WHERE webhook_id = ? ORDER BY delivery_id DESC LIMIT ?`, webhookID, limit).Scan(&out).Error
	return out, err
}

// Redeliver puts delivery id back in its outbox, due now, with a new retry window: the same
// webhook-id and body (if it was sent once), before the later deliveries of its conversation
// that are still pending.
func Redeliver(ctx context.Context, gdb *gorm.DB, id int64, now time.Time) error {
	ms := now.UnixMilli()
	res := gdb.WithContext(ctx).Exec(`UPDATE webhook_deliveries SET state = 'pending', attempts = 0, created_at = ?,
next_attempt_at = ?, lease_owner = '', lease_until = 0, finished_at = 0 WHERE delivery_id = ? AND state <> 'pending'`, ms, ms, id)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		var state string
		err := gdb.WithContext(ctx).Raw(`SELECT state FROM webhook_deliveries WHERE delivery_id = ?`, id).Row().Scan(&state)
		if err != nil {
			return fmt.Errorf("delivery %d: %w", id, ErrNotFound)
		}
		return fmt.Errorf("delivery %d is still pending", id)
	}
	return nil
}

// Change is what a delivery is made of: a change of the store, its type as the store names it
// ("message_created").
type Change struct {
	Type           string
	ConversationID int64
	MessageID      int64
	ActorID        int64
	At             int64 // Unix seconds
}

// enqueueSQL writes one change's deliveries: one row per active webhook subscribed to its type
// (or to every type). One statement a change, whatever the number of webhooks, and an index
// lookup that finds none when no webhook is registered. A row is due at once, or when the oldest
// pending delivery of its stream is, if later: a stream waiting for a retry then holds its later
// deliveries out of the workers' scan of due rows (see Worker), which stays as short as the
// number of streams that can go out, however long a stream's backlog grows.
const enqueueSQL = `INSERT INTO webhook_deliveries (webhook_id, conversation_id, message_id, actor_id, event_type, event_at, created_at, next_attempt_at)
SELECT w.webhook_id, CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS BIGINT),
  COALESCE((SELECT CASE WHEN h.next_attempt_at > CAST(? AS BIGINT) THEN h.next_attempt_at END FROM webhook_deliveries h
    WHERE h.webhook_id = w.webhook_id AND h.conversation_id = CAST(? AS BIGINT) AND h.state = 'pending'
    ORDER BY h.delivery_id LIMIT 1), CAST(? AS BIGINT))
FROM webhooks w
WHERE w.active AND EXISTS (SELECT 1 FROM webhook_events e WHERE e.webhook_id = w.webhook_id AND e.event_type IN (?, '*'))`

// Enqueue writes the deliveries of changes in tx, the transaction of the changes, so that they
// exist if and only if the changes are committed.
func Enqueue(tx *gorm.DB, changes []Change, now time.Time) error {
	ms := now.UnixMilli()
	for _, c := range changes {
		t := TypeOf(c.Type)
		if err := tx.Exec(enqueueSQL, c.ConversationID, c.MessageID, c.ActorID, t, c.At, ms, ms, c.ConversationID, ms, t).Error; err != nil {
			return fmt.Errorf("enqueue webhook deliveries: %w", err)
		}
	}
	return nil
}
