package fakediscord

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"forumstats.local/collector-svc/internal/discord"
)

// The fake's gateway follows Discord's protocol (API v10, JSON encoding, no compression):
//
//   - GET /api/v10/gateway/bot names the websocket (ws://host/gateway), the recommended shard
//     count and the session start limit, whose max_concurrency buckets (shard_id %
//     max_concurrency) may each identify once per IdentifyInterval; a faster identify, or one past
//     the day's limit, gets op 9 (invalid session, d=false).
//   - The server says HELLO (op 10, heartbeat_interval); the client IDENTIFYs (op 2) and gets READY
//     (op 0, s=1: session_id, resume_gateway_url ws://host/gateway/resume, shard, its guilds as
//     unavailable), then one GUILD_CREATE per guild of its shard ((guild_id >> 22) % num_shards)
//     with the channels and threads. Heartbeats (op 1) are ACKed (op 11); op 1 from the server
//     asks for one at once.
//   - A session outlives its connection by ResumeWindow, unless the client closed with 1000 or
//     1001: RESUME (op 6: token, session_id, seq)
//     replays every dispatch after seq, then RESUMED. A session gone, or a seq older than the
//     dispatches it keeps, gets op 9 d=false; a seq the session never reached is closed with 4007.
//   - The fake's clock drives MESSAGE_CREATE: every Tick, each session dispatches the messages of
//     its guilds stamped since the last tick, from the same streams the search counts. Delete
//     dispatches MESSAGE_DELETE or MESSAGE_DELETE_BULK.
//   - Client payloads are at most 4096 bytes, 120 a minute besides heartbeats; the fake closes as Discord does: 4001
//     unknown opcode, 4002 decode error (bad JSON, oversized), 4003 not authenticated, 4004
//     authentication failed, 4005 already authenticated, 4007 invalid seq, 4008 rate limited, 4009
//     session timed out (no heartbeat for three intervals), 4010 invalid shard, 4011 sharding
//     required, 4012 invalid API version, 4013 invalid intents, 4014 disallowed intents.
//
// Knobs for failure tests: DropConnections (abrupt close), SetZombie (no more ACKs),
// InvalidateSessions (op 9), RequestReconnect (op 7), RequestHeartbeat (op 1), InjectFrame (any
// bytes, e.g. bad JSON).

// Paths of the websocket: identify at the first, resume at the second (resume_gateway_url).
const (
	gatewayPath = "/gateway"
	resumePath  = "/gateway/resume"
)

// maxClientPayload is Discord's limit on one payload a client sends.
const maxClientPayload = 4096

// maxMessageRate keeps every stream under one message per millisecond (n(h) < H), which the
// arithmetic of messages.go assumes.
const maxMessageRate = 50000

// Gateway opcodes.
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opPresenceUpdate = 3
	opVoiceState     = 4
	opResume         = 6
	opReconnect      = 7
	opRequestMembers = 8
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatACK   = 11
)

// Intents the fake reads; privileged ones need PrivilegedIntents.
const (
	intentGuilds        = 1 << 0
	intentGuildMessages = 1 << 9
	privilegedIntents   = 1<<1 | 1<<8 | 1<<15 // GUILD_MEMBERS, GUILD_PRESENCES, MESSAGE_CONTENT
	knownIntents        = 1<<26 - 1
)

// GatewayOptions are the gateway's knobs; the zero value is Discord's defaults.
type GatewayOptions struct {
	Shards            int           // the shard count /gateway/bot recommends; default 1
	MaxConcurrency    int           // session_start_limit.max_concurrency; default 1
	SessionStartLimit int           // identifies allowed per 24 hours; default 1000
	IdentifyInterval  time.Duration // one identify per max_concurrency bucket per interval; default 5 s
	HeartbeatInterval time.Duration // HELLO's heartbeat_interval; default 41.25 s
	ResumeWindow      time.Duration // how long a session stays resumable without a connection; default 3 min
	ReplayLimit       int           // dispatches a session keeps for a resume; default 100000
	Tick              time.Duration // how often sessions dispatch what the clock passed; default 20 ms
	MaxGuildsPerShard int           // a shard with more guilds is closed with 4011; default 2500
	// Held starts the gateway held (Hold): no MESSAGE_CREATE is dispatched until PumpHeld or
	// Hold(false).
	Held bool
	// PrivilegedIntents are the privileged intents the bot is allowed (as in the developer
	// portal); identifying with another privileged intent is closed with 4014.
	PrivilegedIntents int64
}

