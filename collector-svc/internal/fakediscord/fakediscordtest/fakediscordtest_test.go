package fakediscordtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

// server answers each message it reads with the payloads script gives for it, then closes with
// code 4004 once the client sends "bye".
func server(t *testing.T, script map[string][]string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ctx := r.Context()
		for {
			_, data, err := ws.Read(ctx)
			if err != nil {
				return
			}
			if string(data) == "bye" {
				_ = ws.Close(4004, "authentication failed")
				return
			}
			for _, out := range script[string(data)] {
				if err := ws.Write(ctx, websocket.MessageText, []byte(out)); err != nil {
					return
				}
			}
		}
	}))
	t.Cleanup(srv.Close)
	return strings.Replace(srv.URL, "http://", "ws://", 1)
}

func TestClient(t *testing.T) {
	url := server(t, map[string][]string{
		`{"op":2}`:  {`{"op":11,"s":null,"t":null,"d":null}`, `{"op":0,"s":1,"t":"READY","d":{"session_id":"x"}}`},
		`{"op":1}`:  {`{"op":11,"s":null,"t":null,"d":null}`},
		`not json`:  {`not json`},
		`{"op":10}`: {`{"op":10,"d":{"heartbeat_interval":45000}}`},
	})
	c := Dial(t, url)
	// JSON of a value, and bytes as they are.
	c.Send(map[string]int{"op": 2})
	if f := c.Next(); f.Op != 0 || f.S == nil || *f.S != 1 || f.T != "READY" || string(f.D) != `{"session_id":"x"}` ||
		string(f.Raw) != `{"op":0,"s":1,"t":"READY","d":{"session_id":"x"}}` {
		t.Fatalf("Next skipped to %+v (raw %s), want READY at s=1", f, f.Raw)
	}
	c.Send([]byte(`{"op":1}`))
	if f := c.Must(); f.Op != OpHeartbeatACK || f.S != nil {
		t.Fatalf("Must: %+v, want the ACK Next would skip", f)
	}
	c.Send([]byte(`{"op":10}`))
	if f := c.Next(); f.Op != 10 || f.T != "" {
		t.Fatalf("Next: %+v, want HELLO", f)
	}
	c.Send([]byte("not json"))
	if _, err := c.Read(); err == nil || !strings.Contains(err.Error(), "bad frame not json") {
		t.Fatalf("Read of a payload that is not JSON: %v", err)
	}
	c.Send([]byte("bye"))
	if code := c.CloseCode(); code != 4004 {
		t.Fatalf("CloseCode %d, want 4004", code)
	}
	if _, err := c.Read(); err == nil {
		t.Fatal("Read after the close returned no error")
	}
}

// A connection dropped without a close frame has no close code.
func TestCloseCodeWithoutAFrame(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		_, _, _ = ws.Read(context.Background())
		_ = ws.CloseNow()
	}))
	defer srv.Close()
	c := Dial(t, strings.Replace(srv.URL, "http://", "ws://", 1))
	c.Send([]byte("x"))
	if code := c.CloseCode(); code != -1 {
		t.Fatalf("CloseCode %d, want -1", code)
	}
}
