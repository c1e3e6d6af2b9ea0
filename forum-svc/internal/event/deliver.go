package event

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"
)

// The hand-over of committed events: a write's events are rendered once for each of their users
// who has a stream in this process (once per distinct renderer of the user's streams), right
// after the commit, and the bytes go to that user's streams, which send them as they are when they follow the last id sent. A stream that finds
// anything else (a gap, an overflow, a wake-up from elsewhere) reads the log after its last id,
// which stays the truth: the hand-over only saves the reads.

// rendered is one write's events for one user, as the user sees them, shared (read only) by the
// user's streams.
type rendered struct {
	events []renderedEvent
	// unread is the user's unread_count data after the write, when its events may change the
	// number (hasUnread).
	unread    []byte
	unreadN   int64
	hasUnread bool
	// committed is when the write committed in this process (zero: another replica's write), from
	// which the streams measure their delivery (observeDelivery).
	committed time.Time
}

type renderedEvent struct {
	id   int64
	typ  string
	data []byte
	ok   bool // false: the user can no longer see the object; the id is skipped
}

// inboxSize bounds a stream's pending hand-overs: beyond, they are dropped for one read of the log.
const inboxSize = 8

// inbox is what a stream was handed since it last looked.
type inbox struct {
	mu      sync.Mutex
	batches []*rendered
	readLog bool // a wake-up carried no events, or the inbox overflowed: read the log
}

func (b *inbox) push(r *rendered) {
	b.mu.Lock()
	if r == nil || b.readLog || len(b.batches) == inboxSize {
		b.readLog, b.batches = true, nil
	} else {
		b.batches = append(b.batches, r)
	}
	b.mu.Unlock()
}

// pending reports whether the inbox holds anything.
func (b *inbox) pending() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.readLog || len(b.batches) > 0
}

func (b *inbox) take() (batches []*rendered, readLog bool) {
	b.mu.Lock()
	batches, readLog = b.batches, b.readLog
	b.batches, b.readLog = nil, false
	b.mu.Unlock()
	return batches, readLog
}

// renderKey names one rendering of a write's events: a user, as one of their streams' renderers
// shows the objects (streams of the same user may differ, e.g. by their key's scopes).
type renderKey struct {
	userID int64
	r      Renderer
}

// renderTimeout bounds the rendering of one write's events: past it, the streams read the log.
const renderTimeout = 5 * time.Second

// renderParallel bounds the renderings of one write run at once.
const renderParallel = 4

// handOver renders the changes' events once for each user and renderer of the streams here, and
// hands the bytes to those streams. It returns false when the changes carry no ids (no event log
// recorder): the streams are then to be woken to read the log. committed is when the write
// committed here (zero for another replica's).
func (h *Hub) handOver(changes []Change, committed time.Time) bool {
	plan := h.plan(changes)
	if plan == nil {
		return false
	}
	plan.render(context.Background(), true)
	h.deliver(plan, committed)
	return true
}

// handOverPlan is a write's events rendered for the streams here.
type handOverPlan struct {
	perUser map[int64][]Entry
	keys    []renderKey
	out     []*rendered // by keys; nil: the streams of that key read the log
}

// plan collects the changes' events for the users with a stream here, and the renderings they
// need (one per user and renderer). It returns nil when the changes carry no ids (no event log
// recorder): the streams are then to be woken to read the log.
func (h *Hub) plan(changes []Change) *handOverPlan {
	p := &handOverPlan{perUser: map[int64][]Entry{}}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range changes {
		if len(c.EventIDs) != len(c.UserIDs) {
			return nil
		}
		for i, u := range c.UserIDs {
			subs := h.subs[u]
			if len(subs) == 0 {
				continue
			}
			if _, seen := p.perUser[u]; !seen {
				for s := range subs {
					if k := (renderKey{u, s.render}); s.render != nil && !slices.Contains(p.keys, k) {
						p.keys = append(p.keys, k)
					}
				}
			}
			p.perUser[u] = append(p.perUser[u], Entry{ID: c.EventIDs[i], Type: c.Type, ConversationID: c.ConversationID,
				MessageID: c.MessageID, ActorID: c.ActorID, At: c.At})
		}
	}
	p.out = make([]*rendered, len(p.keys))
	return p
}

