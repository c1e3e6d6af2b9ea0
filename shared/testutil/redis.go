package testutil

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
)

const localRedis = "redis://127.0.0.1:6379/0"

var redisSource = &source{kind: "Redis", env: "TEST_REDIS_URL", local: localRedis, ping: pingRedis, container: redisContainer,
	hint: "set TEST_REDIS_URL=redis://host:port/db, or run redis-server on 127.0.0.1:6379, " +
		"or make a Docker engine available for testcontainers"}

// RedisURL returns the URL of a Redis server for tests. Packages share it: use a unique key
// prefix per test.
func RedisURL() (string, error) { return redisSource.URL() }

func pingRedis(u string) error {
	opts, err := redis.ParseURL(u)
	if err != nil {
		return err
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return c.Ping(ctx).Err()
}

func redisContainer() (u string, cleanup func(), err error) {
	defer recoverContainerPanic(&err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := tcredis.Run(ctx, "redis:7-alpine")
	if err != nil {
		return "", nil, err
	}
	u, err = c.ConnectionString(ctx)
	if err != nil {
		_ = testcontainers.TerminateContainer(c)
		return "", nil, err
	}
	return u, func() { _ = testcontainers.TerminateContainer(c) }, nil
}
