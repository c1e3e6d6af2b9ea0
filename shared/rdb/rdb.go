// Package rdb opens the Redis client the services use as a cache and for shared rate limits.
package rdb

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Open parses url (redis://host:port/db) and returns a client. An empty url means the deployment
// runs without Redis and gives (nil, nil). Open does not fail when Redis is unreachable: Redis is
// a cache here, and a service must start and serve without it.
func Open(ctx context.Context, url string) (*redis.Client, error) {
	if url == "" {
		return nil, nil
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	// Short timeouts: callers fall back to the database, so a slow Redis must fail fast.
	opts.DialTimeout = 200 * time.Millisecond
	opts.ReadTimeout = 100 * time.Millisecond
	opts.WriteTimeout = 100 * time.Millisecond
	opts.MaxRetries = 0
	opts.ContextTimeoutEnabled = true
	return redis.NewClient(opts), nil
}
