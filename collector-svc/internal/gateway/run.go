package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// DefaultIdentifyInterval is Discord's: each max_concurrency bucket identifies once per 5 s.
const DefaultIdentifyInterval = 5 * time.Second

// Config configures Run.
type Config struct {
	APIBase    string // e.g. https://discord.com/api/v10
	Token      string
	HTTPClient *http.Client
	Logger     *slog.Logger
	Intents    int // default DefaultIntents
	// Shards is the shard count; 0 takes the count /gateway/bot recommends. ShardIDs are the
	// shards this process runs (nil: all), for replicas that share the bot.
	Shards   int
	ShardIDs []int
	// Checkpoints are stored sessions to resume, by shard id; a shard without one identifies.
	Checkpoints map[int]Checkpoint
	// IdentifyInterval separates the identifies of one max_concurrency bucket; default 5 s.
	IdentifyInterval time.Duration
	// Shard carries the per-connection knobs (ReadLimit, Backoff, ReidentifyMin/Max); its ID,
	// Count, URL, Token, Intents, Gate and Logger are set by Run.
	Shard ShardConfig
	// OnStart, when set, receives each shard before it connects, so that the caller can read its
	// Checkpoint.
	OnStart func(*Shard)
}

// Run asks /gateway/bot for the URL, the shard count and the session start limit, then runs
// the shards until ctx ends (nil) or every shard stopped; a shard stopped by a close code that
// forbids reconnecting makes the error. emit is called by every shard concurrently, each in its
// own sequence order.
func Run(ctx context.Context, cfg Config, emit func(Event)) error {
	bot, err := FetchBot(ctx, cfg.HTTPClient, cfg.APIBase, cfg.Token)
	if err != nil {
		return err
	}
	count := cfg.Shards
	if count <= 0 {
		count = bot.Shards
	}
	ids := cfg.ShardIDs
	if ids == nil {
		for i := range count {
			ids = append(ids, i)
		}
	}
	for _, id := range ids {
		if id < 0 || id >= count {
			return fmt.Errorf("gateway: shard %d is not in 0..%d", id, count-1)
		}
	}
	interval := cfg.IdentifyInterval
	if interval <= 0 {
		interval = DefaultIdentifyInterval
	}
	gate := NewLimiter(bot.SessionStartLimit, interval)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, id := range ids {
		sc := cfg.Shard
		sc.ID, sc.Count, sc.URL, sc.Token, sc.Intents, sc.Gate, sc.Logger = id, count, bot.URL, cfg.Token, cfg.Intents, gate, cfg.Logger
		sh := NewShard(sc, cfg.Checkpoints[id])
		if cfg.OnStart != nil {
			cfg.OnStart(sh)
		}
		wg.Go(func() {
			if err := sh.Run(ctx, emit); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
