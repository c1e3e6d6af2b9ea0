package stack

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"strconv"
	"testing"
	"time"
)

func TestCheckHooks(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	d := func(id string, conv, msg int64) HookDelivery {
		at = at.Add(time.Millisecond)
		return HookDelivery{ID: id, Conversation: conv, Message: msg, At: at}
	}
	written := map[int64]int64{1: 10, 2: 10, 3: 20}
	for _, tc := range []struct {
		name                        string
		got                         []HookDelivery
		ok                          bool
		unique, dups, lost, twice   int
		outOfOrder, unexpectedCount int
	}{
		{"all in order", []HookDelivery{d("a", 10, 1), d("c", 20, 3), d("b", 10, 2)}, true, 3, 0, 0, 0, 0, 0},
		{"a repeated webhook-id is a duplicate, allowed", []HookDelivery{d("a", 10, 1), d("a", 10, 1), d("b", 10, 2), d("c", 20, 3)}, true, 3, 1, 0, 0, 0, 0},
		{"one lost", []HookDelivery{d("a", 10, 1), d("c", 20, 3)}, false, 2, 0, 1, 0, 0, 0},
		{"out of order in a conversation", []HookDelivery{d("b", 10, 2), d("a", 10, 1), d("c", 20, 3)}, false, 3, 0, 0, 0, 1, 0},
		{"a message under two webhook-ids", []HookDelivery{d("a", 10, 1), d("x", 10, 1), d("b", 10, 2), d("c", 20, 3)}, false, 3, 0, 0, 1, 0, 0},
		{"a message not written", []HookDelivery{d("a", 10, 1), d("b", 10, 2), d("c", 20, 3), d("z", 20, 9)}, false, 3, 0, 0, 0, 0, 1},
		{"a message in the wrong conversation", []HookDelivery{d("a", 10, 1), d("b", 10, 2), d("c", 10, 3)}, false, 2, 0, 1, 0, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := CheckHooks(written, tc.got)
			if c.OK() != tc.ok || c.Unique != tc.unique || c.Duplicates != tc.dups || len(c.Lost) != tc.lost ||
				c.IDsPerMsg != tc.twice || len(c.OutOfOrder) != tc.outOfOrder || c.Unexpected != tc.unexpectedCount {
				t.Errorf("got %+v (OK %v)", c, c.OK())
			}
			if want := tc.got[len(tc.got)-1].At; !c.Last.Equal(want) {
				t.Errorf("Last %v, want %v", c.Last, want)
			}
		})
	}
}

func TestHookReceiverModes(t *testing.T) {
	r, err := NewHookReceiver()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	key := bytes.Repeat([]byte{7}, 24)
	if err := r.SetSecret("whsec_" + base64.StdEncoding.EncodeToString(key)); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 500 * time.Millisecond}
	post := func(id string, signKey []byte) (int, error) {
		body := []byte(`{"type":"message.created","data":{"conversation_id":10,"message_id":5}}`)
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		req, _ := http.NewRequest(http.MethodPost, r.URL(), bytes.NewReader(body))
		req.Header.Set("webhook-id", id)
		req.Header.Set("webhook-timestamp", ts)
		req.Header.Set("webhook-signature", "v1,bm90IGl0 "+HookSignature(signKey, id, ts, body))
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	steps := []struct {
		mode    HookMode
		signKey []byte
		status  int // 0: the request fails
	}{
		{HookUp, key, http.StatusNoContent},
		{HookUp, bytes.Repeat([]byte{8}, 24), http.StatusUnauthorized},
		{Hook500, key, http.StatusInternalServerError},
		{HookClose, key, 0},
		{HookHang, key, 0},
		{HookDown, key, 0},
		{HookUp, key, http.StatusNoContent},
	}
	for i, s := range steps {
		if err := r.SetMode(s.mode); err != nil {
			t.Fatal(err)
		}
		status, err := post("msg_"+strconv.Itoa(i), s.signKey)
		if status != s.status || (s.status == 0) != (err != nil) {
			t.Errorf("step %d (mode %d): status %d, err %v; want %d", i, s.mode, status, err, s.status)
		}
	}
	got := r.Received()
	if len(got) != 2 || got[0].ID != "msg_0" || got[1].ID != "msg_6" || got[0].Conversation != 10 || got[0].Message != 5 {
		t.Errorf("received %+v, want msg_0 and msg_6 of conversation 10, message 5", got)
	}
	// The bad signature, the 500, the closed and the hung attempt; not the refused connection.
	if refused, bad := r.Refused(); refused != 4 || bad != 1 {
		t.Errorf("refused %d, bad signatures %d; want 4 and 1", refused, bad)
	}
}
