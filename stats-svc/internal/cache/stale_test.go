package cache

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"forumstats.local/stats-svc/internal/answers"
	"forumstats.local/stats-svc/internal/query"
)

var errDown = fmt.Errorf("%w: dial tcp 127.0.0.1:5432: connect: connection refused", answers.ErrDatabaseUnavailable)

// While the database is unreachable an answer cached before is served past its validity, with
// its own body and tag, marked stale, for StaleIfError; what was never cached, or expired longer
// ago, fails with the database's error; any other error of the source is never hidden.
func TestStaleIfError(t *testing.T) {
	for _, tc := range []struct {
		name  string
		redis bool
		// fresh: the stale copy is read by a second cache with an empty L1 (another replica,
		// or a restart), from Redis.
		fresh bool
	}{
		{name: "l1"},
		{name: "l1 with redis", redis: true},
		{name: "redis only", redis: true, fresh: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &countingSource{valid: time.Minute}
			opts := Options{KeyPrefix: prefix(t), StaleIfError: time.Hour}
			var c *Cache
			newCache := func() *Cache {
				if tc.redis {
					return New(src, newRedis(t), opts)
				}
				return New(src, nil, opts)
			}
			c = newCache()
			q := mustQuery(t, "period=day")
			ctx := context.Background()
			first, err := c.Statistics(ctx, q, t0)
			if err != nil || first.Stale {
				t.Fatalf("first: %v stale %v", err, first.Stale)
			}
			if tc.fresh {
				c = newCache()
			}
			src.fail = errDown
			for _, at := range []time.Duration{2 * time.Minute, time.Hour, time.Hour + time.Minute - time.Second} {
				a, err := c.Statistics(ctx, q, t0.Add(at))
				if err != nil {
					t.Fatalf("+%v: %v", at, err)
				}
				if !a.Stale || string(a.Body) != string(first.Body) || a.ETag != first.ETag || !a.ValidUntil.Equal(t0.Add(time.Minute)) {
					t.Fatalf("+%v: stale %v body %q tag %s valid until %v; want the first answer (%q, %s) marked stale",
						at, a.Stale, a.Body, a.ETag, a.ValidUntil, first.Body, first.ETag)
				}
			}
			if _, err := c.Statistics(ctx, q, t0.Add(time.Hour+time.Minute)); !errors.Is(err, answers.ErrDatabaseUnavailable) {
				t.Fatalf("past the window: %v, want the database's error", err)
			}
			if _, err := c.Statistics(ctx, mustQuery(t, "period=week"), t0.Add(2*time.Minute)); !errors.Is(err, answers.ErrDatabaseUnavailable) {
				t.Fatalf("never cached: %v, want the database's error", err)
			}
			broken := errors.New("column does not exist")
			src.fail = broken
			if _, err := c.Statistics(ctx, q, t0.Add(2*time.Minute)); err != broken {
				t.Fatalf("a statement's error: %v, want it as it is", err)
			}
			src.fail = nil
			if a, err := c.Statistics(ctx, q, t0.Add(2*time.Minute)); err != nil || a.Stale {
				t.Fatalf("database back: %v stale %v", err, a.Stale)
			}
		})
	}
}

// A stale copy survives a generation change seen before the outage (L1 keeps the previous
// generation's entries for it), and a server's answer is found through the catalog read before
// when the catalog cannot be read again.
func TestStaleAcrossGenerations(t *testing.T) {
	src := &countingSource{valid: time.Minute}
	c := New(src, nil, Options{StaleIfError: time.Hour})
	ctx := context.Background()
	q := mustQuery(t, "period=day&server=2")
	first, err := c.Statistics(ctx, q, t0)
	if err != nil {
		t.Fatal(err)
	}
	src.gen.Store(5)
	if err := c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	// Another answer of the new generation moves L1 to it.
	if _, err := c.Statistics(ctx, mustQuery(t, "period=week"), t0); err != nil {
		t.Fatal(err)
	}
	src.fail, src.failCatalog = errDown, errDown
	a, err := c.Statistics(ctx, q, t0.Add(time.Second))
	if err != nil || !a.Stale || string(a.Body) != string(first.Body) {
		t.Fatalf("%v stale %v body %q, want %q stale", err, a.Stale, a.Body, first.Body)
	}
	if _, err := c.Statistics(ctx, mustQuery(t, "period=day&server=9"), t0); !errors.Is(err, answers.ErrServerNotFound) {
		t.Fatalf("an unknown server with the old catalog: %v", err)
	}
}