func (o GatewayOptions) withDefaults() GatewayOptions {
	if o.Shards <= 0 {
		o.Shards = 1
	}
	if o.MaxConcurrency <= 0 {
		o.MaxConcurrency = 1
	}
	if o.SessionStartLimit <= 0 {
		o.SessionStartLimit = 1000
	}
	if o.IdentifyInterval <= 0 {
		o.IdentifyInterval = 5 * time.Second
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = 41250 * time.Millisecond
	}
	if o.ResumeWindow <= 0 {
		o.ResumeWindow = 3 * time.Minute
	}
	if o.ReplayLimit <= 0 {
		o.ReplayLimit = 100000
	}
	if o.Tick <= 0 {
		o.Tick = 20 * time.Millisecond
	}
	if o.MaxGuildsPerShard <= 0 {
		o.MaxGuildsPerShard = 2500
	}
	return o
}

// GatewayStats are the gateway's counters.
type GatewayStats struct {
	Connections        int64 `json:"connections"`           // websockets accepted
	Identifies         int64 `json:"identifies"`            // READY sent
	Resumes            int64 `json:"resumes"`               // RESUMED sent
	ResumesAtResumeURL int64 `json:"resumes_at_resume_url"` // of which at resume_gateway_url
	InvalidSessions    int64 `json:"invalid_sessions"`      // op 9 sent
	Heartbeats         int64 `json:"heartbeats"`            // op 1 received
	Dispatched         int64 `json:"dispatched"`            // dispatches created (not counting replays)
	Sessions           int   `json:"sessions"`              // sessions alive now
	Open               int   `json:"open"`                  // connections open now
}

type gatewayState struct {
	mu           sync.Mutex
	sessions     map[string]*session
	conns        map[*gwConn]bool
	lastIdentify map[int]time.Time // per max_concurrency bucket
	starts       []time.Time       // identifies of the last 24 hours
	pumping      bool
	nextSession  uint64
	// held: the clock's messages are not dispatched (Hold); they stay due, stamped when they
	// were, and go out together at PumpHeld or once released.
	held bool

	zombie atomic.Bool

	connections, identifies, resumes, resumesAtURL, invalid, heartbeats, dispatched atomic.Int64
}

func newGatewayState(held bool) *gatewayState {
	return &gatewayState{sessions: map[string]*session{}, conns: map[*gwConn]bool{}, lastIdentify: map[int]time.Time{}, held: held}
}

// session is a gateway session: its dispatches, numbered from 1, outlive its connection.
type session struct {
	id            string
	shard, shards int
	intents       int64
	guilds        []*guild
	// Under gatewayState.mu:
	log    []frame // the dispatches kept for a resume; log[i].seq == log[0].seq+i
	seq    int64   // the last dispatch's
	cursor int64   // Unix ms: the messages stamped before it have been dispatched
	began  int64   // Unix ms: the cursor at IDENTIFY; messages stamped before it are never dispatched
	conn   *gwConn // nil while disconnected
	gone   time.Time
	ended  bool
	wake   chan struct{} // a dispatch was added (capacity 1)
}

type frame struct {
	seq  int64
	data []byte
}

type gwConn struct {
	ws        *websocket.Conn
	host      string
	atResume  bool
	done      chan struct{}
	lastBeat  atomic.Int64 // Unix nanoseconds of the last heartbeat received (or of HELLO)
	sess      *session     // under gatewayState.mu
	sent      []time.Time  // the client's payloads of the current minute
	writeLock sync.Mutex   // orders control frames against each other
}

// now is the fake's clock: Clock, or the real time.
func (s *Server) now() time.Time {
	if s.opts.Clock != nil {
		return s.opts.Clock()
	}
	return time.Now()
}

// shardOf is Discord's shard routing.
func shardOf(guildID uint64, shards int) int {
	return int((guildID >> 22) % uint64(shards))
}

func (s *Server) serveGatewayBot(w http.ResponseWriter, r *http.Request) {
	if s.opts.Token != "" && r.Header.Get("Authorization") != "Bot "+s.opts.Token {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "401: Unauthorized", "code": 0})
		return
	}
	o := s.opts.Gateway
	s.gw.mu.Lock()
	now := time.Now()
	s.gw.pruneStarts(now)
	remaining := o.SessionStartLimit - len(s.gw.starts)
	resetAfter := time.Duration(0)
	if len(s.gw.starts) > 0 {
		resetAfter = s.gw.starts[0].Add(24 * time.Hour).Sub(now)
	}
	s.gw.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"url":    wsScheme(r) + r.Host + gatewayPath,
		"shards": o.Shards,
		"session_start_limit": map[string]any{
			"total":           o.SessionStartLimit,
			"remaining":       max(remaining, 0),
			"reset_after":     resetAfter.Milliseconds(),
			"max_concurrency": o.MaxConcurrency,
		},
	})
}

