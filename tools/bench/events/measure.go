package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
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
	delivery    histogram       // the server's own commit (publication) to flush delays of the replies
	exact       []time.Duration // the same, exact, when the server keeps them (the bare server)
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
	forum := &server{name: "forum-svc", addr: e.svc.Addr, baseURL: e.svc.URL, key: e.superKey, pid: e.svc.Pid(),
		delays: &forumDelays{url: e.svc.URL + "/metrics"}}
	bare := &server{name: "bare Go SSE server", addr: addr, baseURL: "http://" + addr, key: "none", pid: p.Pid(),
		delays: bareDelays{url: "http://" + addr + "/delays"}}
	// Without -apart, the bare server's replies run beside as many to forum-svc, into the same
	// conversations at the same rate (its streams closed by then): both fan-outs are then measured
	// with the replies' work (forum-svc's and the database's) on the same cores.
	load := &server{name: "forum-svc (load beside the bare server)", baseURL: e.svc.URL, key: e.superKey, loadOnly: true}
	for _, sv := range []*server{forum, bare} {
		posted, beside := []*server{sv}, ""
		if sv == bare && !o.apart {
			posted, beside = append(posted, load), ", as many to forum-svc beside"
		}
		fmt.Printf("%s (pid %d): %d streams of %d users, then %d replies at %.0f/s%s ...\n", sv.name, sv.pid,
			o.streams, e.users, o.replies, o.rate, beside)
		err := sv.open(ctx, o)
		if err == nil {
			defer sv.streams.close()
			err = replyTo(ctx, posted, o, conversations(e.users))
		}
		if err == nil {
			err = sv.finish(ctx, o)
		}
		if err != nil {
			return r, fmt.Errorf("%s: %w", sv.name, err)
		}
	}
	r.forum, r.bare = forum.run, bare.run
	// The bare server's exact delays, in forum-svc's buckets: both quantiles are read alike.
	r.bare.delivery = bucket(r.forum.delivery.le, r.bare.exact)
	return r, nil
}

// serverDelays reads what a server measured itself of the latency phase: from the commit (the
// bare server: the publication) of each reply to its event's flush to each stream.
type serverDelays interface {
	begin(ctx context.Context) error
	end(ctx context.Context) (histogram, []time.Duration, error)
}

// forumDelays reads forum-svc's event_stream_delivery_seconds before and after.
type forumDelays struct {
	url    string
	before histogram
}

func (d *forumDelays) begin(ctx context.Context) (err error) {
	d.before, err = readHistogram(ctx, d.url, deliveryMetric)
	return err
}

func (d *forumDelays) end(ctx context.Context) (histogram, []time.Duration, error) {
	after, err := readHistogram(ctx, d.url, deliveryMetric)
	if err != nil {
		return histogram{}, nil, err
	}
	if len(after.le) == 0 {
		return histogram{}, nil, fmt.Errorf("%s: no %s: forum-svc handed no event over", d.url, deliveryMetric)
	}
	h, err := after.minus(d.before)
	return h, nil, err
}

// bareDelays takes the bare server's exact delays (GET /delays) before (dropped) and after.
type bareDelays struct{ url string }

func (d bareDelays) begin(ctx context.Context) error {
	_, err := d.take(ctx)
	return err
}

func (d bareDelays) end(ctx context.Context) (histogram, []time.Duration, error) {
	ds, err := d.take(ctx)
	return histogram{}, ds, err
}

func (d bareDelays) take(ctx context.Context) ([]time.Duration, error) {
	var b []byte
	err := stack.Get(ctx, d.url, func(body io.Reader) (err error) {
		b, err = io.ReadAll(body)
		return err
	})
	if err != nil {
		return nil, err
	}
	var out []time.Duration
	for f := range strings.FieldsSeq(string(b)) {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", d.url, f, err)
		}
		out = append(out, time.Duration(n))
	}
	sortDurations(out)
	return out, nil
}

// server is one of the two servers under measure, and its run.
type server struct {
	name, addr, baseURL, key string
	pid                      int
	delays                   serverDelays
	streams                  *streamSet
	sent                     []sentReply // warm-up and measured replies, for the check
	run                      serverRun
	loadOnly                 bool // replies posted for the load they make: no streams, nothing measured
}

