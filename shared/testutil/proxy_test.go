package testutil

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestProxyDownAndSlow(t *testing.T) {
	u, err := RedisURL()
	if err != nil {
		t.Fatal(err)
	}
	opts, _ := redis.ParseURL(u)
	p, err := NewProxy(opts.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1, ReadTimeout: 100 * time.Millisecond, DialTimeout: 100 * time.Millisecond})
	defer c.Close()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("through proxy: %v", err)
	}
	p.SetDown(true)
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("ping succeeded with the proxy down")
	}
	p.SetDown(false)
	p.SetLatency(300 * time.Millisecond)
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("ping within the read timeout despite 300ms latency")
	}
	p.SetLatency(0)
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
}
