package deploy

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
)

// redisBound reads the memory bound and the eviction policy from a redis-server command line:
// without both, a cache that anyone can fill with distinct queries grows until the host kills it.
func redisBound(args []string) (maxBytes int64, policy string, err error) {
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--maxmemory":
			if maxBytes, err = redisBytes(args[i+1]); err != nil {
				return 0, "", err
			}
		case "--maxmemory-policy":
			policy = args[i+1]
		}
	}
	if maxBytes <= 0 {
		return 0, "", fmt.Errorf("no --maxmemory in %q", args)
	}
	// An allkeys policy: every key of this Redis (cached answers, rate-limit buckets) may be
	// evicted, least recently used first; a volatile-ttl policy would evict the short-lived
	// buckets of active clients before week-old answers, and noeviction fails the writes.
	if policy != "allkeys-lru" && policy != "allkeys-lfu" {
		return 0, "", fmt.Errorf("--maxmemory-policy %q, want allkeys-lru or allkeys-lfu", policy)
	}
	return maxBytes, policy, nil
}

// redisBytes reads a redis.conf memory size: a number with an optional unit (k, kb, m, mb, g,
// gb; k is 1000, kb 1024).
func redisBytes(s string) (int64, error) {
	s = strings.ToLower(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1000}, {"m", 1000 * 1000}, {"g", 1000 * 1000 * 1000}, {"b", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("memory size %q", s)
	}
	return n * mult, nil
}

func TestRedisBound(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want int64
		ok   bool
	}{
		{[]string{"redis-server", "--maxmemory", "96mb", "--maxmemory-policy", "allkeys-lru"}, 96 << 20, true},
		{[]string{"redis-server", "--maxmemory", "1gb", "--maxmemory-policy", "allkeys-lfu"}, 1 << 30, true},
		{[]string{"redis-server", "--maxmemory", "100m", "--maxmemory-policy", "allkeys-lru"}, 100_000_000, true},
		{[]string{"redis-server", "--save", ""}, 0, false},
		{[]string{"redis-server", "--maxmemory", "96mb"}, 0, false},
		{[]string{"redis-server", "--maxmemory", "96mb", "--maxmemory-policy", "volatile-ttl"}, 0, false},
		{[]string{"redis-server", "--maxmemory", "0", "--maxmemory-policy", "allkeys-lru"}, 0, false},
		{[]string{"redis-server", "--maxmemory", "lots", "--maxmemory-policy", "allkeys-lru"}, 0, false},
	} {
		got, _, err := redisBound(tt.args)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("%q: %d, %v", tt.args, got, err)
		}
	}
}

// The compose stack's Redis is bounded and evicts.
func TestComposeRedisBounded(t *testing.T) {
	f := loadCompose(t)
	if _, _, err := redisBound(f.service(t, "redis").Command); err != nil {
		t.Error(err)
	}
}

// The dev overlay's Redis is bounded below its container's memory limit (Redis needs room
// beyond its data: buffers, fragmentation), and evicts.
func TestDevRedisBounded(t *testing.T) {
	r := overlay(t, "dev")
	d, ok := get[appsv1.Deployment](r, "Deployment", "redis")
	if !ok {
		t.Fatal("no Deployment redis")
	}
	c := d.Spec.Template.Spec.Containers[0]
	maxBytes, _, err := redisBound(c.Args)
	if err != nil {
		t.Fatal(err)
	}
	limit := c.Resources.Limits.Memory()
	if limit.IsZero() || maxBytes > limit.Value()*3/4 {
		t.Errorf("maxmemory %d bytes, memory limit %v: leave Redis a quarter of the limit", maxBytes, limit)
	}
}
