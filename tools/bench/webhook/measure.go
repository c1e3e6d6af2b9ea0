package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"

	"forumstats.local/tools/stack"
)

// phase is what one phase's deliveries amount to.
type phase struct {
	replies       int
	repliesPerSec float64
	check         stack.HookCheck
	// latencies from each delivery's creation to its first receipt, sorted
	latencies []time.Duration
	// deliveriesPerSec: delivered messages over the time from the first reply to the last receipt
	deliveriesPerSec float64
}

// results are the three phases and the ceiling.
type results struct {
	latency, throughput, outage phase
	ceilingPerSec               float64
	ceilingSent                 int
	// recovery is the time from the receiver's return to the last delivery's receipt; backlog
	// how many deliveries were waiting when it came back.
	recovery time.Duration
	backlog  int
	// attemptsRefused counts the attempts the receiver saw refused (none while down: nothing
	// listened) and the bad signatures among all.
	badSignatures int64
}

func measure(ctx context.Context, e *benchEnv, o options) (results, error) {
	var r results
	var err error
	fmt.Printf("latency: %d replies at %.0f/s ...\n", o.replies, o.rate)
	if r.latency, err = runPhase(ctx, e, o.replies, o.rate, o.clients, 60*time.Second); err != nil {
		return r, fmt.Errorf("latency phase: %w", err)
	}
	fmt.Printf("throughput: %d replies by %d clients as fast as they go ...\n", o.replies, o.clients)
	if r.throughput, err = runPhase(ctx, e, o.replies, 0, o.clients, 120*time.Second); err != nil {
		return r, fmt.Errorf("throughput phase: %w", err)
	}
	if r.ceilingPerSec, r.ceilingSent, err = ceiling(ctx, e, o.replies); err != nil {
		return r, fmt.Errorf("ceiling: %w", err)
	}
	fmt.Printf("outage: the receiver refuses connections for %s while %.0f replies/s go on ...\n", o.outage, o.outageRate)
	if r.outage, r.recovery, r.backlog, err = outage(ctx, e, o); err != nil {
		return r, fmt.Errorf("outage phase: %w", err)
	}
	_, r.badSignatures = e.recv.Refused()
	return r, nil
}

// runPhase writes n replies (paced at rate a second, or as fast as clients go when rate is 0),
// waits until every delivery has arrived or timeout passes, and returns the phase's figures.
func runPhase(ctx context.Context, e *benchEnv, n int, rate float64, clients int, timeout time.Duration) (phase, error) {
	from := len(e.recv.Received())
	start := time.Now()
	written, err := writeReplies(ctx, e, n, rate, clients)
	if err != nil {
		return phase{}, err
	}
	p := phase{replies: n, repliesPerSec: float64(n) / time.Since(start).Seconds()}
	got := waitDelivered(ctx, e, written, from, timeout)
	p.check = stack.CheckHooks(written, got)
	if p.check.Unique > 0 {
		p.deliveriesPerSec = float64(p.check.Unique) / p.check.Last.Sub(start).Seconds()
	}
	if p.latencies, err = latencies(ctx, e, got); err != nil {
		return p, err
	}
	return p, nil
}

// writeReplies posts n replies from clients clients, reply i into conversation i modulo their
// number, at rate a second (0: unpaced), and returns the messages written (id → conversation).
func writeReplies(ctx context.Context, e *benchEnv, n int, rate float64, clients int) (map[int64]int64, error) {
	var next atomic.Int64
	var mu sync.Mutex
	written := make(map[int64]int64, n)
	errs := make(chan error, clients)
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if rate > 0 {
					if d := time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))); d > 0 {
						time.Sleep(d)
					}
				}
				conv := e.convs[i%len(e.convs)]
				id, err := stack.Reply(e.client, e.svc.URL, e.fx.UserKey, conv, "Reply "+strconv.Itoa(i)+" of the webhook benchmark.")
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				written[id] = conv
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	return written, ctx.Err()
}

