package event

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// Renderer renders a user's events as the API shows the objects to that user. Its dynamic type
// must be comparable, and equal renderers render alike: a committed write's events are rendered
// once for each user and distinct renderer of the user's streams (in the writing goroutine, with a
// context of its own: what the rendering depends on is the renderer's, not the context's).
type Renderer interface {
	// Render returns the event's data (one line of JSON); ok is false when the user can no longer
	// see its object (they left the conversation, or it is gone): the event is skipped.
	Render(ctx context.Context, userID int64, e Entry) (data []byte, ok bool, err error)
	// Unread renders the user's unread_count data and the number it holds.
	Unread(ctx context.Context, userID int64) (data []byte, unread int64, err error)
}

// Conn is the client's connection as a stream writes to it. A Conn that also has a Direct() bool
// method answering true writes straight to the client's socket, and may be written from another
// goroutine while the stream's lock is held: a hand-over then writes to it inline (deliver.go).
type Conn interface {
	// Start sends the answer's head, once the stream has what it needs: an error before it is
	// still the caller's to answer.
	Start()
	Write(p []byte) (int, error)
	Flush() error
	// SetWriteDeadline bounds the next writes and flush: a client that does not take them in time
	// is cut off.
	SetWriteDeadline(t time.Time) error
}

// StreamOptions configures a stream.
type StreamOptions struct {
	Heartbeat    time.Duration // pause between two heartbeats while nothing else is sent
	Retry        time.Duration // the reconnection delay sent to the client (retry:)
	Batch        int           // events read from the log at a time
	WriteTimeout time.Duration // how long the client may take to take a batch
	// Check runs every CheckEvery: an error ends the stream (the API key was deactivated).
	Check      func(ctx context.Context) error
	CheckEvery time.Duration
}

// Defaults of StreamOptions.
const (
	DefaultHeartbeat    = 20 * time.Second
	DefaultRetry        = 3 * time.Second
	DefaultBatch        = 100
	DefaultWriteTimeout = 10 * time.Second
	DefaultCheckEvery   = 10 * time.Second
)

func (o *StreamOptions) defaults() {
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.Retry <= 0 {
		o.Retry = DefaultRetry
	}
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.CheckEvery <= 0 {
		o.CheckEvery = DefaultCheckEvery
	}
}

// Resume is where a stream starts.
type Resume struct {
	LastEventID int64
	Given       bool // false: the client named no id; the stream starts with the next event
}

// Serve streams userID's events to conn until ctx is done, the hub closes (ErrStreamClosed), the
// check fails (its error), or the client does not take its events (ErrSlowConsumer, or the write's
// error). It subscribes before it reads the log, so an event committed while it replays wakes it
// afterwards: the replay and the live events meet with no gap and no repeat, since every event
// sent follows the last id sent (read from the log after it, or handed over by the hub).
func (h *Hub) Serve(ctx context.Context, conn Conn, userID int64, from Resume, r Renderer, opts StreamOptions) error {
	opts.defaults()
	s := &stream{h: h, userID: userID, r: r, opts: opts, w: writer{conn: conn, timeout: opts.WriteTimeout}}
	s.sub = h.subscribe(userID, r)
	defer h.Unsubscribe(s.sub)
	if err := s.open(ctx, conn, from); err != nil {
		return err
	}
	defer s.stop()
	if d, ok := conn.(interface{ Direct() bool }); ok && d.Direct() {
		s.sub.wmu.Lock()
		s.sub.st = s
		s.sub.wmu.Unlock()
	}
	return s.loop(ctx)
}

// stream is the state of one Serve. An idle stream waits in loop, whose frame, with the runtime's
// below it, is all its goroutine's stack holds: the work is done in functions kept out of it
// (noinline), so that the collector can shrink an idle stream's stack to 4 KiB, where a frame
// holding them all kept it at 8 KiB (BenchmarkIdleStreams in internal/httpapi).
type stream struct {
	h         *Hub
	userID    int64
	r         Renderer
	opts      StreamOptions
	sub       *Sub
	w         writer
	cursor    int64 // the last event id sent
	unread    int64 // the unread count last sent
	heartbeat *time.Ticker
	checker   *time.Ticker // nil without opts.Check
	check     <-chan time.Time
	done      bool  // the stream ended (guarded by sub.wmu)
	failed    error // an inline write's failure, which ends the stream (guarded by sub.wmu)
}

