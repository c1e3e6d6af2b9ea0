package fakediscord

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/collector-svc/internal/fakediscord/fakediscordtest"
	"forumstats.local/shared/testutil"
)

func identifyPayload(token string, intents int64, shard ...int) map[string]any {
	d := map[string]any{"token": token, "intents": intents, "properties": map[string]string{"os": "linux", "browser": "t", "device": "t"}}
	if shard != nil {
		d["shard"] = shard
	}
	return map[string]any{"op": opIdentify, "d": d}
}

const testIntents = intentGuilds | intentGuildMessages

type readyData struct {
	SessionID        string `json:"session_id"`
	ResumeGatewayURL string `json:"resume_gateway_url"`
	Shard            []int  `json:"shard"`
	Guilds           []struct {
		ID          string `json:"id"`
		Unavailable bool   `json:"unavailable"`
	} `json:"guilds"`
}

// connect says hello and identifies, and returns READY and the GUILD_CREATEs.
func connect(t *testing.T, url string, shard ...int) (*fakediscordtest.Client, readyData, []fakediscordtest.Frame) {
	t.Helper()
	c := fakediscordtest.Dial(t, url+"?v=10&encoding=json")
	if hello := c.Must(); hello.Op != opHello {
		t.Fatalf("first payload %s, want HELLO", hello.Raw)
	}
	c.Send(identifyPayload("secret", testIntents, shard...))
	f := c.Next()
	if f.Op != opDispatch || f.T != "READY" || f.S == nil || *f.S != 1 {
		t.Fatalf("after IDENTIFY: %s, want READY with s=1", f.Raw)
	}
	var r readyData
	if err := json.Unmarshal(f.D, &r); err != nil {
		t.Fatal(err)
	}
	var creates []fakediscordtest.Frame
	for range r.Guilds {
		g := c.Next()
		if g.T != "GUILD_CREATE" {
			t.Fatalf("%s, want GUILD_CREATE", g.Raw)
		}
		creates = append(creates, g)
	}
	return c, r, creates
}

