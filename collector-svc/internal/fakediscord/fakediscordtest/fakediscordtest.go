// Package fakediscordtest is a bare gateway client for tests: it speaks Discord's gateway
// protocol by hand, payload by payload, so that a test can send what no real client would (a
// payload out of order, a bad token, a resume of a stale session) and see each answer as sent.
// It imports neither the fake nor the collector's gateway, so that both packages' own tests can
// use it.
package fakediscordtest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// OpHeartbeatACK is the opcode of the server's answer to a heartbeat, which Next skips.
const OpHeartbeatACK = 11

// Timeout bounds each dial, write and read, so that a server that never answers fails the test
// instead of hanging it.
const Timeout = 5 * time.Second

// ReadLimit is the largest payload the client reads (a READY or GUILD_CREATE of many guilds
// stays well below it).
const ReadLimit = 1 << 20

// Frame is a payload the server sent: its opcode, sequence number (nil when null), event name and
// data, and the bytes as received.
type Frame struct {
	Op  int             `json:"op"`
	S   *int64          `json:"s"`
	T   string          `json:"t"`
	D   json.RawMessage `json:"d"`
	Raw []byte          `json:"-"`
}

// Client is one connection; Conn is there for what the methods do not cover (closing with a
// code, reading without decoding).
type Client struct {
	tb   testing.TB
	Conn *websocket.Conn
}

// Dial connects to url (ws://…, with the query the test wants) or fails tb; the connection is
// dropped when the test ends.
func Dial(tb testing.TB, url string) *Client {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		tb.Fatalf("dial %s: %v", url, err)
	}
	ws.SetReadLimit(ReadLimit)
	tb.Cleanup(func() { _ = ws.CloseNow() })
	return &Client{tb: tb, Conn: ws}
}

// Send writes v as one text message: a []byte as it is, anything else as its JSON.
func (c *Client) Send(v any) {
	c.tb.Helper()
	data, ok := v.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(v); err != nil {
			c.tb.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if err := c.Conn.Write(ctx, websocket.MessageText, data); err != nil {
		c.tb.Fatalf("send %s: %v", data, err)
	}
}

// Read returns the next payload, or the error that ended the connection (or that the payload is
// not a JSON object of the gateway's shape).
func (c *Client) Read() (Frame, error) {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	_, data, err := c.Conn.Read(ctx)
	if err != nil {
		return Frame{}, err
	}
	var f Frame
	if err := json.Unmarshal(data, &f); err != nil {
		return Frame{}, fmt.Errorf("bad frame %s: %w", data, err)
	}
	f.Raw = data
	return f, nil
}

// Must returns the next payload or fails the test.
func (c *Client) Must() Frame {
	c.tb.Helper()
	f, err := c.Read()
	if err != nil {
		c.tb.Fatalf("read: %v", err)
	}
	return f
}

// Next returns the next payload other than a heartbeat ACK, or fails the test.
func (c *Client) Next() Frame {
	c.tb.Helper()
	for {
		if f := c.Must(); f.Op != OpHeartbeatACK {
			return f
		}
	}
}

// CloseCode reads until the server closes the connection and returns its close code (-1 when it
// ended without one).
func (c *Client) CloseCode() websocket.StatusCode {
	c.tb.Helper()
	for {
		if _, err := c.Read(); err != nil {
			return websocket.CloseStatus(err)
		}
	}
}
