//go:build faults || load

// Package systest holds the system-level reliability tests: bad input, load, faults and
// security checks against the real service binaries, run on private PostgreSQL and Redis
// instances. They are behind build tags (faults, load) so that `make test` does not run them.
package systest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"forumstats.local/tools/badinput"
	"forumstats.local/tools/stack"
)

var (
	binDir  string
	binMu   sync.Mutex
	bins    = map[string]string{}
	binErrs = map[string]error{}
)

func TestMain(m *testing.M) {
	d, err := stack.TempDir("reliab-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = d
	code := m.Run()
	if sharedPG != nil {
		sharedPG.Close()
	}
	os.RemoveAll(d)
	os.Exit(code)
}

// bin builds (once) and returns the binary of service name.
func bin(t testing.TB, name string) string {
	t.Helper()
	binMu.Lock()
	defer binMu.Unlock()
	if p, ok := bins[name]; ok {
		return p
	}
	if err, ok := binErrs[name]; ok {
		t.Fatalf("%s is not buildable: %v", name, err)
	}
	out, err := stack.Build(context.Background(), binDir, name)
	if err != nil {
		binErrs[name] = err
		t.Fatalf("%s is not buildable: %v", name, err)
	}
	bins[name] = out[name]
	return out[name]
}

// Shared private PostgreSQL for the tests that do not stop it; tests that do get their own.
var (
	sharedPGOnce sync.Once
	sharedPG     *stack.Postgres
	sharedPGErr  error
)

func postgres(t testing.TB) *stack.Postgres {
	t.Helper()
	sharedPGOnce.Do(func() {
		sharedPG, sharedPGErr = stack.NewPostgres(context.Background(), stack.PostgresOptions{})
	})
	if sharedPGErr != nil {
		t.Fatalf("private PostgreSQL: %v", sharedPGErr)
	}
	return sharedPG
}

func privatePostgres(t testing.TB, opts stack.PostgresOptions) *stack.Postgres {
	t.Helper()
	pg, err := stack.NewPostgres(context.Background(), opts)
	if err != nil {
		t.Fatalf("private PostgreSQL: %v", err)
	}
	t.Cleanup(pg.Close)
	return pg
}

func redis(t testing.TB) *stack.Redis {
	t.Helper()
	r, err := stack.NewRedis(context.Background())
	if err != nil {
		t.Fatalf("private Redis: %v", err)
	}
	t.Cleanup(r.Close)
	return r
}

func tempDir(t testing.TB) string {
	t.Helper()
	d, err := stack.TempDir("reliab-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func dbName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}

// service starts a service and stops it at the end of the test, showing its output when the
// test failed.
func service(t testing.TB, name string, env ...string) *stack.Service {
	t.Helper()
	s, err := stack.StartService(name, bin(t, name), env)
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		s.Stop(30 * time.Second)
		if t.Failed() {
			t.Logf("%s output (tail):\n%s", name, tailLines(s.Output(), 40))
		}
	})
	return s
}

// forumEnv is the environment of a forum-svc on pg with the fixture seeded. The rate limit is
// lifted out of the way of load: it has its own check.
func forumEnv(t testing.TB, pg *stack.Postgres, fx stack.ForumFixture, extra ...string) []string {
	t.Helper()
	url, err := stack.SeedForum(context.Background(), pg, bin(t, stack.Forum), dbName("forum"), tempDir(t), fx)
	if err != nil {
		t.Fatal(err)
	}
	return forumURLEnv(url, extra...)
}

// forumURLEnv is the environment of a forum-svc on the database at url, the rate limit and the
// limits of failed authentication lifted (the attack tests set their own).
func forumURLEnv(url string, extra ...string) []string {
	return append([]string{"DATABASE_URL=" + url, "RATE_LIMIT_PER_MINUTE=100000000", "RATE_LIMIT_BURST=1000000",
		"AUTH_FAILURES_PER_MINUTE=100000000", "AUTH_FAILURES_BURST=1000000", "AUTH_KEY_LOOKUPS_PER_SECOND=1000000"}, extra...)
}

// statsFixture is the report data of the stats tests: 10 servers, 40 days.
func statsFixture() stack.StatsFixture {
	return stack.StatsFixture{Servers: 10, Channels: 8, Days: 40, Now: time.Now()}
}

// statsEnv is the environment of a stats-svc on pg with the fixture imported. The per-client
// rate limit is lifted out of the way of load (every request comes from one address); extra
// may set it again (the last value of a variable wins), as the attack tests do.
func statsEnv(t testing.TB, pg *stack.Postgres, fx stack.StatsFixture, extra ...string) []string {
	t.Helper()
	url, err := stack.ImportStats(context.Background(), pg, bin(t, stack.Collector), dbName("stats"), tempDir(t), fx)
	if err != nil {
		t.Fatal(err)
	}
	// The load and fault runs send every request from one address and open with a burst of
	// uncached queries: the per-client rate limit is lifted, and an uncached query may wait up
	// to 10 s for a turn at the database (a turn, not a refusal; the flood tests set their own).
	return append([]string{"DATABASE_URL=" + url, "RATE_LIMIT_PER_MINUTE=100000000", "RATE_LIMIT_BURST=1000000", "COLD_QUERY_WAIT=10s"}, extra...)
}

func forumData(fx stack.ForumFixture) badinput.ForumData {
	return badinput.ForumData{
		UserKey: fx.UserKey, SuperKey: fx.SuperKey, GuestKey: fx.GuestKey, InactiveKey: fx.InactiveKey,
		ExpiredKey: fx.ExpiredKey, ReadOnlyKey: fx.ReadOnlyKey, WriteOnlyKey: fx.WriteOnlyKey,
		Own: fx.Own, Foreign: fx.Foreign, Missing: fx.MissingID, OwnMessage: fx.OwnMessage,
		ForeignMessage: fx.ForeignMessage, LastPage: fx.LastPage, Users: fx.Users,
	}
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// report prints a figure line to stdout (go test -v shows it), prefixed so that it can be
// grepped out of the run for docs/reliability.md.
func report(t testing.TB, format string, args ...any) {
	t.Helper()
	fmt.Printf("REPORT %s: %s\n", t.Name(), fmt.Sprintf(format, args...))
}