func gatewayURL(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/v10/gateway/bot", nil)
	req.Header.Set("Authorization", "Bot secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var bot struct {
		URL string `json:"url"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&bot); err != nil || resp.StatusCode != 200 {
		t.Fatalf("gateway/bot: %d %v", resp.StatusCode, err)
	}
	return bot.URL
}

func startFake(t *testing.T, opts Options) (*Server, *httptest.Server) {
	t.Helper()
	if opts.Token == "" {
		opts.Token = "secret"
	}
	if opts.Clock == nil {
		// A still clock: no message arrives unless a test moves it, so that the tests reading
		// payloads one by one get only the ones they ask for.
		frozen := time.Date(2026, 11, 20, 15, 0, 0, 0, time.UTC)
		opts.Clock = func() time.Time { return frozen }
	}
	s := New(opts)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		s.Close()
		srv.Close()
	})
	return s, srv
}

func TestGatewayBot(t *testing.T) {
	s, srv := startFake(t, Options{Gateway: GatewayOptions{Shards: 4, MaxConcurrency: 2, SessionStartLimit: 10, IdentifyInterval: time.Millisecond}})
	code, _, obj, _ := get(t, s, "/api/v10/gateway/bot", "Authorization", "Bot secret")
	limit, _ := obj["session_start_limit"].(map[string]any)
	if code != 200 || obj["shards"] != 4.0 || !strings.HasSuffix(obj["url"].(string), gatewayPath) || limit["total"] != 10.0 || limit["remaining"] != 10.0 || limit["max_concurrency"] != 2.0 {
		t.Fatalf("gateway/bot = %d %v", code, obj)
	}
	if code, _, _, _ := get(t, s, "/api/v10/gateway/bot"); code != 401 {
		t.Fatalf("gateway/bot without the token: %d", code)
	}
	connect(t, gatewayURL(t, srv), 0, 4)
	_, _, obj, _ = get(t, s, "/api/v10/gateway/bot", "Authorization", "Bot secret")
	limit = obj["session_start_limit"].(map[string]any)
	if limit["remaining"] != 9.0 || limit["reset_after"].(float64) <= 0 {
		t.Fatalf("after one identify: %v", limit)
	}
}

// TestGatewayCloseCodes: every protocol violation ends the connection with Discord's code.
func TestGatewayCloseCodes(t *testing.T) {
	s, srv := startFake(t, Options{Guilds: 3, Gateway: GatewayOptions{HeartbeatInterval: time.Hour, IdentifyInterval: time.Millisecond}})
	url := gatewayURL(t, srv)
	presence := map[string]any{"op": opPresenceUpdate, "d": map[string]any{"status": "online", "afk": false, "activities": []any{}, "since": nil}}
	tests := []struct {
		name  string
		query string
		send  []any
		code  websocket.StatusCode
	}{
		{"api version", "?v=6&encoding=json", nil, 4012},
		{"encoding", "?v=10&encoding=etf", nil, 4002},
		{"bad json", "", []any{[]byte(`{"op":1,`)}, 4002},
		{"oversized", "", []any{[]byte(`{"op":1,"d":null,"pad":"` + strings.Repeat("x", maxClientPayload) + `"}`)}, 4002},
		{"unknown opcode", "", []any{map[string]any{"op": 42, "d": nil}}, 4001},
		{"not authenticated", "", []any{map[string]any{"op": opPresenceUpdate, "d": map[string]any{}}}, 4003},
		{"authentication failed", "", []any{identifyPayload("wrong", testIntents)}, 4004},
		{"already authenticated", "", []any{identifyPayload("secret", testIntents), identifyPayload("secret", testIntents)}, 4005},
		{"resume beyond seq", "", []any{"RESUME+1000"}, 4007},
		{"rate limited", "", func() []any {
			out := []any{identifyPayload("secret", testIntents)}
			for range 121 {
				out = append(out, presence)
			}
			return out
		}(), 4008},
		{"invalid shard", "", []any{identifyPayload("secret", testIntents, 2, 2)}, 4010},
		{"invalid intents", "", []any{identifyPayload("secret", 1<<40)}, 4013},
		{"disallowed intents", "", []any{identifyPayload("secret", testIntents|1<<15)}, 4014},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := tt.query
			if q == "" {
				q = "?v=10&encoding=json"
			}
			c := fakediscordtest.Dial(t, url+q)
			for _, p := range tt.send {
				if p == "RESUME+1000" {
					_, r, _ := connect(t, url)
					p = map[string]any{"op": opResume, "d": map[string]any{"token": "secret", "session_id": r.SessionID, "seq": 1000}}
				}
				c.Send(p)
			}
			if got := c.CloseCode(); got != tt.code {
				t.Fatalf("close code %d, want %d", got, tt.code)
			}
		})
	}
	_ = s
}

func TestGatewayShardingRequiredAndTimeout(t *testing.T) {
	_, srv := startFake(t, Options{Guilds: 3, Gateway: GatewayOptions{MaxGuildsPerShard: 2, HeartbeatInterval: 40 * time.Millisecond}})
	url := gatewayURL(t, srv) + "?v=10&encoding=json"
	c := fakediscordtest.Dial(t, url)
	c.Send(identifyPayload("secret", testIntents))
	if got := c.CloseCode(); got != 4011 {
		t.Fatalf("3 guilds on a shard of at most 2: close %d, want 4011", got)
	}
	// A client that never heartbeats is timed out.
	c = fakediscordtest.Dial(t, url)
	if got := c.CloseCode(); got != 4009 {
		t.Fatalf("no heartbeat: close %d, want 4009", got)
	}
}

// TestGatewayShardRouting: each shard's READY and GUILD_CREATEs hold exactly the guilds
// (guild_id >> 22) % num_shards routes to it, with their channels and threads.
func TestGatewayShardRouting(t *testing.T) {
	s, srv := startFake(t, Options{Guilds: 9, Gateway: GatewayOptions{MaxConcurrency: 3}})
	url := gatewayURL(t, srv)
	seen := map[string]int{}
	for shard := range 3 {
		_, r, creates := connect(t, url, shard, 3)
		if len(r.Shard) != 2 || r.Shard[0] != shard || r.Shard[1] != 3 || r.SessionID == "" || !strings.HasSuffix(r.ResumeGatewayURL, resumePath) {
			t.Fatalf("READY %+v", r)
		}
		for i, g := range r.Guilds {
			id, _ := strconv.ParseUint(g.ID, 10, 64)
			if !g.Unavailable || int((id>>22)%3) != shard {
				t.Fatalf("shard %d READY lists %+v", shard, g)
			}
			var gc struct {
				ID       string           `json:"id"`
				Channels []map[string]any `json:"channels"`
				Threads  []map[string]any `json:"threads"`
			}
			if err := json.Unmarshal(creates[i].D, &gc); err != nil {
				t.Fatal(err)
			}
			if gc.ID != g.ID || len(gc.Channels) != len(channelsJSON(s.byID[id])) || len(gc.Threads) != 2 || gc.Threads[0]["parent_id"] == nil {
				t.Fatalf("GUILD_CREATE %s", creates[i].Raw)
			}
			seen[g.ID]++
		}
	}
	if len(seen) != 9 {
		t.Fatalf("the shards hold %d guilds, want all 9 once: %v", len(seen), seen)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("guild %s on %d shards", id, n)
		}
	}
}

// TestGatewayIdentifyLimits: one identify per max_concurrency bucket per interval, and no more
// than the day's session starts; the excess gets op 9 d=false.
func TestGatewayIdentifyLimits(t *testing.T) {
	_, srv := startFake(t, Options{Gateway: GatewayOptions{MaxConcurrency: 2, SessionStartLimit: 3, IdentifyInterval: time.Hour}})
	url := gatewayURL(t, srv)
	connect(t, url, 0, 4)
	connect(t, url, 1, 4) // the other bucket
	c := fakediscordtest.Dial(t, url+"?v=10&encoding=json")
	c.Must()
	c.Send(identifyPayload("secret", testIntents, 2, 4)) // bucket 0 again
	if f := c.Next(); f.Op != opInvalidSession || string(f.D) != "false" {
		t.Fatalf("second identify of bucket 0: %s, want op 9 false", f.Raw)
	}

	_, srv = startFake(t, Options{Gateway: GatewayOptions{SessionStartLimit: 1, IdentifyInterval: time.Millisecond}})
	url = gatewayURL(t, srv)
	connect(t, url)
	time.Sleep(5 * time.Millisecond)
	c = fakediscordtest.Dial(t, url+"?v=10&encoding=json")
	c.Must()
	c.Send(identifyPayload("secret", testIntents))
	if f := c.Next(); f.Op != opInvalidSession || string(f.D) != "false" {
		t.Fatalf("identify past the session start limit: %s, want op 9 false", f.Raw)
	}
}

// TestGatewayHeartbeats: a heartbeat is ACKed; op 1 from the server asks for one; a zombie fake
// stops ACKing.
func TestGatewayHeartbeats(t *testing.T) {
	s, srv := startFake(t, Options{})
	c, _, _ := connect(t, gatewayURL(t, srv))
	c.Send(map[string]any{"op": opHeartbeat, "d": 1})
	if f := c.Must(); f.Op != opHeartbeatACK {
		t.Fatalf("%s, want ACK", f.Raw)
	}
	s.RequestHeartbeat()
	if f := c.Must(); f.Op != opHeartbeat {
		t.Fatalf("%s, want op 1", f.Raw)
	}
	s.SetZombie(true)
	c.Send(map[string]any{"op": opHeartbeat, "d": 1})
	waitHeartbeats(t, s, 2)
	s.RequestReconnect() // a marker: the next payload must be it, not an ACK
	if f := c.Must(); f.Op != opReconnect {
		t.Fatalf("zombie: %s, want no ACK and then op 7", f.Raw)
	}
	s.SetZombie(false)
	c.Send(map[string]any{"op": opHeartbeat, "d": 1})
	if f := c.Must(); f.Op != opHeartbeatACK {
		t.Fatalf("%s, want ACK again", f.Raw)
	}
	waitHeartbeats(t, s, 3)
}

// waitHeartbeats waits until the fake has handled n heartbeats.
func waitHeartbeats(t *testing.T, s *Server, n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for s.GatewayStats().Heartbeats != n {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v, want %d heartbeats", s.GatewayStats(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// searchTotal is the search's total_results, with the token startFake sets.
func searchTotal(t *testing.T, s *Server, guildID, channelID string, minID, maxID uint64) int64 {
	t.Helper()
	path := fmt.Sprintf("/api/v10/guilds/%s/messages/search?min_id=%d&max_id=%d&limit=1&channel_id=%s", guildID, minID, maxID, channelID)
	code, _, obj, _ := get(t, s, path, "Authorization", "Bot secret")
	if code != 200 {
		t.Fatalf("GET %s = %d %v", path, code, obj)
	}
	return int64(obj["total_results"].(float64))
}

type messageData struct {
	ID        string   `json:"id"`
	IDs       []string `json:"ids"`
	ChannelID string   `json:"channel_id"`
	GuildID   string   `json:"guild_id"`
}

// readMessages reads dispatches until n MESSAGE_CREATEs arrived, checking that the sequence
// numbers follow each other from after, and returns them with the frames.
func readMessages(t *testing.T, c *fakediscordtest.Client, after int64, n int) ([]fakediscordtest.Frame, int64) {
	t.Helper()
	var out []fakediscordtest.Frame
	seq := after
	for len(out) < n {
		f := c.Next()
		if f.Op != opDispatch || f.S == nil || *f.S != seq+1 {
			t.Fatalf("after seq %d: %s", seq, f.Raw)
		}
		seq = *f.S
		if f.T == "MESSAGE_CREATE" {
			out = append(out, f)
		}
	}
	return out, seq
}

// TestGatewayMessagesAreTheSearchedOnes: as the clock passes, each message of the shard's guilds
// is dispatched once, oldest first, and they are the ones search and Count see.
func TestGatewayMessagesAreTheSearchedOnes(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 11, 20, 15, 0, 0, 0, time.UTC))
	s, srv := startFake(t, Options{Guilds: 4, MessageRate: 200, Clock: clock.Now})
	c, r, _ := connect(t, gatewayURL(t, srv))
	t0 := clock.Now()
	clock.Add(3 * time.Minute)
	s.Pump()
	from, to := t0.Add(time.Millisecond), clock.Now().Add(time.Millisecond)
	var want int64
	for _, g := range r.Guilds {
		want += s.Count(g.ID, "", from, to)
	}
	if want < 100 {
		t.Fatalf("only %d messages in the window: the test needs more", want)
	}
	msgs, seq := readMessages(t, c, int64(1+len(r.Guilds)), int(want))
	perGuild := map[string]int64{}
	var last uint64
	ids := map[string]bool{}
	for _, f := range msgs {
		var m messageData
		if err := json.Unmarshal(f.D, &m); err != nil {
			t.Fatal(err)
		}
		id, _ := strconv.ParseUint(m.ID, 10, 64)
		if id < last || ids[m.ChannelID+"/"+m.ID] {
			t.Fatalf("message %s out of order or repeated", m.ID)
		}
		last = id
		ids[m.ChannelID+"/"+m.ID] = true
		if at := discord.SnowflakeTime(id); at.Before(from) || !at.Before(to) {
			t.Fatalf("message %s stamped %s, outside the window", m.ID, at)
		}
		perGuild[m.GuildID]++
	}
	for _, g := range r.Guilds {
		lo, hi, _ := discord.WindowIDs(from, to)
		if n := searchTotal(t, s, g.ID, "", lo, hi); n != perGuild[g.ID] {
			t.Errorf("guild %s: %d MESSAGE_CREATE, search %d", g.ID, perGuild[g.ID], n)
		}
	}
	// Nothing more until the clock moves.
	s.Pump()
	c.Send(map[string]any{"op": opHeartbeat, "d": seq})
	if f := c.Must(); f.Op != opHeartbeatACK {
		t.Fatalf("with the clock still: %s", f.Raw)
	}
}

// TestGatewayResumeReplaysTheMissed: after a dropped connection, RESUME at resume_gateway_url
// replays exactly the dispatches after the given seq (the same bytes), then the ones dispatched
// while away, then RESUMED; a session past its window, or an unknown one, gets op 9 d=false.
func TestGatewayResumeReplaysTheMissed(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 11, 20, 15, 0, 0, 0, time.UTC))
	s, srv := startFake(t, Options{Guilds: 2, MessageRate: 200, Clock: clock.Now, Gateway: GatewayOptions{ResumeWindow: time.Hour}})
	c, r, _ := connect(t, gatewayURL(t, srv))
	clock.Add(time.Minute)
	s.Pump()
	// The client reads every dispatch of the session so far, then the connection drops.
	last := s.GatewayStats().Dispatched // one session: its last seq
	first := map[int64]string{}
	seq := int64(1 + len(r.Guilds)) // READY and GUILD_CREATEs, read by connect
	for seq < last {
		f := c.Next()
		if f.S == nil || *f.S != seq+1 {
			t.Fatalf("after seq %d: %s", seq, f.Raw)
		}
		seq = *f.S
		first[seq] = string(f.Raw)
	}
	if seq < 30 {
		t.Fatalf("only %d dispatches: the test needs more", seq)
	}
	s.DropConnections()
	if _, err := c.Read(); err == nil {
		t.Fatal("the connection survived the drop")
	}
	clock.Add(time.Minute) // dispatched while away
	s.Pump()
	away := s.GatewayStats().Dispatched - seq

	k := seq - 25 // the client had processed up to k
	c2 := fakediscordtest.Dial(t, r.ResumeGatewayURL+"?v=10&encoding=json")
	c2.Must()
	c2.Send(map[string]any{"op": opResume, "d": map[string]any{"token": "secret", "session_id": r.SessionID, "seq": k}})
	for want := k + 1; ; want++ {
		f := c2.Next()
		if f.S == nil || *f.S != want {
			t.Fatalf("replay: %s, want seq %d", f.Raw, want)
		}
		if f.T == "RESUMED" {
			if want != seq+away+1 {
				t.Fatalf("RESUMED at seq %d, want %d (after %d missed)", want, seq+away+1, away)
			}
			break
		}
		if was, ok := first[want]; ok && string(f.Raw) != was {
			t.Fatalf("replayed seq %d differs: %s vs %s", want, f.Raw, was)
		}
	}
	if st := s.GatewayStats(); st.Resumes != 1 || st.ResumesAtResumeURL != 1 {
		t.Fatalf("stats %+v", st)
	}

	c3 := fakediscordtest.Dial(t, r.ResumeGatewayURL+"?v=10&encoding=json")
	c3.Must()
	c3.Send(map[string]any{"op": opResume, "d": map[string]any{"token": "secret", "session_id": "nope", "seq": 1}})
	if f := c3.Next(); f.Op != opInvalidSession || string(f.D) != "false" {
		t.Fatalf("unknown session: %s", f.Raw)
	}
}

func TestGatewayResumeWindow(t *testing.T) {
	s, srv := startFake(t, Options{Gateway: GatewayOptions{ResumeWindow: 30 * time.Millisecond, Tick: 5 * time.Millisecond}})
	c, r, _ := connect(t, gatewayURL(t, srv))
	_ = c.Conn.CloseNow()
	deadline := time.Now().Add(5 * time.Second)
	for s.GatewayStats().Sessions > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the session outlived its resume window")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c2 := fakediscordtest.Dial(t, r.ResumeGatewayURL+"?v=10&encoding=json")
	c2.Must()
	c2.Send(map[string]any{"op": opResume, "d": map[string]any{"token": "secret", "session_id": r.SessionID, "seq": 1}})
	if f := c2.Next(); f.Op != opInvalidSession || string(f.D) != "false" {
		t.Fatalf("resume after the window: %s", f.Raw)
	}
}

// TestGatewayInvalidSessionKnob: op 9 d=true keeps the session resumable, d=false ends it.
func TestGatewayInvalidSessionKnob(t *testing.T) {
	for _, resumable := range []bool{true, false} {
		t.Run(strconv.FormatBool(resumable), func(t *testing.T) {
			s, srv := startFake(t, Options{})
			c, r, _ := connect(t, gatewayURL(t, srv))
			s.InvalidateSessions(resumable)
			if f := c.Next(); f.Op != opInvalidSession || string(f.D) != strconv.FormatBool(resumable) {
				t.Fatalf("%s", f.Raw)
			}
			_ = c.Conn.CloseNow()
			c2 := fakediscordtest.Dial(t, r.ResumeGatewayURL+"?v=10&encoding=json")
			c2.Must()
			c2.Send(map[string]any{"op": opResume, "d": map[string]any{"token": "secret", "session_id": r.SessionID, "seq": 1 + len(r.Guilds)}})
			f := c2.Next()
			if resumable && f.T != "RESUMED" || !resumable && f.Op != opInvalidSession {
				t.Fatalf("resume after op 9 d=%t: %s", resumable, f.Raw)
			}
		})
	}
}

// TestDeleteSeenEverywhere: a deletion reaches the gateway (MESSAGE_DELETE, MESSAGE_DELETE_BULK),
// the search (total and hits) and /_fake/count; a message is deleted once, and only if it exists.
func TestDeleteSeenEverywhere(t *testing.T) {
	now := time.Date(2026, 11, 20, 15, 0, 0, 0, time.UTC)
	s, srv := startFake(t, Options{Guilds: 1, Clock: func() time.Time { return now }})
	c, r, _ := connect(t, gatewayURL(t, srv))
	g := r.Guilds[0].ID
	from, to := now.Add(-24*time.Hour), now.Add(time.Millisecond)
	var ch string
	for _, cc := range channelsJSON(s.guilds[0]) {
		if cc["type"] == typeText {
			ch = cc["id"].(string)
			break
		}
	}
	before, beforeCh := s.Count(g, "", from, to), s.Count(g, ch, from, to)
	msgs, err := s.Messages(g, ch, from, to, 3)
	if err != nil || len(msgs) != 3 {
		t.Fatalf("messages: %v %v", msgs, err)
	}
	cid, _ := strconv.ParseUint(ch, 10, 64)
	if err := s.Delete(cid, msgs[0].ID); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(fmt.Sprintf("%s/_fake/delete?channel_id=%s&ids=%d,%d", srv.URL, ch, msgs[1].ID, msgs[2].ID), "", nil)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("POST /_fake/delete: %v %v", resp, err)
	}
	resp.Body.Close()

	var d messageData
	f := c.Next()
	if err := json.Unmarshal(f.D, &d); err != nil || f.T != "MESSAGE_DELETE" || d.ID != strconv.FormatUint(msgs[0].ID, 10) || d.ChannelID != ch || d.GuildID != g {
		t.Fatalf("%s, want MESSAGE_DELETE of %d", f.Raw, msgs[0].ID)
	}
	f = c.Next()
	if err := json.Unmarshal(f.D, &d); err != nil || f.T != "MESSAGE_DELETE_BULK" || len(d.IDs) != 2 || d.IDs[0] != strconv.FormatUint(msgs[1].ID, 10) {
		t.Fatalf("%s, want MESSAGE_DELETE_BULK", f.Raw)
	}

	if a, b := s.Count(g, "", from, to), s.Count(g, ch, from, to); a != before-3 || b != beforeCh-3 {
		t.Errorf("Count %d/%d after 3 deletes, want %d/%d", a, b, before-3, beforeCh-3)
	}
	lo, hi, _ := discord.WindowIDs(from, to)
	if n := searchTotal(t, s, g, ch, lo, hi); n != beforeCh-3 {
		t.Errorf("search total %d, want %d", n, beforeCh-3)
	}
	code, _, obj, _ := get(t, s, "/_fake/count?guild_id="+g+"&from="+from.Format(time.RFC3339Nano)+"&to="+to.Format(time.RFC3339Nano))
	if code != 200 || obj["count"] != float64(before-3) {
		t.Errorf("/_fake/count %d %v, want %d", code, obj, before-3)
	}
	hits, _ := s.Messages(g, ch, from, to, 3)
	for _, m := range hits {
		for _, gone := range msgs {
			if m.ID == gone.ID {
				t.Errorf("search still lists deleted message %d", m.ID)
			}
		}
	}
	future := snowflake(now.Add(time.Hour).UnixMilli(), 0)
	for _, tt := range []struct {
		name    string
		channel uint64
		ids     []uint64
	}{
		{"again", cid, []uint64{msgs[0].ID}},
		{"not a message", cid, []uint64{msgs[0].ID + 1<<30}},
		{"future", cid, []uint64{future}},
		{"unknown channel", 12345, []uint64{msgs[0].ID}},
		{"twice in one call", cid, []uint64{hits[0].ID, hits[0].ID}},
	} {
		var e *apiErr
		if err := s.Delete(tt.channel, tt.ids...); !errors.As(err, &e) || e.status != 404 {
			t.Errorf("%s: %v, want a 404", tt.name, err)
		}
	}
	if n := s.Count(g, ch, from, to); n != beforeCh-3 {
		t.Errorf("a refused delete changed the count: %d", n)
	}
}

// TestGatewayControlEndpoints: the knobs answer over HTTP for a fake run as a process.
func TestGatewayControlEndpoints(t *testing.T) {
	_, srv := startFake(t, Options{})
	c, _, _ := connect(t, gatewayURL(t, srv))
	for _, tt := range []struct {
		method, path string
		status       int
		op           int
	}{
		{"POST", "/_fake/gateway/heartbeat", 204, opHeartbeat},
		{"POST", "/_fake/gateway/reconnect", 204, opReconnect},
		{"POST", "/_fake/gateway/invalid-session?resumable=true", 204, opInvalidSession},
		{"POST", "/_fake/gateway/zombie?on=maybe", 400, -1},
		{"POST", "/_fake/gateway/zombie?on=false", 204, -1},
		{"POST", "/_fake/gateway/inject", 204, 42},
		{"GET", "/_fake/gateway/drop", 405, -1},
		{"POST", "/_fake/gateway/nothing", 404, -1},
		{"GET", "/_fake/gateway/stats", 200, -1},
	} {
		var body io.Reader
		if strings.HasSuffix(tt.path, "/inject") {
			body = strings.NewReader(`{"op":42,"d":null}`)
		}
		req, _ := http.NewRequest(tt.method, srv.URL+tt.path, body)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != tt.status {
			t.Fatalf("%s %s: %v %v, want %d", tt.method, tt.path, resp, err, tt.status)
		}
		resp.Body.Close()
		if tt.op >= 0 {
			if f := c.Next(); f.Op != tt.op {
				t.Fatalf("%s: %s, want op %d", tt.path, f.Raw, tt.op)
			}
		}
	}
	resp, err := http.Post(srv.URL+"/_fake/gateway/drop", "", nil)
	if err != nil || resp.StatusCode != 204 {
		t.Fatalf("drop: %v %v", resp, err)
	}
	resp.Body.Close()
	if _, err := c.Read(); err == nil {
		t.Fatal("the connection survived /_fake/gateway/drop")
	}
}

// TestGatewayCloseCodeEndsSession: a client closing with 1000 or 1001 ends its session, as on
// Discord; another code, or a dropped connection, leaves it resumable.
func TestGatewayCloseCodeEndsSession(t *testing.T) {
	for _, tt := range []struct {
		code      websocket.StatusCode
		resumable bool
	}{{websocket.StatusNormalClosure, false}, {websocket.StatusGoingAway, false}, {4000, true}, {websocket.StatusServiceRestart, true}, {-1, true}} {
		t.Run(strconv.Itoa(int(tt.code)), func(t *testing.T) {
			s, srv := startFake(t, Options{})
			c, r, _ := connect(t, gatewayURL(t, srv))
			if tt.code == -1 {
				_ = c.Conn.CloseNow()
			} else {
				_ = c.Conn.Close(tt.code, "bye")
			}
			deadline := time.Now().Add(5 * time.Second)
			for s.GatewayStats().Open > 0 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			c2 := fakediscordtest.Dial(t, r.ResumeGatewayURL+"?v=10&encoding=json")
			c2.Must()
			c2.Send(map[string]any{"op": opResume, "d": map[string]any{"token": "secret", "session_id": r.SessionID, "seq": 1 + len(r.Guilds)}})
			f := c2.Next()
			if tt.resumable && f.T != "RESUMED" || !tt.resumable && (f.Op != opInvalidSession || string(f.D) != "false") {
				t.Fatalf("resume after closing with %d: %s", tt.code, f.Raw)
			}
		})
	}
}

// TestGatewayHeartbeatsReadBehindABacklog: a client that reads its dispatches slower than they
// come (its socket full) still has every heartbeat it sends read, so that its session does not
// time out while it beats; the ACKs wait behind the backlog.
func TestGatewayHeartbeatsReadBehindABacklog(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 11, 20, 15, 0, 0, 0, time.UTC))
	const interval = 300 * time.Millisecond
	s, srv := startFake(t, Options{Guilds: 2, MessageRate: 2000, Clock: clock.Now,
		Gateway: GatewayOptions{HeartbeatInterval: interval, ResumeWindow: time.Hour}})
	c, _, _ := connect(t, gatewayURL(t, srv))
	const beats = 15 // five times the silence after which a session times out
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i := range beats {
			c.Send(map[string]any{"op": opHeartbeat, "d": i + 1})
			time.Sleep(interval)
		}
	}()
	clock.Add(10 * time.Minute) // megabytes of MESSAGE_CREATE, more than the sockets buffer
	s.Pump()
	<-sent
	waitHeartbeats(t, s, beats)
	if st := s.GatewayStats(); st.Sessions != 1 || st.Open != 1 {
		t.Fatalf("the session of a client that kept beating ended: %+v", st)
	}
}
