//go:build faults

package systest

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"forumstats.local/tools/stack"
)

// eventClient follows user 2's event stream as a browser's EventSource would: on any end or
// error it reconnects, to the next replica, with Last-Event-ID, and it counts every
// message_created it receives by message id.
type eventClient struct {
	replicas []string
	key      string

	mu         sync.Mutex
	seen       map[int64]int
	last       string
	connects   int
	lastSeenAt time.Time
	idsInOrder bool
	previousID int64
	outOfOrder string
}

func (c *eventClient) run(ctx context.Context) {
	for i := 0; ctx.Err() == nil; i++ {
		c.follow(ctx, c.replicas[i%len(c.replicas)])
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *eventClient) follow(ctx context.Context, base string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/events", nil)
	if err != nil {
		return
	}
	req.Header.Set("Forum-Api-Key", c.key)
	req.Header.Set("Forum-Api-User", "2")
	c.mu.Lock()
	if c.last != "" {
		req.Header.Set("Last-Event-ID", c.last)
	}
	c.connects++
	c.mu.Unlock()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return
	}
	sc := bufio.NewScanner(resp.Body)
	var id, typ, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if typ == "message_created" {
				var m struct {
					Message struct {
						MessageID int64 `json:"message_id"`
					} `json:"message"`
				}
				_ = json.Unmarshal([]byte(data), &m)
				n, _ := strconv.ParseInt(id, 10, 64)
				c.mu.Lock()
				c.seen[m.Message.MessageID]++
				if c.previousID != 0 && n != c.previousID+1 && c.outOfOrder == "" {
					c.outOfOrder = "event " + id + " after " + strconv.FormatInt(c.previousID, 10)
				}
				c.previousID = n
				c.mu.Unlock()
			}
			if id != "" {
				c.mu.Lock()
				c.last = id
				c.mu.Unlock()
			}
			id, typ, data = "", "", ""
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		}
	}
}

// TestFaultEventStreamResumes follows a user's event stream from two replicas on one PostgreSQL
// and one Redis while another user replies through the first replica, and breaks things meanwhile:
// Redis killed (the second replica polls the log), the second replica killed mid-stream (the
// client resumes on the first with Last-Event-ID), PostgreSQL restarted. The client that resumes
// gets every reply that succeeded, none twice, with ids one after the other.
func TestFaultEventStreamResumes(t *testing.T) {
	pg := privatePostgres(t, stack.PostgresOptions{})
	rd := redis(t)
	fx := stack.NewForumFixture(50, 20)
	env := forumEnv(t, pg, fx, "REDIS_URL="+rd.URL())
	a := service(t, stack.Forum, env...)
	b := service(t, stack.Forum, env...)
	client := &eventClient{replicas: []string{b.URL, a.URL}, key: fx.SuperKey, seen: map[int64]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var following sync.WaitGroup
	following.Go(func() { client.run(ctx) })
	time.Sleep(time.Second) // the stream is open on b

	var (
		mu        sync.Mutex
		succeeded []int64
		failed    int
	)
	var writing sync.WaitGroup
	writeCtx, stopWriting := context.WithCancel(context.Background())
	writing.Go(func() {
		for i := 0; writeCtx.Err() == nil; i++ {
			form := url.Values{"conversation_id": {strconv.FormatInt(fx.Own, 10)}, "message": {"fault " + strconv.Itoa(i)}}
			req, _ := http.NewRequest(http.MethodPost, a.URL+"/api/conversation-messages/", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Forum-Api-Key", fx.UserKey)
			resp, err := http.DefaultClient.Do(req)
			ok := false
			var id int64
			if err == nil {
				var body struct {
					Message struct {
						MessageID int64 `json:"message_id"`
					} `json:"message"`
				}
				ok = resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&body) == nil
				id = body.Message.MessageID
				resp.Body.Close()
			}
			mu.Lock()
			if ok {
				succeeded = append(succeeded, id)
			} else {
				failed++
			}
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
		}
	})
	time.Sleep(2 * time.Second)
	rd.Kill()
	report(t, "events: Redis killed")
	time.Sleep(3 * time.Second)
	b.Kill()
	report(t, "events: replica b killed mid-stream")
	time.Sleep(3 * time.Second)
	if err := pg.Stop(false); err != nil {
		t.Fatalf("stop PostgreSQL: %v", err)
	}
	time.Sleep(2 * time.Second)
	if err := pg.Start(context.Background()); err != nil {
		t.Fatalf("start PostgreSQL: %v", err)
	}
	report(t, "events: PostgreSQL restarted")
	time.Sleep(3 * time.Second)
	stopWriting()
	writing.Wait()

	// The client catches up: every reply that succeeded, within 20 s.
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		want := append([]int64(nil), succeeded...)
		mu.Unlock()
		client.mu.Lock()
		missing := 0
		for _, id := range want {
			if client.seen[id] == 0 {
				missing++
			}
		}
		client.mu.Unlock()
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d successful replies never reached the resuming client", missing, len(want))
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	following.Wait()
	client.mu.Lock()
	defer client.mu.Unlock()
	for id, n := range client.seen {
		if n != 1 {
			t.Errorf("message %d reached the client %d times", id, n)
		}
	}
	if client.outOfOrder != "" {
		t.Errorf("the ids were not one after the other: %s", client.outOfOrder)
	}
	// b's death cuts the stream (a stream survives PostgreSQL's restart when it had nothing to
	// read meanwhile).
	if client.connects < 2 {
		t.Errorf("the client connected %d times: killing its replica did not cut its stream, the test proves nothing", client.connects)
	}
	report(t, "events: %d replies succeeded, %d failed (PostgreSQL down); the client connected %d times and got each once, in order",
		len(succeeded), failed, client.connects)
}
