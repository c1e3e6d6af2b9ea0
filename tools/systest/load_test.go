//go:build load

package systest

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"forumstats.local/tools/loadgen"
	"forumstats.local/tools/stack"
)

// loadSettings reads LOAD_DURATION (default 60s) and LOAD_CONCURRENCY (default 64).
func loadSettings(t *testing.T) (time.Duration, int) {
	d, c := 60*time.Second, 64
	if v := os.Getenv("LOAD_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("LOAD_DURATION: %v", err)
		}
	}
	if v := os.Getenv("LOAD_CONCURRENCY"); v != "" {
		var err error
		if c, err = strconv.Atoi(v); err != nil || c < 1 {
			t.Fatalf("LOAD_CONCURRENCY: %q", v)
		}
	}
	return d, c
}

// TestLoadStats drives stats-svc (PostgreSQL, Redis, 10 servers × 40 days of reports) with
// the read mix of statsTargets: zero errors allowed.
func TestLoadStats(t *testing.T) {
	d, c := loadSettings(t)
	pg := postgres(t)
	rd := redis(t)
	fx := statsFixture()
	svc := service(t, stack.Stats, statsEnv(t, pg, fx, "REDIS_URL="+rd.URL())...)
	runLoad(t, svc, statsTargets(svc.URL, fx), d, c)
}

// TestLoadStatsUncached drives stats-svc with statistics queries that are all distinct (no
// Redis, and the in-process cache never sees a query twice): every request reaches PostgreSQL.
// This is the cold path, the floor under the cached figures of TestLoadStats.
func TestLoadStatsUncached(t *testing.T) {
	d, c := loadSettings(t)
	pg := postgres(t)
	fx := statsFixture()
	svc := service(t, stack.Stats, statsEnv(t, pg, fx)...)
	targets := statsUncachedTargets(svc.URL, fx, 1<<30)
	report(t, "%d distinct queries available", len(targets))
	runLoad(t, svc, targets, d, c)
}

// TestLoadForum drives forum-svc (PostgreSQL, Redis rate limits, a 2000-message conversation)
// with the read/write mix of forumTargets: zero errors allowed.
func TestLoadForum(t *testing.T) {
	d, c := loadSettings(t)
	pg := postgres(t)
	rd := redis(t)
	fx := stack.NewForumFixture(2000, 20)
	svc := service(t, stack.Forum, forumEnv(t, pg, fx, "REDIS_URL="+rd.URL())...)
	runLoad(t, svc, forumTargets(svc.URL, fx), d, c)
}

func runLoad(t *testing.T, svc *stack.Service, targets []loadgen.Target, d time.Duration, c int) {
	res, err := loadgen.Run(context.Background(), loadgen.Config{Targets: targets, Concurrency: c, Duration: d})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	res.Format(&out)
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		report(t, "%s", line)
	}
	if int(res.Requests) > len(targets) {
		report(t, "note: %d requests over %d targets, some were repeated", res.Requests, len(targets))
	}
	if res.Requests == 0 || res.Errors != 0 {
		t.Errorf("%d requests, %d errors: want some and none", res.Requests, res.Errors)
	}
	if strings.Contains(svc.Output(), "panic") {
		t.Error("the service logged a panic")
	}
}