func wsScheme(r *http.Request) string {
	if r.TLS != nil {
		return "wss://"
	}
	return "ws://"
}

func (g *gatewayState) pruneStarts(now time.Time) {
	i := 0
	for i < len(g.starts) && now.Sub(g.starts[i]) >= 24*time.Hour {
		i++
	}
	g.starts = g.starts[i:]
}

// payload is a gateway payload as the client sends it.
type payload struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
}

// closeError ends a connection with a gateway close code.
type closeError struct {
	code   websocket.StatusCode
	reason string
}

func (s *Server) serveGateway(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept answered the bad handshake
	}
	// The fake reads each payload under its own limit, to close with 4002 as Discord does
	// rather than the library's 1009.
	ws.SetReadLimit(-1)
	gc := &gwConn{ws: ws, host: wsScheme(r) + r.Host, atResume: r.URL.Path == resumePath, done: make(chan struct{})}
	s.gw.connections.Add(1)
	s.gw.mu.Lock()
	s.gw.conns[gc] = true
	s.gw.mu.Unlock()
	defer func() {
		close(gc.done)
		s.gw.mu.Lock()
		delete(s.gw.conns, gc)
		if ss := gc.sess; ss != nil && ss.conn == gc {
			ss.conn, ss.gone = nil, time.Now()
		}
		s.gw.mu.Unlock()
		_ = ws.CloseNow()
	}()

	if ce := s.converse(r, gc); ce != nil {
		_ = ws.Close(ce.code, ce.reason)
	}
}

// converse runs one connection until it fails or must be closed with a code.
func (s *Server) converse(r *http.Request, gc *gwConn) *closeError {
	q := r.URL.Query()
	if v := q.Get("v"); v != "10" && v != "9" {
		return &closeError{4012, "Invalid API version"}
	}
	if e := q.Get("encoding"); e != "" && e != "json" {
		return &closeError{4002, "Decode error"}
	}
	ctx := r.Context()
	interval := s.opts.Gateway.HeartbeatInterval
	gc.lastBeat.Store(time.Now().UnixNano())
	if gc.send(ctx, map[string]any{"op": opHello, "d": map[string]any{"heartbeat_interval": interval.Milliseconds()}, "s": nil, "t": nil}) != nil {
		return nil
	}
	go s.watchHeartbeats(gc, interval)
	for {
		typ, rd, err := gc.ws.Reader(ctx)
		if err != nil {
			if code := websocket.CloseStatus(err); code == websocket.StatusNormalClosure || code == websocket.StatusGoingAway {
				// As on Discord, a client closing with 1000 or 1001 ends its session: only
				// another code (or none, a dropped connection) leaves it resumable.
				s.gw.mu.Lock()
				if ss := gc.sess; ss != nil && ss.conn == gc {
					s.endSession(ss)
				}
				s.gw.mu.Unlock()
			}
			return nil
		}
		data, err := io.ReadAll(io.LimitReader(rd, maxClientPayload+1))
		if err != nil {
			return nil
		}
		if len(data) > maxClientPayload || typ != websocket.MessageText {
			return &closeError{4002, "Decode error"}
		}
		var p payload
		if json.Unmarshal(data, &p) != nil {
			return &closeError{4002, "Decode error"}
		}
		// Heartbeats are exempt, so that the short intervals of tests do not trip the limit.
		if p.Op != opHeartbeat && !gc.allow(time.Now()) {
			return &closeError{4008, "Rate limited"}
		}
		if ce := s.handle(ctx, gc, p); ce != nil {
			return ce
		}
	}
}

// allow applies Discord's limit of 120 payloads a minute per connection.
func (gc *gwConn) allow(now time.Time) bool {
	i := 0
	for i < len(gc.sent) && now.Sub(gc.sent[i]) >= time.Minute {
		i++
	}
	gc.sent = append(gc.sent[i:], now)
	return len(gc.sent) <= 120
}

