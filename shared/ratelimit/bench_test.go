package ratelimit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"forumstats.local/shared/rdb"
	"forumstats.local/shared/testutil"
)

// BenchmarkRedisAllowHotKey is one key asked by parallel clients of one replica, with a budget
// they never reach: what a request costs the limiter.
func BenchmarkRedisAllowHotKey(b *testing.B) {
	url, err := testutil.RedisURL()
	if err != nil {
		b.Fatal(err)
	}
	c, err := rdb.Open(context.Background(), url)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	r := NewRedis(c, testPrefix, Config{PerMinute: 100_000_000, Burst: 1_000_000}, nil)
	r.timeout = 5 * time.Second
	key := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !r.Allow(context.Background(), key).Allowed {
				b.Error("refused")
			}
		}
	})
}
