package testutil

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// RedisURL returns the URL of a Redis server for tests. Packages share it: use a unique key
// prefix per test.
func RedisURL() (string, error) { return redisSource.URL() }

func pingRedis(ctx context.Context, u string) error {
	opts, err := redis.ParseURL(u)
	if err != nil {
		return err
	}
	c := redis.NewClient(opts)
	defer c.Close()
	return c.Ping(ctx).Err()
}

func redisContainer() (string, func(), error) { return startContainer("redis") }