// open sends the stream's head: retry, a resync when the client's id is lost, and unread_count.
//
//go:noinline
func (s *stream) open(ctx context.Context, conn Conn, from Resume) error {
	oldest, last, err := s.h.log.EventBounds(ctx, s.userID)
	if err != nil {
		return err
	}
	w := &s.w
	w.buf = AppendRetry(w.buf, s.opts.Retry.Milliseconds())
	cursor := last
	if from.Given {
		cursor = from.LastEventID
		// Lost: an id the user never had, or events after it that the log no longer holds.
		if from.LastEventID > last || (from.LastEventID < last && (oldest == 0 || from.LastEventID+1 < oldest)) {
			cursor = last
			data := []byte(`{"last_event_id":` + strconv.FormatInt(last, 10) + `}`)
			w.event(last, TypeResync, data)
		}
	}
	s.cursor = cursor
	s.sub.cursor.Store(cursor)
	data, unread, err := s.r.Unread(ctx, s.userID)
	if err != nil {
		return err
	}
	s.unread = unread
	w.event(cursor, TypeUnreadCount, data)
	conn.Start()
	if err := w.flush(); err != nil {
		return err
	}
	s.heartbeat = time.NewTicker(s.opts.Heartbeat)
	if s.opts.Check != nil {
		s.checker = time.NewTicker(s.opts.CheckEvery)
		s.check = s.checker.C
	}
	return nil
}

func (s *stream) stop() {
	s.sub.wmu.Lock()
	s.done = true // no inline write from now on: the connection is closing
	s.sub.wmu.Unlock()
	s.heartbeat.Stop()
	if s.checker != nil {
		s.checker.Stop()
	}
}