// watchHeartbeats closes a connection silent for three heartbeat intervals with 4009, and ends
// its session, as Discord times out a client that stopped heartbeating.
func (s *Server) watchHeartbeats(gc *gwConn, interval time.Duration) {
	t := time.NewTicker(interval / 4)
	defer t.Stop()
	for {
		select {
		case <-gc.done:
			return
		case <-t.C:
		}
		if time.Since(time.Unix(0, gc.lastBeat.Load())) > 3*interval {
			s.gw.mu.Lock()
			if ss := gc.sess; ss != nil && ss.conn == gc { // not a session resumed elsewhere since
				s.endSession(ss)
			}
			s.gw.mu.Unlock()
			_ = gc.ws.Close(4009, "Session timed out")
			return
		}
	}
}

func (s *Server) handle(ctx context.Context, gc *gwConn, p payload) *closeError {
	// A heartbeat waits on nothing: neither the gateway's lock (held while a pump dispatches
	// many messages) nor the write of its ACK, which a client that reads its dispatches slower
	// than they come finds behind them. The heartbeats it keeps sending must still be read, or
	// its session would time out (4009) although it beat.
	if p.Op == opHeartbeat {
		s.gw.heartbeats.Add(1)
		gc.lastBeat.Store(time.Now().UnixNano())
		if !s.gw.zombie.Load() {
			go func() { _ = gc.send(ctx, map[string]any{"op": opHeartbeatACK, "d": nil, "s": nil, "t": nil}) }()
		}
		return nil
	}
	s.gw.mu.Lock()
	authed := gc.sess != nil
	s.gw.mu.Unlock()
	switch p.Op {
	case opIdentify:
		if authed {
			return &closeError{4005, "Already authenticated"}
		}
		return s.identify(ctx, gc, p.D)
	case opResume:
		if authed {
			return &closeError{4005, "Already authenticated"}
		}
		return s.resume(ctx, gc, p.D)
	case opPresenceUpdate, opVoiceState, opRequestMembers:
		if !authed {
			return &closeError{4003, "Not authenticated"}
		}
		return nil // accepted and ignored: the fake has no presence, voice or members
	}
	return &closeError{4001, "Unknown opcode"}
}

func (s *Server) tokenOK(token string) bool {
	if s.opts.Token == "" {
		return token != ""
	}
	return token == s.opts.Token || token == "Bot "+s.opts.Token
}

func (s *Server) identify(ctx context.Context, gc *gwConn, raw json.RawMessage) *closeError {
	var d struct {
		Token   string `json:"token"`
		Intents *int64 `json:"intents"`
		Shard   []int  `json:"shard"`
	}
	if json.Unmarshal(raw, &d) != nil || d.Intents == nil {
		return &closeError{4002, "Decode error"}
	}
	if !s.tokenOK(d.Token) {
		return &closeError{4004, "Authentication failed"}
	}
	shard, shards := 0, 1
	if d.Shard != nil {
		if len(d.Shard) != 2 || d.Shard[1] < 1 || d.Shard[0] < 0 || d.Shard[0] >= d.Shard[1] {
			return &closeError{4010, "Invalid shard"}
		}
		shard, shards = d.Shard[0], d.Shard[1]
	}
	intents := *d.Intents
	if intents < 0 || intents&^knownIntents != 0 {
		return &closeError{4013, "Invalid intent(s)"}
	}
	if intents&privilegedIntents&^s.opts.Gateway.PrivilegedIntents != 0 {
		return &closeError{4014, "Disallowed intent(s)"}
	}
	var guilds []*guild
	for _, g := range s.guilds {
		if shardOf(g.id, shards) == shard {
			guilds = append(guilds, g)
		}
	}
	if len(guilds) > s.opts.Gateway.MaxGuildsPerShard {
		return &closeError{4011, "Sharding required"}
	}

	o := s.opts.Gateway
	s.gw.mu.Lock()
	now := time.Now()
	bucket := shard % o.MaxConcurrency
	s.gw.pruneStarts(now)
	if last, ok := s.gw.lastIdentify[bucket]; (ok && now.Sub(last) < o.IdentifyInterval) || len(s.gw.starts) >= o.SessionStartLimit {
		s.gw.mu.Unlock()
		return s.invalidSession(ctx, gc, false)
	}
	s.gw.lastIdentify[bucket] = now
	s.gw.starts = append(s.gw.starts, now)
	s.gw.nextSession++
	ss := &session{
		id:      fmt.Sprintf("%032x", mix(uint64(s.opts.Seed), s.gw.nextSession, uint64(now.UnixNano()))),
		shard:   shard,
		shards:  shards,
		intents: intents,
		guilds:  guilds,
		cursor:  s.now().UnixMilli() + 1,
		conn:    gc,
		wake:    make(chan struct{}, 1),
	}
	ss.began = ss.cursor
	gc.sess = ss
	s.gw.sessions[ss.id] = ss
	unavailable := make([]map[string]any, 0, len(guilds))
	for _, g := range guilds {
		unavailable = append(unavailable, map[string]any{"id": strconv.FormatUint(g.id, 10), "unavailable": true})
	}
	bot := strconv.FormatUint(snowflake(discord.Epoch+86_400_000, mix(uint64(s.opts.Seed), 0x626f74)&lowMask), 10)
	s.dispatch(ss, "READY", map[string]any{
		"v":                  10,
		"user":               map[string]any{"id": bot, "username": "collector", "discriminator": "0", "bot": true},
		"guilds":             unavailable,
		"session_id":         ss.id,
		"resume_gateway_url": gc.host + resumePath,
		"shard":              []int{shard, shards},
		"application":        map[string]any{"id": bot, "flags": 0},
	})
	if intents&intentGuilds != 0 {
		for _, g := range guilds {
			s.dispatch(ss, "GUILD_CREATE", guildCreateJSON(g))
		}
	}
	s.gw.identifies.Add(1)
	s.startPump()
	s.gw.mu.Unlock()
	go s.writeDispatches(gc, ss, 1)
	return nil
}