// waitDelivered polls the receiver until every written message has arrived since receipt from,
// or timeout passes, and returns the receipts since from.
func waitDelivered(ctx context.Context, e *benchEnv, written map[int64]int64, from int, timeout time.Duration) []stack.HookDelivery {
	deadline := time.Now().Add(timeout)
	for {
		got := e.recv.Received()[from:]
		if stack.CheckHooks(written, got).Unique == len(written) || time.Now().After(deadline) || ctx.Err() != nil {
			// A moment more, so that a duplicate in flight is counted too.
			time.Sleep(500 * time.Millisecond)
			return e.recv.Received()[from:]
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// latencies are the times from each delivery's creation (created_at, written in the reply's
// transaction) to its first receipt, sorted.
func latencies(ctx context.Context, e *benchEnv, got []stack.HookDelivery) ([]time.Duration, error) {
	conn, err := sql.Open("pgx", e.dbURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, `SELECT delivery_id, created_at FROM webhook_deliveries WHERE webhook_id = $1`, e.webhookID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	created := map[string]time.Time{}
	for rows.Next() {
		var id, ms int64
		if err := rows.Scan(&id, &ms); err != nil {
			return nil, err
		}
		created["msg_"+strconv.FormatInt(id, 10)] = time.UnixMilli(ms)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []time.Duration
	for _, d := range got {
		c, ok := created[d.ID]
		if !ok || seen[d.ID] {
			continue
		}
		seen[d.ID] = true
		out = append(out, d.At.Sub(c))
	}
	slices.Sort(out)
	return out, nil
}

// ceiling POSTs the bodies forum-svc sent in the throughput phase again, signed the same way
// (webhook-ids of their own), to the same receiver from concurrency senders over a plain Go
// client: the deliveries a second with no database in the way.
func ceiling(ctx context.Context, e *benchEnv, n int) (float64, int, error) {
	conn, err := sql.Open("pgx", e.dbURL)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, `SELECT payload FROM webhook_deliveries WHERE webhook_id = $1 AND payload IS NOT NULL
ORDER BY delivery_id DESC LIMIT $2`, e.webhookID, n)
	if err != nil {
		return 0, 0, err
	}
	var bodies [][]byte
	for rows.Next() {
		var b string
		if err := rows.Scan(&b); err != nil {
			rows.Close()
			return 0, 0, err
		}
		bodies = append(bodies, []byte(b))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, 0, err
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(e.secret, "whsec_"))
	if err != nil {
		return 0, 0, err
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: concurrency}}
	var next, failed atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(bodies) || ctx.Err() != nil {
					return
				}
				id := "ceiling_" + strconv.Itoa(i)
				ts := strconv.FormatInt(time.Now().Unix(), 10)
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.recv.URL(), bytes.NewReader(bodies[i]))
				if err != nil {
					failed.Add(1)
					continue
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("webhook-id", id)
				req.Header.Set("webhook-timestamp", ts)
				req.Header.Set("webhook-signature", stack.HookSignature(key, id, ts, bodies[i]))
				resp, err := client.Do(req)
				if err != nil || resp.StatusCode/100 != 2 {
					failed.Add(1)
				}
				if err == nil {
					resp.Body.Close()
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if f := failed.Load(); f > 0 {
		return 0, 0, fmt.Errorf("%d of %d ceiling requests failed", f, len(bodies))
	}
	return float64(len(bodies)) / elapsed.Seconds(), len(bodies), nil
}

// outage takes the receiver down for o.outage while replies go on, brings it back, and waits
// for the backlog (at most twice the recovery target, so that a miss is measured, not cut).
func outage(ctx context.Context, e *benchEnv, o options) (phase, time.Duration, int, error) {
	from := len(e.recv.Received())
	if err := e.recv.SetMode(stack.HookDown); err != nil {
		return phase{}, 0, 0, err
	}
	n := int(o.outage.Seconds() * o.outageRate)
	start := time.Now()
	written, err := writeReplies(ctx, e, n, o.outageRate, 2)
	if err != nil {
		return phase{}, 0, 0, err
	}
	if d := time.Until(start.Add(o.outage)); d > 0 {
		time.Sleep(d)
	}
	backlog := len(written) - stack.CheckHooks(written, e.recv.Received()[from:]).Unique
	back := time.Now()
	if err := e.recv.SetMode(stack.HookUp); err != nil {
		return phase{}, 0, 0, err
	}
	got := waitDelivered(ctx, e, written, from, 2*o.recovery)
	p := phase{replies: n, repliesPerSec: o.outageRate, check: stack.CheckHooks(written, got)}
	recovery := p.check.Last.Sub(back)
	if p.check.Unique < len(written) {
		recovery = time.Since(back) // not all arrived: at least this long
	}
	return p, recovery, backlog, nil
}
