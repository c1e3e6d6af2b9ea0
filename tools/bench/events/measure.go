package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"forumstats.local/tools/stack"
)

// serverRun is what one server's run amounts to.
type serverRun struct {
	streams     int
	openTime    time.Duration // to open every stream
	rssBefore   int64         // the server's VmRSS before the streams opened
	rssIdle     int64         // and with them open and idle
	replies     int
	check       check
	ended       int64 // streams that ended before the bench closed them
	endErr      error
	upper       []time.Duration // request start to arrival, sorted
	lower       []time.Duration // answer to arrival (negative: the event came first), sorted
	answerTimes []time.Duration // the replies' request to answer, sorted
}

// perStream is the resident set a stream costs.
func (r serverRun) perStream() float64 {
	return float64(r.rssIdle-r.rssBefore) / float64(r.streams)
}

// results are forum-svc's run and the bare server's.
type results struct {
	forum, bare serverRun
}

func measure(ctx context.Context, e *benchEnv, o options) (results, error) {
	var r results
	var err error
	fmt.Printf("forum-svc: %d streams of %d users, then %d replies at %.0f/s ...\n", o.streams, e.users, o.replies, o.rate)
	if r.forum, err = runServer(ctx, e.svc.Addr, e.svc.URL, e.superKey, e.svc.Pid(), e.users, o); err != nil {
		return r, fmt.Errorf("forum-svc: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return r, err
	}
	addr, err := stack.FreeAddr()
	if err != nil {
		return r, err
	}
	p, err := stack.StartProc("bare-sse", exe, nil, bareServerArg, addr)
	if err != nil {
		return r, err
	}
	defer p.Stop(10 * time.Second)
	if err := stack.WaitHTTP("http://"+addr+"/healthz", http.StatusOK, 30*time.Second, p); err != nil {
		return r, err
	}
	fmt.Printf("bare Go SSE server (pid %d): the same streams and replies ...\n", p.Pid())
	if r.bare, err = runServer(ctx, addr, "http://"+addr, "none", p.Pid(), e.users, o); err != nil {
		return r, fmt.Errorf("bare server: %w", err)
	}
	return r, nil
}

// runServer opens the streams to one server, reads its resident set before and after, posts the
// replies, waits for their events and checks them.
func runServer(ctx context.Context, addr, baseURL, key string, pid, users int, o options) (serverRun, error) {
	run := serverRun{streams: o.streams, replies: o.replies}
	if err := checkFDLimit(pid, o.streams+fdMargin); err != nil {
		return run, err
	}
	time.Sleep(time.Second)
	before, err := stack.ReadMemory(pid)
	if err != nil {
		return run, err
	}
	run.rssBefore = before.RSS
	start := time.Now()
	s, err := openStreams(ctx, addr, key, o.streams, o.perUser, o.opening)
	if err != nil {
		return run, err
	}
	defer s.close()
	run.openTime = time.Since(start)
	time.Sleep(3 * time.Second) // idle: what opening left behind settles
	idle, err := stack.ReadMemory(pid)
	if err != nil {
		return run, err
	}
	run.rssIdle = idle.RSS
	fmt.Printf("  %d streams open in %s; RSS %s before, %s idle\n", o.streams, run.openTime.Round(time.Millisecond),
		stack.MiB(run.rssBefore), stack.MiB(run.rssIdle))
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	defer client.CloseIdleConnections()
	sent, err := postReplies(ctx, client, baseURL, key, o.replies, o.rate, conversations(users))
	if err != nil {
		return run, err
	}
	want := int64(len(sent) * 2 * o.perUser)
	deadline := time.Now().Add(30 * time.Second)
	for s.created.Load() < want && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // duplicates, if any, arrive too
	s.close()
	run.ended = s.ended.Load()
	if v, ok := s.endErr.Load().(error); ok {
		run.endErr = v
	}
	run.check, run.upper, run.lower = checkArrivals(sent, s.arrivals, s.user)
	for _, r := range sent {
		run.answerTimes = append(run.answerTimes, r.answer.Sub(r.start))
	}
	sortDurations(run.answerTimes)
	fmt.Printf("  %s; request start to arrival p50 %s p99 %s\n", run.check, ms(pct(run.upper, 50)), ms(pct(run.upper, 99)))
	return run, ctx.Err()
}

// check counts what the streams read against what the replies should have sent: each reply's
// message_created once on every stream of both participants.
type check struct {
	Expected, Unique int
	Lost             int // expected (stream, message) pairs never read
	Duplicates       int // pairs read more than once
	Unexpected       int // messages read by a stream of a user who is not a participant
	Examples         []string
}

func (c check) OK() bool {
	return c.Expected > 0 && c.Unique == c.Expected && c.Lost == 0 && c.Duplicates == 0 && c.Unexpected == 0
}

func (c check) String() string {
	s := fmt.Sprintf("%d of %d (stream, message) pairs, %d lost, %d twice, %d unexpected", c.Unique, c.Expected, c.Lost, c.Duplicates, c.Unexpected)
	if len(c.Examples) > 0 {
		s += " (" + strings.Join(c.Examples, "; ") + ")"
	}
	return s
}

// checkArrivals checks arrivals (per stream; user maps a stream to its user) against sent and
// returns the sorted latencies of the first arrival of each expected pair: from the reply's
// request start (upper bound of commit to arrival) and from its answer (lower bound).
func checkArrivals(sent []sentReply, arrivals [][]arrival, user func(int) int64) (check, []time.Duration, []time.Duration) {
	var c check
	byID := make(map[int64]*sentReply, len(sent))
	perConv := map[int64]int{}
	for i := range sent {
		byID[sent[i].id] = &sent[i]
		perConv[sent[i].conv]++
	}
	note := func(f string, a ...any) {
		if len(c.Examples) < 3 {
			c.Examples = append(c.Examples, fmt.Sprintf(f, a...))
		}
	}
	var upper, lower []time.Duration
	for i, as := range arrivals {
		u := user(i)
		conv := convOf(u)
		c.Expected += perConv[conv]
		seen := make(map[int64]bool, len(as))
		for _, a := range as {
			r, ok := byID[a.msg]
			if !ok || r.conv != conv {
				c.Unexpected++
				note("stream %d of user %d read message %d", i, u, a.msg)
				continue
			}
			if seen[a.msg] {
				c.Duplicates++
				note("stream %d read message %d twice", i, a.msg)
				continue
			}
			seen[a.msg] = true
			c.Unique++
			upper = append(upper, a.at.Sub(r.start))
			lower = append(lower, a.at.Sub(r.answer))
		}
		if missing := perConv[conv] - len(seen); missing > 0 {
			c.Lost += missing
			note("stream %d of user %d missed %d of conversation %d's %d replies", i, u, missing, conv, perConv[conv])
		}
	}
	sortDurations(upper)
	sortDurations(lower)
	return c, upper, lower
}