func (s *Server) resume(ctx context.Context, gc *gwConn, raw json.RawMessage) *closeError {
	var d struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       *int64 `json:"seq"`
	}
	if json.Unmarshal(raw, &d) != nil || d.Seq == nil {
		return &closeError{4002, "Decode error"}
	}
	if !s.tokenOK(d.Token) {
		return &closeError{4004, "Authentication failed"}
	}
	s.gw.mu.Lock()
	ss := s.gw.sessions[d.SessionID]
	if ss == nil || ss.ended || *d.Seq < s.firstSeq(ss)-1 || *d.Seq < 0 {
		s.gw.mu.Unlock()
		return s.invalidSession(ctx, gc, false)
	}
	if *d.Seq > ss.seq {
		s.gw.mu.Unlock()
		return &closeError{4007, "Invalid seq"}
	}
	if old := ss.conn; old != nil {
		// The client gave up on its old connection: Discord drops it.
		go func() { _ = old.ws.CloseNow() }()
	}
	ss.conn, ss.gone = gc, time.Time{}
	gc.sess = ss
	s.catchUp(ss, s.now().UnixMilli())
	s.dispatch(ss, "RESUMED", map[string]any{})
	s.gw.resumes.Add(1)
	if gc.atResume {
		s.gw.resumesAtURL.Add(1)
	}
	s.gw.mu.Unlock()
	go s.writeDispatches(gc, ss, *d.Seq+1)
	return nil
}

// invalidSession sends op 9 with d=false; the connection stays open until the client closes it.
func (s *Server) invalidSession(ctx context.Context, gc *gwConn, resumable bool) *closeError {
	s.gw.invalid.Add(1)
	_ = gc.send(ctx, map[string]any{"op": opInvalidSession, "d": resumable, "s": nil, "t": nil})
	return nil
}

// firstSeq is the oldest dispatch the session still has; under gatewayState.mu.
func (s *Server) firstSeq(ss *session) int64 {
	if len(ss.log) == 0 {
		return ss.seq + 1
	}
	return ss.log[0].seq
}

// dispatch adds a dispatch to the session; under gatewayState.mu.
func (s *Server) dispatch(ss *session, typ string, d any) {
	ss.seq++
	data, err := json.Marshal(map[string]any{"op": opDispatch, "d": d, "s": ss.seq, "t": typ})
	if err != nil {
		panic(err) // the fake's own maps always marshal
	}
	ss.log = append(ss.log, frame{ss.seq, data})
	// Trimmed in batches, so that a session at its limit copies its log once per quarter of it.
	if limit := s.opts.Gateway.ReplayLimit; len(ss.log) > limit+limit/4 {
		ss.log = slices.Clone(ss.log[len(ss.log)-limit:])
	}
	s.gw.dispatched.Add(1)
	select {
	case ss.wake <- struct{}{}:
	default:
	}
}

// endSession forgets a session: it can no longer be resumed; under gatewayState.mu.
func (s *Server) endSession(ss *session) {
	ss.ended = true
	delete(s.gw.sessions, ss.id)
	select {
	case ss.wake <- struct{}{}:
	default:
	}
}