// open opens the streams to the server and reads its resident set before and after.
func (sv *server) open(ctx context.Context, o options) error {
	sv.run = serverRun{streams: o.streams, replies: o.replies}
	if err := checkFDLimit(sv.pid, o.streams+fdMargin); err != nil {
		return err
	}
	time.Sleep(time.Second)
	before, err := stack.ReadMemory(sv.pid)
	if err != nil {
		return err
	}
	sv.run.rssBefore = before.RSS
	start := time.Now()
	if sv.streams, err = openStreams(ctx, sv.addr, sv.key, o.streams, o.perUser, o.opening); err != nil {
		return err
	}
	sv.run.openTime = time.Since(start)
	time.Sleep(3 * time.Second) // idle: what opening left behind settles
	idle, err := stack.ReadMemory(sv.pid)
	if err != nil {
		return err
	}
	sv.run.rssIdle = idle.RSS
	fmt.Printf("  %s: %d streams open in %s; RSS %s before, %s idle\n", sv.name, o.streams,
		sv.run.openTime.Round(time.Millisecond), stack.MiB(sv.run.rssBefore), stack.MiB(sv.run.rssIdle))
	return nil
}

// warmup is how many replies each server takes, and delivers, before the measured ones: one
// second's worth (each of forum-svc's pooled database connections prepares its statements at its
// first use, the heaps grow to their working size).
func warmup(o options) int { return max(int(o.rate), 50) }

// replyTo posts the warm-up replies, then, once their events arrived, the measured ones, to every
// server at once (each at o.rate, into the same conversations in the same order), and starts the
// servers' own measures in between (a loadOnly server's replies are only checked for errors).
func replyTo(ctx context.Context, servers []*server, o options, convs int64) error {
	for _, phase := range []struct {
		n       int
		measure bool
	}{{warmup(o), false}, {o.replies, true}} {
		if phase.measure {
			for _, sv := range servers {
				if sv.loadOnly {
					continue
				}
				if err := sv.delays.begin(ctx); err != nil {
					return fmt.Errorf("%s: %w", sv.name, err)
				}
			}
		}
		errs := make([]error, len(servers))
		var wg sync.WaitGroup
		for i, sv := range servers {
			wg.Go(func() {
				client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
				defer client.CloseIdleConnections()
				sent, err := postReplies(ctx, client, sv.baseURL, sv.key, phase.n, o.rate, convs)
				if sv.loadOnly {
					if err != nil {
						errs[i] = fmt.Errorf("%s: %w", sv.name, err)
					}
					return
				}
				if phase.measure {
					for _, r := range sent {
						sv.run.answerTimes = append(sv.run.answerTimes, r.answer.Sub(r.start))
					}
				}
				sv.sent = append(sv.sent, sent...)
				if err == nil {
					err = sv.awaitArrivals(ctx, o)
				}
				if err != nil {
					errs[i] = fmt.Errorf("%s: %w", sv.name, err)
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	return nil
}

// awaitArrivals waits (up to 30 s) until every reply sent so far reached every stream of its
// conversation once, and a little longer, so that duplicates, if any, arrive too.
func (sv *server) awaitArrivals(ctx context.Context, o options) error {
	want := int64(len(sv.sent) * 2 * o.perUser)
	deadline := time.Now().Add(30 * time.Second)
	for sv.streams.created.Load() < want && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	return ctx.Err()
}

// finish reads the server's own measure of the measured replies, closes the streams and checks
// what they read (warm-up replies included).
func (sv *server) finish(ctx context.Context, o options) error {
	run := &sv.run
	var err error
	if run.delivery, run.exact, err = sv.delays.end(ctx); err != nil {
		return err
	}
	sv.streams.close()
	run.ended = sv.streams.ended.Load()
	if v, ok := sv.streams.endErr.Load().(error); ok {
		run.endErr = v
	}
	run.check, run.upper, run.lower = checkArrivals(sv.sent, sv.streams.arrivals, sv.streams.user)
	sortDurations(run.answerTimes)
	fmt.Printf("  %s: %s; request start to arrival p50 %s p99 %s\n", sv.name, run.check, ms(pct(run.upper, 50)), ms(pct(run.upper, 99)))
	return ctx.Err()
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