// loop waits for what the stream has to do, and has it done.
func (s *stream) loop(ctx context.Context) error {
	pending := true // read the log once: events may have committed since EventBounds
	for {
		if pending {
			var err error
			if pending, err = s.readLog(ctx); err != nil {
				return err
			}
			if pending {
				continue // more to read
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.h.closed:
			return ErrStreamClosed
		case <-s.sub.wake:
			var err error
			if pending, err = s.woken(); err != nil {
				return err
			}
		case <-s.heartbeat.C:
			if err := s.beat(); err != nil {
				return err
			}
		case <-s.check:
			if err := s.checkKey(ctx); err != nil {
				return err
			}
		}
	}
}

// readLog sends the events of the log after the cursor, a batch of them; more is true when the
// batch was full.
//
//go:noinline
func (s *stream) readLog(ctx context.Context) (more bool, err error) {
	s.sub.wmu.Lock()
	from := s.cursor
	s.sub.wmu.Unlock()
	entries, err := s.h.log.EventsAfter(ctx, s.userID, from, s.opts.Batch)
	if err != nil {
		return false, err
	}
	if len(entries) == 0 {
		return false, nil
	}
	data := make([][]byte, len(entries)) // nil: skipped
	for i, e := range entries {
		d, ok, err := s.r.Render(ctx, s.userID, e)
		if err != nil {
			return false, fmt.Errorf("render event %d: %w", e.ID, err)
		}
		if ok {
			data[i] = d
		}
	}
	var unread []byte
	var n int64
	if changesUnread(entries) {
		if unread, n, err = s.r.Unread(ctx, s.userID); err != nil {
			return false, err
		}
	}
	s.sub.wmu.Lock()
	defer s.sub.wmu.Unlock()
	w := &s.w
	for i, e := range entries {
		if e.ID <= s.cursor {
			continue // sent inline while the log was read
		}
		s.cursor = e.ID
		if data[i] != nil {
			w.event(e.ID, e.Type, data[i])
		}
	}
	s.sub.cursor.Store(s.cursor)
	if unread != nil && n != s.unread {
		s.unread = n
		w.event(s.cursor, TypeUnreadCount, unread)
	}
	if err := w.flush(); err != nil {
		return false, err
	}
	s.heartbeat.Reset(s.opts.Heartbeat)
	return len(entries) == s.opts.Batch, nil
}

// woken sends what the hub handed over; readLog is true when the stream is to read the log (the
// wake-up carried no events, or they do not follow the last id sent).
//
//go:noinline
func (s *stream) woken() (readLog bool, err error) {
	s.sub.wmu.Lock()
	defer s.sub.wmu.Unlock()
	if s.failed != nil {
		return false, s.failed
	}
	batches, readLog := s.sub.box.take()
	if readLog {
		return true, nil
	}
	sent, gap := 0, false
	for _, b := range batches {
		var applied bool
		if s.cursor, applied, gap = applyRendered(&s.w, s.cursor, b); gap {
			break
		}
		if !applied {
			continue
		}
		if b.hasUnread && b.unreadN != s.unread {
			s.unread = b.unreadN
			s.w.event(s.cursor, TypeUnreadCount, b.unread)
		}
		batches[sent] = b
		sent++
	}
	if sent > 0 || len(s.w.buf) > 0 { // what an inline write left unsent goes first
		s.sub.cursor.Store(s.cursor)
		if err := s.w.flush(); err != nil {
			return false, err
		}
		s.heartbeat.Reset(s.opts.Heartbeat)
		for _, b := range batches[:sent] {
			if !b.committed.IsZero() {
				observeDelivery(b.committed)
			}
		}
	}
	return gap, nil // on a gap, what follows the last id sent is not all here: read the log
}

//go:noinline
func (s *stream) beat() error {
	s.sub.wmu.Lock()
	defer s.sub.wmu.Unlock()
	s.w.buf = append(s.w.buf, Heartbeat...)
	return s.w.flush()
}

//go:noinline
func (s *stream) checkKey(ctx context.Context) error { return s.opts.Check(ctx) }

// applyRendered writes the events of b that follow cursor, and returns the new cursor, whether
// any followed it, and whether b skips an id after the cursor (gap: the stream reads the log from
// the cursor; nothing of b was written then). Ids at or before the cursor were sent already.
func applyRendered(w *writer, cursor int64, b *rendered) (next int64, applied, gap bool) {
	next = cursor
	for _, e := range b.events {
		if e.id <= next {
			continue
		}
		if e.id != next+1 {
			return cursor, false, true
		}
		next = e.id
	}
	if next == cursor {
		return cursor, false, false
	}
	for _, e := range b.events {
		if e.id > cursor && e.ok {
			w.event(e.id, e.typ, e.data)
		}
	}
	return next, true, false
}

// changesUnread reports whether the entries may change the number of unread conversations.
func changesUnread(entries []Entry) bool {
	for _, e := range entries {
		switch e.Type {
		case TypeConversationCreated, TypeMessageCreated, TypeReadStateChanged, TypeParticipantLeft:
			return true
		}
	}
	return false
}

// writer buffers a batch of events and sends it with one flush, within the write timeout.
type writer struct {
	conn    Conn
	timeout time.Duration
	buf     []byte
}

func (w *writer) event(id int64, typ string, data []byte) {
	if b, ok := AppendEvent(w.buf, id, typ, data); ok {
		w.buf = b
	}
}

// tryFlush writes the buffer within d, without failing the stream on a timeout: what the client
// could not take by then stays at the buffer's start, and left reports it (the stream's own
// goroutine then sends it with the usual timeout, before anything else).
func (w *writer) tryFlush(d time.Duration) (left bool, err error) {
	if len(w.buf) == 0 {
		return false, nil
	}
	n, err := w.send(d)
	if err != nil && isTimeout(err) && n < len(w.buf) {
		w.buf = w.buf[:copy(w.buf, w.buf[max(n, 0):])]
		return true, nil
	}
	w.buf = w.buf[:0]
	return false, err
}

// send writes the buffer to the client within d; n is what the client took.
func (w *writer) send(d time.Duration) (n int, err error) {
	if err := w.conn.SetWriteDeadline(time.Now().Add(d)); err != nil {
		return 0, err
	}
	n, err = w.conn.Write(w.buf)
	if err == nil {
		err = w.conn.Flush()
	}
	return n, err
}

func (w *writer) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.send(w.timeout)
	w.buf = w.buf[:0]
	if err != nil {
		if isTimeout(err) {
			return ErrSlowConsumer
		}
		return err
	}
	return nil
}