// writeDispatches sends the session's dispatches from seq next on, as they come, while gc is the
// session's connection.
func (s *Server) writeDispatches(gc *gwConn, ss *session, next int64) {
	for {
		s.gw.mu.Lock()
		if ss.conn != gc || ss.ended {
			s.gw.mu.Unlock()
			return
		}
		first := s.firstSeq(ss)
		if next < first {
			// The client fell further behind than the session keeps: it cannot be told what it
			// missed, so the session ends as Discord's would.
			s.endSession(ss)
			s.gw.mu.Unlock()
			_ = gc.ws.Close(4000, "Unknown error")
			return
		}
		frames := ss.log[next-first:]
		s.gw.mu.Unlock()
		for _, f := range frames {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := gc.ws.Write(ctx, websocket.MessageText, f.data)
			cancel()
			if err != nil {
				return
			}
			next = f.seq + 1
		}
		if len(frames) == 0 {
			select {
			case <-ss.wake:
			case <-gc.done:
				return
			}
		}
	}
}

func (gc *gwConn) send(ctx context.Context, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	gc.writeLock.Lock()
	defer gc.writeLock.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return gc.ws.Write(ctx, websocket.MessageText, data)
}

// startPump starts the goroutine that dispatches the messages the clock passes, unless it runs;
// under gatewayState.mu. It stops when no session is left.
func (s *Server) startPump() {
	if s.gw.pumping {
		return
	}
	s.gw.pumping = true
	go func() {
		t := time.NewTicker(s.opts.Gateway.Tick)
		defer t.Stop()
		for range t.C {
			s.gw.mu.Lock()
			s.pumpLocked()
			if len(s.gw.sessions) == 0 {
				s.gw.pumping = false
				s.gw.mu.Unlock()
				return
			}
			s.gw.mu.Unlock()
		}
	}()
}

// Pump dispatches to every session, now, the messages the clock has passed, and ends the sessions
// whose resume window is over, as the gateway does every Tick: tests that move a virtual clock
// call it to see the dispatches without waiting for a tick.
func (s *Server) Pump() {
	s.gw.mu.Lock()
	defer s.gw.mu.Unlock()
	s.pumpLocked()
}

func (s *Server) pumpLocked() {
	now := s.now().UnixMilli()
	for _, ss := range s.gw.sessions {
		if ss.conn == nil && time.Since(ss.gone) > s.opts.Gateway.ResumeWindow {
			s.endSession(ss)
			continue
		}
		s.catchUp(ss, now)
	}
}

// catchUpGuild brings the sessions that receive the guild's events up to nowMs; under
// gatewayState.mu.
func (s *Server) catchUpGuild(g *guild, nowMs int64) {
	for _, ss := range s.gw.sessions {
		if shardOf(g.id, ss.shards) == ss.shard {
			s.catchUp(ss, nowMs)
		}
	}
}

// catchUp dispatches MESSAGE_CREATE for every message of the session's guilds stamped from its
// cursor to nowMs included, oldest first, unless the gateway is held; under gatewayState.mu.
func (s *Server) catchUp(ss *session, nowMs int64) {
	if s.gw.held {
		return
	}
	s.advance(ss, nowMs)
}

// advance is catchUp, held or not; under gatewayState.mu.
func (s *Server) advance(ss *session, nowMs int64) {
	end := nowMs + 1
	if end <= ss.cursor {
		return
	}
	from := ss.cursor
	ss.cursor = end
	if ss.intents&intentGuildMessages == 0 {
		return
	}
	type hit struct {
		g *guild
		m Message
	}
	var hits []hit
	for _, g := range ss.guilds {
		for _, c := range g.channels {
			if !c.holdsMessages() {
				continue
			}
			for _, m := range c.msgs.between(c.id, from, end) {
				if !s.isDeleted(c.id, m.ID) {
					hits = append(hits, hit{g, m})
				}
			}
		}
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if a.m.ID != b.m.ID {
			if a.m.ID < b.m.ID {
				return -1
			}
			return 1
		}
		if a.m.ChannelID < b.m.ChannelID {
			return -1
		}
		return 1
	})
	for _, h := range hits {
		d := messageJSON(h.g, h.m)
		delete(d, "hit")
		d["guild_id"] = strconv.FormatUint(h.g.id, 10)
		s.dispatch(ss, "MESSAGE_CREATE", d)
	}
}

