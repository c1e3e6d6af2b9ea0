package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"forumstats.local/tools/stack"
)

// arrival is a message_created event read by a stream: its message and when its data line arrived.
type arrival struct {
	msg int64
	at  time.Time
}

// streamSet is the client's streams to one server: stream i is user i/perUser + 1's.
type streamSet struct {
	perUser  int
	conns    []net.Conn
	arrivals [][]arrival // per stream, written by its reader only until wg is done
	created  atomic.Int64
	closing  atomic.Bool
	ended    atomic.Int64 // streams that ended before the bench closed them
	endErr   atomic.Value // the first such end's error
	wg       sync.WaitGroup
}

func (s *streamSet) user(i int) int64 { return int64(i/s.perUser) + 1 }

// openStreams opens n streams to addr (host:port), opening at once at a time, each authenticated
// with key acting as its user, and returns once every stream has read its first event (the
// service subscribes before it writes one, so no later change can be missed).
func openStreams(ctx context.Context, addr, key string, n, perUser, opening int) (*streamSet, error) {
	s := &streamSet{perUser: perUser, conns: make([]net.Conn, n), arrivals: make([][]arrival, n)}
	var next atomic.Int64
	errs := make(chan error, opening)
	var opened sync.WaitGroup
	for range opening {
		opened.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := s.open(addr, key, i); err != nil {
					errs <- fmt.Errorf("stream %d (user %d): %w", i, s.user(i), err)
					return
				}
			}
		})
	}
	opened.Wait()
	close(errs)
	if err := errors.Join(<-errs, ctx.Err()); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// open dials stream i, sends its request, reads the answer's head and its first event, and leaves
// a reader on the rest.
func (s *streamSet) open(addr, key string, i int) error {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return err
	}
	s.conns[i] = conn
	req := "GET /api/events HTTP/1.1\r\nHost: " + addr + "\r\nAccept: text/event-stream\r\nForum-Api-Key: " + key +
		"\r\nForum-Api-User: " + strconv.FormatInt(s.user(i), 10) + "\r\n\r\n"
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := io.WriteString(conn, req); err != nil {
		return err
	}
	br := bufio.NewReaderSize(conn, 2048)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return fmt.Errorf("answer %s %s: %s", resp.Status, resp.Header.Get("Content-Type"), b)
	}
	body := bufio.NewReaderSize(resp.Body, 2048)
	r := &sseReader{r: body}
	if _, _, err := r.next(); err != nil {
		return fmt.Errorf("first event: %w", err)
	}
	_ = conn.SetDeadline(time.Time{})
	s.wg.Go(func() { s.read(i, r) })
	return nil
}

// read records stream i's message_created events until its connection ends.
func (s *streamSet) read(i int, r *sseReader) {
	for {
		typ, ev, err := r.next()
		if err != nil {
			if !s.closing.Load() {
				s.ended.Add(1)
				s.endErr.CompareAndSwap(nil, fmt.Errorf("stream %d (user %d) ended: %w", i, s.user(i), err))
			}
			return
		}
		if typ != "message_created" {
			continue
		}
		id, err := messageID(ev.data)
		if err != nil {
			s.endErr.CompareAndSwap(nil, fmt.Errorf("stream %d: %w", i, err))
			continue
		}
		s.arrivals[i] = append(s.arrivals[i], arrival{id, ev.at})
		s.created.Add(1)
	}
}

// close ends every stream and waits for their readers.
func (s *streamSet) close() {
	s.closing.Store(true)
	for _, c := range s.conns {
		if c != nil {
			_ = c.Close()
		}
	}
	s.wg.Wait()
}

// sseEvent is one event's data and when its data line was read.
type sseEvent struct {
	data []byte
	at   time.Time
}

// sseReader reads server-sent events: "event:" and "data:" lines up to a blank line; comments
// and other fields are skipped.
type sseReader struct {
	r    *bufio.Reader
	line []byte
}

// next returns the next event's type ("message" when none is named) and data.
func (s *sseReader) next() (string, sseEvent, error) {
	var typ string
	var ev sseEvent
	seen := false
	for {
		line, err := s.readLine()
		if err != nil {
			return "", ev, err
		}
		if len(line) == 0 {
			if seen {
				if typ == "" {
					typ = "message"
				}
				return typ, ev, nil
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			typ, seen = string(value), true
		case "data":
			if ev.data == nil {
				ev.at = time.Now()
			}
			ev.data, seen = append(ev.data, value...), true
		case "id", "retry":
			seen = seen || field[0] == 'i'
		}
	}
}

// readLine returns the next line without its end (\n or \r\n), valid until the next call.
func (s *sseReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		b, err := s.r.ReadSlice('\n')
		s.line = append(s.line, b...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(s.line) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		return bytes.TrimSuffix(bytes.TrimSuffix(s.line, []byte("\n")), []byte("\r")), nil
	}
}

// messageID reads {"message":{"message_id":N}}.
func messageID(data []byte) (int64, error) {
	var b struct {
		Message struct {
			MessageID int64 `json:"message_id"`
		} `json:"message"`
	}
	if err := json.Unmarshal(data, &b); err != nil || b.Message.MessageID <= 0 {
		return 0, fmt.Errorf("message_created without a message id: %.200s", data)
	}
	return b.Message.MessageID, nil
}

// sentReply is one reply: its conversation, author, id, and the request's start and answer.
type sentReply struct {
	conv, author, id int64
	start, answer    time.Time
}

// postReplies posts n replies at rate a second to baseURL's POST /api/conversation-messages/
// (with key, acting as the author), reply i into conversation i modulo convs (1-based) by one
// participant then the other, and returns them in order.
func postReplies(ctx context.Context, client *http.Client, baseURL, key string, n int, rate float64, convs int64) ([]sentReply, error) {
	out := make([]sentReply, n)
	errs := make(chan error, n)
	sem := make(chan struct{}, 256)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		if d := time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		c := int64(i)%convs + 1
		out[i] = sentReply{conv: c, author: participants(c)[(int64(i)/convs)%2]}
		wg.Go(func() {
			defer func() { <-sem }()
			r := &out[i]
			r.start = time.Now()
			id, err := stack.ReplyAs(client, baseURL, key, r.author, r.conv, "Reply "+strconv.Itoa(i)+" of the event stream benchmark.")
			r.answer = time.Now()
			r.id = id
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	return out, errors.Join(<-errs, ctx.Err())
}