// Busy beyond the wait counts as the origin failing: a cached copy answers instead of 503.
func TestStaleWhenBusy(t *testing.T) {
	src := &countingSource{valid: time.Minute}
	c := New(src, nil, Options{StaleIfError: time.Hour, ColdLimit: 1, ColdWait: 20 * time.Millisecond})
	ctx := context.Background()
	q := mustQuery(t, "period=day")
	first, err := c.Statistics(ctx, q, t0)
	if err != nil {
		t.Fatal(err)
	}
	c.cold <- struct{}{} // the one turn is taken
	defer func() { <-c.cold }()
	a, err := c.Statistics(ctx, q, t0.Add(2*time.Minute))
	if err != nil || !a.Stale || string(a.Body) != string(first.Body) {
		t.Fatalf("%v stale %v", err, a.Stale)
	}
	if _, err := c.Statistics(ctx, mustQuery(t, "period=week"), t0); !errors.Is(err, ErrBusy) {
		t.Fatalf("never cached: %v, want ErrBusy", err)
	}
}

// A negative StaleIfError turns it off: the error answers.
func TestStaleIfErrorOff(t *testing.T) {
	src := &countingSource{valid: time.Minute}
	c := New(src, newRedis(t), Options{KeyPrefix: prefix(t), StaleIfError: -1})
	q := mustQuery(t, "period=day")
	body(t, c, q, t0)
	src.fail = errDown
	if _, err := c.Statistics(context.Background(), q, t0.Add(2*time.Minute)); !errors.Is(err, answers.ErrDatabaseUnavailable) {
		t.Fatalf("%v, want the database's error", err)
	}
}

// The previous generation's entries count in the bound and are dropped before the current ones.
func TestL1KeepsOldGenerationWithinBound(t *testing.T) {
	l := newL1(1000)
	for i := 0; i < 5; i++ {
		l.put(fmt.Sprint("old", i), answers.Answer{Body: make([]byte, 90), Generation: 1}, t0)
	}
	for i := 0; i < 10; i++ {
		l.put(fmt.Sprint("new", i), answers.Answer{Body: make([]byte, 90), Generation: 2}, t0)
		if l.bytes > 1000 {
			t.Fatalf("l1 holds %d bytes", l.bytes)
		}
	}
	if len(l.items) != 10 || len(l.old) >= 5 {
		t.Fatalf("%d current and %d old entries: the old ones must go first", len(l.items), len(l.old))
	}
	if _, ok := l.stale("new3", t0.Add(time.Minute), time.Hour); !ok {
		t.Fatal("no stale copy of a current entry")
	}
	if _, ok := l.stale("new3", t0.Add(time.Hour), time.Hour); ok {
		t.Fatal("a copy past the window")
	}
	// A third generation drops the first one's entries from the count.
	l.put("x", answers.Answer{Body: make([]byte, 90), Generation: 3}, t0)
	total := 0
	for _, m := range []map[string]l1Entry{l.items, l.old} {
		for k, e := range m {
			total += len(k) + len(e.answer.Body)
		}
	}
	if total != l.bytes {
		t.Fatalf("bytes %d, entries hold %d", l.bytes, total)
	}
}

// hangingSource is countingSource whose reads, once hang is set, never answer: they wait for
// their context, as a read of a database that stopped answering without refusing does.
type hangingSource struct {
	*countingSource
	hang chan struct{} // closed: hang
}

func (h hangingSource) Statistics(ctx context.Context, q query.Query, now time.Time) (answers.Answer, error) {
	select {
	case <-h.hang:
		<-ctx.Done()
		return answers.Answer{}, ctx.Err()
	default:
	}
	return h.countingSource.Statistics(ctx, q, now)
}

// A database that stops answering fails each read after ReadTimeout, as unreachable: a cached
// answer is then served stale, an uncached one fails with the database's error, and nothing
// waits longer than the timeout.
func TestReadTimeoutIsUnreachable(t *testing.T) {
	src := hangingSource{countingSource: &countingSource{valid: time.Minute}, hang: make(chan struct{})}
	c := New(src, nil, Options{StaleIfError: time.Hour, ReadTimeout: 50 * time.Millisecond})
	ctx := context.Background()
	q := mustQuery(t, "period=day")
	first, err := c.Statistics(ctx, q, t0)
	if err != nil {
		t.Fatal(err)
	}
	close(src.hang)
	start := time.Now()
	a, err := c.Statistics(ctx, q, t0.Add(2*time.Minute))
	if err != nil || !a.Stale || string(a.Body) != string(first.Body) {
		t.Fatalf("%v stale %v", err, a.Stale)
	}
	if _, err := c.Statistics(ctx, mustQuery(t, "period=week"), t0); !errors.Is(err, answers.ErrDatabaseUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("never cached: %v, want the database unreachable (deadline)", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("two reads of a hung database took %v", d)
	}
}