// Hold stops (on) or resumes the dispatch of the messages the clock passes. While held, the
// messages stay due: a benchmark lets them pile up, then PumpHeld puts them all in the sessions at
// once, which send them as fast as each client reads; a test holds the gateway to end a stream
// at a known moment. Deletions, READY, GUILD_CREATE and RESUMED are dispatched as always.
func (s *Server) Hold(on bool) {
	s.gw.mu.Lock()
	defer s.gw.mu.Unlock()
	s.gw.held = on
}

// Pumped is what PumpHeld dispatched up to.
type Pumped struct {
	// Until: every message stamped before it has been dispatched to every session.
	Until time.Time `json:"until"`
	// Sessions holds each live session's last sequence number, by session id: a client that has
	// handled that one has every message stamped before Until.
	Sessions map[string]int64 `json:"sessions"`
	// Began holds, by session id, when each live session began: its first message may be stamped
	// then, none before (a message made in the millisecond of its IDENTIFY came before it). A
	// client that takes the moment it received a GUILD_CREATE as the start of its counting may
	// take that same millisecond on a fast local connection, where no real gateway is that fast.
	Began map[string]time.Time `json:"began"`
}

// PumpHeld dispatches to every session, now and held or not, the messages the clock has passed.
func (s *Server) PumpHeld() Pumped {
	s.gw.mu.Lock()
	defer s.gw.mu.Unlock()
	now := s.now().UnixMilli()
	p := Pumped{Until: time.UnixMilli(now + 1).UTC(), Sessions: map[string]int64{}, Began: map[string]time.Time{}}
	for _, ss := range s.gw.sessions {
		s.advance(ss, now)
		p.Sessions[ss.id] = ss.seq
		p.Began[ss.id] = time.UnixMilli(ss.began).UTC()
	}
	return p
}

// announceDelete dispatches a deletion to the sessions of the guild's shard; under
// gatewayState.mu.
func (s *Server) announceDelete(g *guild, channelID uint64, ids []uint64) {
	gid, cid := strconv.FormatUint(g.id, 10), strconv.FormatUint(channelID, 10)
	for _, ss := range s.gw.sessions {
		if shardOf(g.id, ss.shards) != ss.shard || ss.intents&intentGuildMessages == 0 {
			continue
		}
		if len(ids) == 1 {
			s.dispatch(ss, "MESSAGE_DELETE", map[string]any{"id": strconv.FormatUint(ids[0], 10), "channel_id": cid, "guild_id": gid})
			continue
		}
		strs := make([]string, len(ids))
		for i, id := range ids {
			strs[i] = strconv.FormatUint(id, 10)
		}
		s.dispatch(ss, "MESSAGE_DELETE_BULK", map[string]any{"ids": strs, "channel_id": cid, "guild_id": gid})
	}
}

// between lists the messages of the stream stamped in [a, b) (Unix ms), oldest first.
func (s stream) between(channelID uint64, a, b int64) []Message {
	b = min(b, lastMs+1)
	a = max(a, s.startHour*hourMs)
	if b <= a {
		return nil
	}
	var out []Message
	for h := floorDiv(a, hourMs); h <= floorDiv(b-1, hourMs); h++ {
		n := s.perHour(h)
		base := h * hourMs
		for k := before(n, a-base); k < before(n, b-base); k++ {
			ms := base + k*hourMs/n
			out = append(out, Message{ID: snowflake(ms, s.low(h, k)), ChannelID: channelID, Ms: ms})
		}
	}
	return out
}

func guildCreateJSON(g *guild) map[string]any {
	gid := strconv.FormatUint(g.id, 10)
	d := guildJSON(g)
	d["unavailable"] = false
	d["member_count"] = 16
	d["large"] = false
	d["channels"] = channelsJSON(g)
	threads := []map[string]any{}
	for _, c := range g.channels {
		if c.thread {
			threads = append(threads, map[string]any{
				"id":              strconv.FormatUint(c.id, 10),
				"type":            c.typ,
				"guild_id":        gid,
				"parent_id":       strconv.FormatUint(c.parent, 10),
				"name":            c.name,
				"thread_metadata": map[string]any{"archived": false, "locked": false, "auto_archive_duration": 10080},
			})
		}
	}
	d["threads"] = threads
	return d
}

// connections lists the open connections, for the knobs, which write outside the lock.
func (s *Server) connections() []*gwConn {
	s.gw.mu.Lock()
	defer s.gw.mu.Unlock()
	out := make([]*gwConn, 0, len(s.gw.conns))
	for gc := range s.gw.conns {
		out = append(out, gc)
	}
	return out
}

// DropConnections closes every gateway connection abruptly, without a close frame, as a network
// failure would; the sessions stay resumable.
func (s *Server) DropConnections() {
	for _, gc := range s.connections() {
		_ = gc.ws.CloseNow()
	}
}

