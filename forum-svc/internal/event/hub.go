package event

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Log is the durable per-user event log the streams read (the store implements it). Every read is
// on the primary: the log is the truth; the hub's hand-overs and wake-ups only save or prompt
// reads of it.
type Log interface {
	// EventsAfter returns the user's events after id, oldest first, at most limit.
	EventsAfter(ctx context.Context, userID, after int64, limit int) ([]Entry, error)
	// EventBounds returns the user's oldest event kept (0: none) and last event id (0: none ever).
	EventBounds(ctx context.Context, userID int64) (oldest, last int64, err error)
	// LastEventIDs returns the last event id of each of the users that has one.
	LastEventIDs(ctx context.Context, userIDs []int64) (map[int64]int64, error)
}

// HubOptions configures a Hub.
type HubOptions struct {
	// Redis, when set, carries the wake-ups between replicas over pub/sub on Channel.
	Redis   *redis.Client
	Channel string
	// PollEvery is how often the hub reads the last event ids of the users it streams to while
	// it has no working Redis subscription (none configured, or Redis lost): the replica then keeps
	// delivering what other replicas wrote. SafetyPollEvery is the same while Redis works (a
	// published wake-up may be lost with a connection).
	PollEvery, SafetyPollEvery time.Duration
	Logger                     *slog.Logger
}

// Defaults of HubOptions.
const (
	DefaultChannel         = "forum:events"
	DefaultPollEvery       = time.Second
	DefaultSafetyPollEvery = 15 * time.Second
)

// Hub wakes the streams of a user when the user has new events: at once for the writes of this
// process, over Redis pub/sub for those of other replicas, and by polling the log otherwise. A
// wake-up hands the events over when it can (deliver.go); a stream sends them only when they
// follow its cursor, and otherwise reads the log after it, so a wake-up lost, doubled or late
// loses or doubles no event.
type Hub struct {
	log  Log
	opts HubOptions

	mu   sync.Mutex
	subs map[int64]map[*Sub]struct{}

	origin    string // names this hub's pub/sub messages
	closed    chan struct{}
	closeOnce sync.Once
	publish   chan []Change // committed changes to announce to the other replicas
	handOvers chan struct{} // bounds the hand-overs of the other replicas' changes run at once
	redisUp   atomic.Bool   // the subscription is working
}

// Sub is one stream's subscription to its user's wake-ups.
type Sub struct {
	userID int64
	wake   chan struct{} // holds at most one pending wake-up
	cursor atomic.Int64  // the last event id the stream has sent
	box    inbox         // what the wake-ups brought
	render Renderer      // the stream's renderer, which the hand-over renders with (nil: none)

	// wmu guards the stream's writer, cursor and unread count once st is set (Serve, after the
	// stream's head): its goroutine holds it while it writes, and a hand-over that writes inline
	// (deliver.go) takes it only when it is free.
	wmu sync.Mutex
	st  *stream // nil: not open yet, or no inline writes (a connection that is not Direct)
}

// NewHub returns a hub over log. Run it for Redis and polling.
func NewHub(log Log, opts HubOptions) *Hub {
	if opts.Channel == "" {
		opts.Channel = DefaultChannel
	}
	if opts.PollEvery <= 0 {
		opts.PollEvery = DefaultPollEvery
	}
	if opts.SafetyPollEvery <= 0 {
		opts.SafetyPollEvery = DefaultSafetyPollEvery
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	var origin [8]byte
	_, _ = rand.Read(origin[:]) // never fails (crypto/rand)
	return &Hub{log: log, opts: opts, origin: hex.EncodeToString(origin[:]), subs: map[int64]map[*Sub]struct{}{}, closed: make(chan struct{}),
		publish: make(chan []Change, 1024), handOvers: make(chan struct{}, remoteHandOvers)}
}

// Subscribe registers a stream of userID.
func (h *Hub) Subscribe(userID int64) *Sub { return h.subscribe(userID, nil) }

// subscribe registers a stream of userID whose events render with r (nil: the stream reads and
// renders the log itself).
func (h *Hub) subscribe(userID int64, r Renderer) *Sub {
	s := &Sub{userID: userID, wake: make(chan struct{}, 1), render: r}
	h.mu.Lock()
	m := h.subs[userID]
	if m == nil {
		m = map[*Sub]struct{}{}
		h.subs[userID] = m
	}
	m[s] = struct{}{}
	h.mu.Unlock()
	return s
}

// Unsubscribe removes the stream's subscription.
func (h *Hub) Unsubscribe(s *Sub) {
	h.mu.Lock()
	if m := h.subs[s.userID]; m != nil {
		delete(m, s)
		if len(m) == 0 {
			delete(h.subs, s.userID)
		}
	}
	h.mu.Unlock()
}

// Streams is the number of streams subscribed.
func (h *Hub) Streams() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, m := range h.subs {
		n += len(m)
	}
	return n
}

// wakeUsers wakes every stream of the users, without waiting: a stream already woken keeps its
// one pending wake-up.
func (h *Hub) wakeUsers(users []int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, u := range users {
		for s := range h.subs[u] {
			s.wakeToRead()
		}
	}
}

