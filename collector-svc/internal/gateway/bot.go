package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Bot is the answer of GET /gateway/bot.
type Bot struct {
	URL               string
	Shards            int // recommended shard count
	SessionStartLimit SessionStartLimit
}

// SessionStartLimit is how many sessions the bot may still start, and how fast.
type SessionStartLimit struct {
	Total, Remaining int
	ResetAfter       time.Duration // until Remaining is Total again
	// MaxConcurrency shards may identify together: those with equal shard_id % MaxConcurrency
	// share a bucket, which identifies once per IdentifyInterval.
	MaxConcurrency int
}

// FetchBot asks Discord (apiBase, e.g. https://discord.com/api/v10) for the gateway URL, the
// recommended shard count and the session start limit.
func FetchBot(ctx context.Context, client *http.Client, apiBase, token string) (Bot, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(apiBase, "/")+"/gateway/bot", nil)
	if err != nil {
		return Bot{}, err
	}
	req.Header.Set("Authorization", "Bot "+token)
	resp, err := client.Do(req)
	if err != nil {
		return Bot{}, fmt.Errorf("gateway/bot: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return Bot{}, fmt.Errorf("gateway/bot: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return Bot{}, fmt.Errorf("gateway/bot: HTTP %d: %.200s", resp.StatusCode, body)
	}
	var v struct {
		URL    string `json:"url"`
		Shards int    `json:"shards"`
		Limit  struct {
			Total          int   `json:"total"`
			Remaining      int   `json:"remaining"`
			ResetAfter     int64 `json:"reset_after"`
			MaxConcurrency int   `json:"max_concurrency"`
		} `json:"session_start_limit"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return Bot{}, fmt.Errorf("gateway/bot: %w", err)
	}
	if v.URL == "" || v.Shards < 1 || v.Limit.MaxConcurrency < 1 {
		return Bot{}, fmt.Errorf("gateway/bot: incomplete answer %.200s", body)
	}
	return Bot{URL: v.URL, Shards: v.Shards, SessionStartLimit: SessionStartLimit{
		Total: v.Limit.Total, Remaining: v.Limit.Remaining,
		ResetAfter: time.Duration(v.Limit.ResetAfter) * time.Millisecond, MaxConcurrency: v.Limit.MaxConcurrency,
	}}, nil
}

// Limiter paces identifies as Discord requires: one per bucket (shard_id % max_concurrency) per
// interval, and no more session starts than remain until the limit resets. Resumes are free.
type Limiter struct {
	interval time.Duration
	maxConc  int
	total    int

	mu        sync.Mutex
	remaining int
	from      time.Time // the instant the remaining starts are available from
	resetAt   time.Time
	next      map[int]time.Time // the earliest instant each bucket may identify again
	now       func() time.Time
}

// NewLimiter paces identifies by the session start limit of /gateway/bot.
func NewLimiter(l SessionStartLimit, interval time.Duration) *Limiter {
	return &Limiter{
		interval:  interval,
		maxConc:   max(l.MaxConcurrency, 1),
		total:     l.Total,
		remaining: l.Remaining,
		resetAt:   time.Now().Add(l.ResetAfter),
		next:      map[int]time.Time{},
		now:       time.Now,
	}
}

// Wait blocks until the shard may identify, and takes its turn.
func (l *Limiter) Wait(ctx context.Context, shard int) error {
	l.mu.Lock()
	now := l.now()
	at := now
	if l.from.After(at) {
		at = l.from
	}
	if l.remaining <= 0 {
		if at.Before(l.resetAt) {
			at = l.resetAt
		}
		// The day's starts come back at the reset, not before, and the next reset is a day later.
		l.remaining, l.from, l.resetAt = l.total, at, at.Add(24*time.Hour)
	}
	l.remaining--
	bucket := shard % l.maxConc
	if next := l.next[bucket]; next.After(at) {
		at = next
	}
	l.next[bucket] = at.Add(l.interval)
	l.mu.Unlock()
	if d := at.Sub(now); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}