// SetZombie stops (on) or resumes ACKing heartbeats: with it on, connections look alive but
// their heartbeats go unanswered.
func (s *Server) SetZombie(on bool) { s.gw.zombie.Store(on) }

// InvalidateSessions sends op 9 to every authenticated connection; when not resumable, the
// sessions end too, so that only a new IDENTIFY works.
func (s *Server) InvalidateSessions(resumable bool) {
	for _, gc := range s.connections() {
		s.gw.mu.Lock()
		ss := gc.sess
		if ss != nil && !resumable {
			s.endSession(ss)
		}
		s.gw.mu.Unlock()
		if ss != nil {
			_ = s.invalidSession(context.Background(), gc, resumable)
		}
	}
}

// RequestReconnect sends op 7 to every authenticated connection.
func (s *Server) RequestReconnect() {
	s.sendAll(true, map[string]any{"op": opReconnect, "d": nil, "s": nil, "t": nil})
}

// RequestHeartbeat sends op 1 to every connection, which must answer with a heartbeat at once.
func (s *Server) RequestHeartbeat() {
	s.sendAll(false, map[string]any{"op": opHeartbeat, "d": nil, "s": nil, "t": nil})
}

func (s *Server) sendAll(authedOnly bool, v any) {
	for _, gc := range s.connections() {
		s.gw.mu.Lock()
		authed := gc.sess != nil
		s.gw.mu.Unlock()
		if authed || !authedOnly {
			_ = gc.send(context.Background(), v)
		}
	}
}

// InjectFrame sends data as one text frame to every connection, as it is: a malformed or
// oversized payload, or an unknown opcode, for the tests of a client's defences.
func (s *Server) InjectFrame(data []byte) {
	for _, gc := range s.connections() {
		gc.writeLock.Lock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = gc.ws.Write(ctx, websocket.MessageText, data)
		cancel()
		gc.writeLock.Unlock()
	}
}

// Close ends every session and connection of the gateway.
func (s *Server) Close() {
	s.gw.mu.Lock()
	for _, ss := range s.gw.sessions {
		s.endSession(ss)
	}
	s.gw.mu.Unlock()
	s.DropConnections()
}

// GatewayStats returns the gateway's counters.
func (s *Server) GatewayStats() GatewayStats {
	s.gw.mu.Lock()
	sessions, open := len(s.gw.sessions), len(s.gw.conns)
	s.gw.mu.Unlock()
	return GatewayStats{
		Connections:        s.gw.connections.Load(),
		Identifies:         s.gw.identifies.Load(),
		Resumes:            s.gw.resumes.Load(),
		ResumesAtResumeURL: s.gw.resumesAtURL.Load(),
		InvalidSessions:    s.gw.invalid.Load(),
		Heartbeats:         s.gw.heartbeats.Load(),
		Dispatched:         s.gw.dispatched.Load(),
		Sessions:           sessions,
		Open:               open,
	}
}

// serveControl answers the knobs under FakePrefix (see the package documentation).
func (s *Server) serveControl(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, FakePrefix)
	if name == "gateway/stats" {
		writeJSON(w, http.StatusOK, s.GatewayStats())
		return
	}
	if r.Method != http.MethodPost {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"message": "405: Method Not Allowed", "code": 0})
		return
	}
	flag := func(name string) (bool, bool) {
		v, err := strconv.ParseBool(r.URL.Query().Get(name))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"message": name + " must be true or false", "code": 50035})
		}
		return v, err == nil
	}
	switch name {
	case "delete":
		s.serveDelete(w, r)
		return
	case "gateway/inject":
		data, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"message": "unreadable body", "code": 50035})
			return
		}
		s.InjectFrame(data)
	case "gateway/drop":
		s.DropConnections()
	case "gateway/reconnect":
		s.RequestReconnect()
	case "gateway/heartbeat":
		s.RequestHeartbeat()
	case "gateway/zombie":
		on, ok := flag("on")
		if !ok {
			return
		}
		s.SetZombie(on)
	case "gateway/hold":
		on, ok := flag("on")
		if !ok {
			return
		}
		s.Hold(on)
	case "gateway/pump":
		writeJSON(w, http.StatusOK, s.PumpHeld())
		return
	case "gateway/invalid-session":
		resumable, ok := flag("resumable")
		if !ok {
			return
		}
		s.InvalidateSessions(resumable)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "404: Not Found", "code": 0})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
