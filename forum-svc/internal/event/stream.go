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

// Conn is the client's connection as a stream writes to it.
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
// afterwards: the replay and the live events meet with no gap and no repeat, since both read the
// log after the last id sent.
func (h *Hub) Serve(ctx context.Context, conn Conn, userID int64, from Resume, r Renderer, opts StreamOptions) error {
	opts.defaults()
	sub := h.subscribe(userID, r)
	defer h.Unsubscribe(sub)
	oldest, last, err := h.log.EventBounds(ctx, userID)
	if err != nil {
		return err
	}
	w := &writer{conn: conn, timeout: opts.WriteTimeout}
	w.buf = AppendRetry(w.buf, opts.Retry.Milliseconds())
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
	sub.cursor.Store(cursor)
	data, unread, err := r.Unread(ctx, userID)
	if err != nil {
		return err
	}
	w.event(cursor, TypeUnreadCount, data)
	conn.Start()
	if err := w.flush(); err != nil {
		return err
	}
	heartbeat := time.NewTicker(opts.Heartbeat)
	defer heartbeat.Stop()
	var check <-chan time.Time
	if opts.Check != nil {
		t := time.NewTicker(opts.CheckEvery)
		defer t.Stop()
		check = t.C
	}
	pending := true // read the log once: events may have committed since EventBounds
	for {
		if pending {
			pending = false
			entries, err := h.log.EventsAfter(ctx, userID, cursor, opts.Batch)
			if err != nil {
				return err
			}
			for _, e := range entries {
				data, ok, err := r.Render(ctx, userID, e)
				if err != nil {
					return fmt.Errorf("render event %d: %w", e.ID, err)
				}
				cursor = e.ID
				if ok {
					w.event(e.ID, e.Type, data)
				}
			}
			if len(entries) > 0 {
				sub.cursor.Store(cursor)
				if changesUnread(entries) {
					data, n, err := r.Unread(ctx, userID)
					if err != nil {
						return err
					}
					if n != unread {
						unread = n
						w.event(cursor, TypeUnreadCount, data)
					}
				}
				if err := w.flush(); err != nil {
					return err
				}
				heartbeat.Reset(opts.Heartbeat)
			}
			if len(entries) == opts.Batch {
				pending = true // more to read
				continue
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-h.closed:
			return ErrStreamClosed
		case <-sub.wake:
			batches, readLog := sub.box.take()
			if readLog {
				pending = true
				continue
			}
			sent, gap := false, false
			for _, b := range batches {
				var applied bool
				if cursor, applied, gap = applyRendered(w, cursor, b); gap {
					break
				}
				if applied && b.hasUnread && b.unreadN != unread {
					unread = b.unreadN
					w.event(cursor, TypeUnreadCount, b.unread)
				}
				sent = sent || applied
			}
			if sent {
				sub.cursor.Store(cursor)
				if err := w.flush(); err != nil {
					return err
				}
				heartbeat.Reset(opts.Heartbeat)
			}
			pending = gap // what follows the last id sent is not all here: read the log
		case <-heartbeat.C:
			w.buf = append(w.buf, Heartbeat...)
			if err := w.flush(); err != nil {
				return err
			}
		case <-check:
			if err := opts.Check(ctx); err != nil {
				return err
			}
		}
	}
}

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

func (w *writer) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	if err := w.conn.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil {
		return err
	}
	_, err := w.conn.Write(w.buf)
	if err == nil {
		err = w.conn.Flush()
	}
	w.buf = w.buf[:0]
	if err != nil {
		if isTimeout(err) {
			return ErrSlowConsumer
		}
		return err
	}
	return nil
}