// Prepare readies the hand-over of a write's changes before its commit (store.AddCommitted) and
// returns what to run once the write has committed: hand their events to this process's streams of
// their users, rendered once per user and renderer (or wake the streams to read the log), and
// announce the changes to the other replicas (encodeMessage). A write that rolls back runs
// nothing: no stream hears of it.
//
// When the write needs at most maxTxRenders renderings (a conversation of a few users), they are
// made here, with ctx (the store reads through the write's transaction in it, so the objects are
// as the write leaves them): the commit-to-stream path then reads nothing. More (a large
// conversation watched by many) are made after the commit, in parallel: inside the transaction
// they would hold the write's locks (its users' event counters, which every write to those users
// waits for) for as many renderings.
func (h *Hub) Prepare(ctx context.Context, changes []Change) (committed func()) {
	plan := h.plan(changes)
	inTx := plan != nil && len(plan.keys) <= maxTxRenders
	if inTx {
		plan.render(ctx, false)
	}
	return func() {
		at := time.Now()
		switch {
		case plan == nil:
			var users []int64
			for _, c := range changes {
				users = append(users, c.UserIDs...)
			}
			h.wakeUsers(users)
		case inTx:
			h.deliver(plan, at)
		default:
			plan.render(context.Background(), true)
			h.deliver(plan, at)
		}
		if h.opts.Redis == nil {
			return
		}
		select {
		case h.publish <- changes:
		default: // the publisher is behind (Redis slow or lost): the other replicas poll
		}
	}
}

// maxTxRenders bounds the renderings a write makes inside its transaction (Prepare): a reply in a
// conversation of two, each with streams of two views, needs four.
const maxTxRenders = 4

// Subscribed reports whether the hub's Redis subscription works (false without Redis).
func (h *Hub) Subscribed() bool { return h.redisUp.Load() }

// Close ends every stream (the server is stopping). Run ends with it.
func (h *Hub) Close() { h.closeOnce.Do(func() { close(h.closed) }) }

// Closed is closed when the hub is.
func (h *Hub) Closed() <-chan struct{} { return h.closed }

// Run publishes and receives the wake-ups over Redis (when configured) and polls the log, until
// ctx is done or the hub is closed; the hub is closed when it returns.
func (h *Hub) Run(ctx context.Context) {
	defer h.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-h.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	var wg sync.WaitGroup
	if h.opts.Redis != nil {
		wg.Go(func() { h.publishLoop(ctx) })
		wg.Go(func() { h.subscribeLoop(ctx) })
	}
	wg.Go(func() { h.pollLoop(ctx) })
	wg.Wait()
}

func (h *Hub) publishLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case changes := <-h.publish:
			// Coalesce what is waiting into one message.
			for more := true; more; {
				select {
				case c := <-h.publish:
					changes = append(changes, c...)
				default:
					more = false
				}
			}
			if !h.redisUp.Load() {
				continue // the others poll while Redis is lost
			}
			pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			err := h.opts.Redis.Publish(pctx, h.opts.Channel, encodeMessage(h.origin, changes, MaxMessage)).Err()
			cancel()
			if err != nil && ctx.Err() == nil {
				h.opts.Logger.Debug("publish event wake-up failed", "err", err)
			}
		}
	}
}

// subscribeLoop receives the other replicas' wake-ups. Each time the subscription is (re)made,
// the hub polls once: wake-ups published while it was down are lost with it.
func (h *Hub) subscribeLoop(ctx context.Context) {
	for ctx.Err() == nil {
		ps := h.opts.Redis.Subscribe(ctx, h.opts.Channel)
		for ctx.Err() == nil {
			msg, err := ps.ReceiveTimeout(ctx, 5*time.Second)
			if err != nil {
				if isTimeout(err) {
					// No message within the timeout: check that the connection still answers.
					if err := ps.Ping(ctx); err == nil {
						continue
					}
				}
				if h.redisUp.Swap(false) {
					h.opts.Logger.Warn("event wake-ups over Redis lost: polling the event log", "err", err)
				}
				break
			}
			switch m := msg.(type) {
			case *redis.Subscription:
				if !h.redisUp.Swap(true) {
					h.poll(ctx)
				}
			case *redis.Message:
				h.received(m.Payload)
			}
		}
		_ = ps.Close()
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func isTimeout(err error) bool {
	type timeout interface{ Timeout() bool }
	t, ok := err.(timeout)
	return ok && t.Timeout()
}

func (h *Hub) pollLoop(ctx context.Context) {
	last := time.Now()
	tick := time.NewTicker(h.opts.PollEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if h.redisUp.Load() && now.Sub(last) < h.opts.SafetyPollEvery {
				continue
			}
			last = now
			h.poll(ctx)
		}
	}
}

// poll wakes the streams whose user has events after the stream's cursor.
func (h *Hub) poll(ctx context.Context) {
	h.mu.Lock()
	users := make([]int64, 0, len(h.subs))
	for u := range h.subs {
		users = append(users, u)
	}
	h.mu.Unlock()
	if len(users) == 0 {
		return
	}
	last, err := h.log.LastEventIDs(ctx, users)
	if err != nil {
		if ctx.Err() == nil {
			h.opts.Logger.Warn("poll the event log", "err", err)
		}
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for u, id := range last {
		for s := range h.subs[u] {
			if s.cursor.Load() < id {
				s.wakeToRead()
			}
		}
	}
}

// encodeUsers is a wake-up message: the user ids in decimal, separated by commas.
func encodeUsers(users []int64) string {
	var b []byte
	for i, u := range users {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, u, 10)
	}
	return string(b)
}

// decodeUsers reads encodeUsers's message, skipping what is no id.
func decodeUsers(s string) []int64 {
	var out []int64
	for f := range strings.SplitSeq(s, ",") {
		if id, err := strconv.ParseInt(f, 10, 64); err == nil && id > 0 {
			out = append(out, id)
		}
	}
	return out
}