// render renders p's events with ctx bounded by renderTimeout, up to renderParallel at once when
// parallel (ctx then must allow concurrent reads: not a transaction's), one after the other
// otherwise. A rendering that fails leaves its streams to read the log.
func (p *handOverPlan) render(ctx context.Context, parallel bool) {
	if len(p.keys) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, renderTimeout)
	defer cancel()
	if !parallel || len(p.keys) == 1 {
		for i, k := range p.keys {
			p.out[i] = renderFor(ctx, k.r, k.userID, p.perUser[k.userID])
		}
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, renderParallel)
	for i, k := range p.keys {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			p.out[i] = renderFor(ctx, k.r, k.userID, p.perUser[k.userID]) // nil: the streams read the log
		})
	}
	wg.Wait()
}

// deliver hands p's renderings to the streams of their users; committed (zero: unknown) is kept
// with them for the delivery metric.
func (h *Hub) deliver(p *handOverPlan, committed time.Time) {
	for _, r := range p.out {
		if r != nil {
			r.committed = committed
		}
	}
	var direct []handed
	h.mu.Lock()
	for u := range p.perUser {
		for s := range h.subs[u] {
			// A stream subscribed since, or whose rendering failed, reads the log (nil).
			var r *rendered
			if i := slices.Index(p.keys, renderKey{u, s.render}); i >= 0 && s.render != nil {
				r = p.out[i]
			}
			if r != nil && len(direct) < maxInline {
				direct = append(direct, handed{s, r})
				continue
			}
			s.box.push(r)
			s.signal()
		}
	}
	h.mu.Unlock()
	for _, d := range direct {
		if !d.s.writeInline(d.r) {
			d.s.box.push(d.r)
			d.s.signal()
		}
	}
}

// handed is a rendering for one stream.
type handed struct {
	s *Sub
	r *rendered
}

// maxInline bounds the streams a hand-over writes to itself, in the writing goroutine (a reply's
// request): the rest are woken to write their own.
const maxInline = 8

// inlineTimeout bounds an inline write: what the client's socket cannot take by then is left to
// the stream's goroutine.
const inlineTimeout = time.Millisecond

// writeInline writes r to the stream from the calling goroutine, right away, when the stream is
// open on a direct connection, idle (its lock free, nothing waiting in its inbox) and r follows
// the last id it sent; it reports whether r was handled (written, or sent already). Otherwise the
// stream's goroutine is to take it: the goroutine may wait for a core behind the writes in
// progress, the inline write does not. An inline write the client cannot take at once leaves the
// rest to the stream's goroutine; one that fails leaves the stream to find its connection broken.
func (s *Sub) writeInline(r *rendered) bool {
	if !s.wmu.TryLock() {
		return false
	}
	defer s.wmu.Unlock()
	st := s.st
	if st == nil || st.done || st.failed != nil || s.box.pending() {
		return false
	}
	next, applied, gap := applyRendered(&st.w, st.cursor, r)
	if gap {
		return false
	}
	if !applied {
		return true // sent already
	}
	st.cursor = next
	s.cursor.Store(next)
	if r.hasUnread && r.unreadN != st.unread {
		st.unread = r.unreadN
		st.w.event(next, TypeUnreadCount, r.unread)
	}
	left, err := st.w.tryFlush(inlineTimeout)
	switch {
	case err != nil:
		st.failed = err // the stream's goroutine ends with it
		s.signal()
	case left:
		s.signal()
	case !r.committed.IsZero():
		observeDelivery(r.committed)
	}
	return true
}

// renderFor renders a user's events of one write, nil when it fails.
func renderFor(ctx context.Context, r Renderer, userID int64, entries []Entry) *rendered {
	out := &rendered{events: make([]renderedEvent, len(entries))}
	for i, e := range entries {
		data, ok, err := r.Render(ctx, userID, e)
		if err != nil {
			return nil
		}
		out.events[i] = renderedEvent{id: e.ID, typ: e.Type, data: data, ok: ok}
	}
	if changesUnread(entries) {
		data, n, err := r.Unread(ctx, userID)
		if err != nil {
			return nil
		}
		out.unread, out.unreadN, out.hasUnread = data, n, true
	}
	return out
}

// signal wakes the stream, without waiting: a stream already woken keeps its one pending wake-up.
func (s *Sub) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// wakeToRead wakes the stream to read the log.
func (s *Sub) wakeToRead() {
	s.box.push(nil)
	s.signal()
}

// The other replicas' changes. A pub/sub message is three lines: the publishing hub's origin (a
// random id, so that a hub skips its own messages: its streams had the changes at the commit), the
// users' ids in decimal, separated by commas, and, when the message stays within MaxMessage bytes,
// the changes with their event ids in JSON: the receiving replica then hands them over as it does
// its own (one rendering per user and view of its streams, no read of the log per stream). A
// message without them, or whose changes do not decode, wakes the users' streams to read the log;
// one of a single line is the users' ids alone.

// MaxMessage bounds a pub/sub message with its changes: past it, the message names the users only.
const MaxMessage = 32 << 10

// remoteHandOvers bounds the other replicas' writes handed over at once; past it, the streams
// read the log.
const remoteHandOvers = 8

// wireChange is a Change in a pub/sub message.
type wireChange struct {
	Type           string  `json:"t"`
	ConversationID int64   `json:"c,omitempty"`
	MessageID      int64   `json:"m,omitempty"`
	ActorID        int64   `json:"a,omitempty"`
	At             int64   `json:"at,omitempty"`
	UserIDs        []int64 `json:"u"`
	EventIDs       []int64 `json:"e"`
}

// encodeMessage is origin's pub/sub message of changes, at most limit bytes with them.
func encodeMessage(origin string, changes []Change, limit int) string {
	var users []int64
	withIDs := true
	wire := make([]wireChange, len(changes))
	for i, c := range changes {
		users = append(users, c.UserIDs...)
		withIDs = withIDs && len(c.EventIDs) == len(c.UserIDs)
		wire[i] = wireChange{Type: c.Type, ConversationID: c.ConversationID, MessageID: c.MessageID, ActorID: c.ActorID,
			At: c.At, UserIDs: c.UserIDs, EventIDs: c.EventIDs}
	}
	head := origin + "\n" + encodeUsers(users)
	if !withIDs {
		return head
	}
	body, err := json.Marshal(wire)
	if err != nil || len(head)+1+len(body) > limit {
		return head
	}
	return head + "\n" + string(body)
}

// decodeMessage reads encodeMessage's message: its origin, the users to wake, and the changes
// when it carries them whole (nil otherwise).
func decodeMessage(s string) (origin string, users []int64, changes []Change) {
	lines := strings.SplitN(s, "\n", 3)
	if len(lines) == 1 {
		return "", decodeUsers(lines[0]), nil
	}
	origin, users = lines[0], decodeUsers(lines[1])
	if len(lines) == 2 {
		return origin, users, nil
	}
	var wire []wireChange
	if json.Unmarshal([]byte(lines[2]), &wire) != nil {
		return origin, users, nil
	}
	changes = make([]Change, len(wire))
	for i, w := range wire {
		if len(w.UserIDs) != len(w.EventIDs) || !slices.Contains(Types, w.Type) {
			return origin, users, nil
		}
		changes[i] = Change{Type: w.Type, ConversationID: w.ConversationID, MessageID: w.MessageID, ActorID: w.ActorID,
			At: w.At, UserIDs: w.UserIDs, EventIDs: w.EventIDs}
	}
	return origin, users, changes
}

// received takes another replica's message: it hands its changes over in a goroutine of their
// own (rendering reads the database; the subscription goes on receiving), or wakes the users'
// streams to read the log.
func (h *Hub) received(payload string) {
	if origin, _, _ := strings.Cut(payload, "\n"); origin == h.origin {
		return // this hub's own: its streams had the changes at the commit
	}
	_, users, changes := decodeMessage(payload)
	if changes == nil {
		h.wakeUsers(users)
		return
	}
	select {
	case h.handOvers <- struct{}{}:
		go func() {
			defer func() { <-h.handOvers }()
			if !h.handOver(changes, time.Time{}) {
				h.wakeUsers(users)
			}
		}()
	default:
		h.wakeUsers(users)
	}
}
