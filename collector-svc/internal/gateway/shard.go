package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
)

// Intents the collector needs: guilds and their channels (GUILDS) and message create and delete
// in guilds (GUILD_MESSAGES), none of them privileged.
const (
	IntentGuilds        = 1 << 0
	IntentGuildMessages = 1 << 9
	DefaultIntents      = IntentGuilds | IntentGuildMessages
)

// Gateway opcodes.
const (
	opDispatch       = 0
	opHeartbeat      = 1
	opIdentify       = 2
	opResume         = 6
	opReconnect      = 7
	opInvalidSession = 9
	opHello          = 10
	opHeartbeatACK   = 11
)

// closeResumable is the code the collector closes with when it means to resume: any code but
// 1000 and 1001 keeps the session alive on Discord's side.
const closeResumable websocket.StatusCode = 4000

// Checkpoint is what a shard needs to resume its session, in another process too.
type Checkpoint struct {
	SessionID string
	Seq       int64 // the last dispatch handed on
	ResumeURL string
}

// Resumable reports whether the checkpoint names a session to resume.
func (c Checkpoint) Resumable() bool { return c.SessionID != "" && c.ResumeURL != "" }

// FatalError is a close code after which Discord forbids reconnecting: the token, the shard,
// the API version or the intents are wrong, and only a change of configuration helps.
type FatalError struct {
	Shard  int
	Code   int
	Reason string
}

func (e *FatalError) Error() string {
	return fmt.Sprintf("gateway shard %d closed with %d (%s): not reconnecting", e.Shard, e.Code, e.Reason)
}

// fatalCodes are those close codes, with what each means.
var fatalCodes = map[websocket.StatusCode]string{
	4004: "authentication failed: check DISCORD_TOKEN",
	4010: "invalid shard",
	4011: "sharding required: more shards are needed",
	4012: "invalid API version",
	4013: "invalid intents",
	4014: "disallowed intents: a privileged intent is not enabled for the bot",
}

// Gate is what a shard waits on before identifying (Limiter).
type Gate interface {
	Wait(ctx context.Context, shard int) error
}

// ShardConfig configures one shard's connection.
type ShardConfig struct {
	ID, Count int
	URL       string // the gateway URL of /gateway/bot
	Token     string
	Intents   int
	Gate      Gate // default: a Limiter of one identify per DefaultIdentifyInterval
	Logger    *slog.Logger
	// ReadLimit bounds one payload from Discord (a GUILD_CREATE of a large guild is the biggest);
	// a larger one is malformed. Default 16 MiB.
	ReadLimit int64
	// Backoff is the first delay before reconnecting after a failure; it doubles with each
	// failure in a row up to MaxBackoff, with full jitter. Defaults 1 s and 60 s.
	Backoff, MaxBackoff time.Duration
	// ReidentifyDelay is the range of the random wait before identifying again after op 9
	// d=false; default Discord's 1 to 5 s.
	ReidentifyMin, ReidentifyMax time.Duration
	HTTPClient                   *http.Client // for the websocket handshake; default http.DefaultClient
}

// Shard is one shard's gateway connection.
type Shard struct {
	cfg ShardConfig
	log *slog.Logger

	mu sync.Mutex
	cp Checkpoint

	// resumeDialFailures counts failed dials of the resume URL in a row (Run's goroutine only).
	resumeDialFailures int
}

// resumeURLTries is how many failed dials of resume_gateway_url in a row make the shard resume at
// the gateway URL instead: Discord accepts a resume there too, and a stale resume host must not
// hold a resumable session hostage.
const resumeURLTries = 3

// NewShard prepares a shard that resumes from cp when it names a session, else identifies.
func NewShard(cfg ShardConfig, cp Checkpoint) *Shard {
	if cfg.Intents == 0 {
		cfg.Intents = DefaultIntents
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ReadLimit <= 0 {
		cfg.ReadLimit = 16 << 20
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.MaxBackoff < cfg.Backoff {
		cfg.MaxBackoff = max(60*time.Second, cfg.Backoff)
	}
	if cfg.ReidentifyMin <= 0 || cfg.ReidentifyMax < cfg.ReidentifyMin {
		cfg.ReidentifyMin, cfg.ReidentifyMax = time.Second, 5*time.Second
	}
	if cfg.Gate == nil {
		cfg.Gate = NewLimiter(SessionStartLimit{Total: 1000, Remaining: 1000, MaxConcurrency: 1}, DefaultIdentifyInterval)
	}
	return &Shard{cfg: cfg, log: cfg.Logger.With("shard", cfg.ID), cp: cp}
}

// Checkpoint returns the shard's session state: after emit returned for an event, it includes
// that event.
func (s *Shard) Checkpoint() Checkpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cp
}

func (s *Shard) setCheckpoint(cp Checkpoint) {
	s.mu.Lock()
	s.cp = cp
	s.mu.Unlock()
}

// outcome is how a connection ended and what comes next.
type outcome struct {
	mode     string // "resume", "identify" or "stop"
	reason   string
	progress bool // the connection reached READY or RESUMED
	code     websocket.StatusCode
	delay    time.Duration // a wait the protocol asks for before the next connection
}

// Run connects the shard and hands each dispatch to emit, in sequence order, until ctx ends
// (nil) or Discord closes with a code that forbids reconnecting (*FatalError). emit runs on the
// shard's read loop: it must return well within a heartbeat interval, or the connection is taken
// for a zombie. Failures Discord lets resume are resumed, with backoff when they repeat.
func (s *Shard) Run(ctx context.Context, emit func(Event)) error {
	failures := 0
	for ctx.Err() == nil {
		cp := s.Checkpoint()
		if !cp.Resumable() {
			if err := s.cfg.Gate.Wait(ctx, s.cfg.ID); err != nil {
				return nil
			}
		}
		out := s.connect(ctx, cp, emit)
		if ctx.Err() != nil {
			return nil
		}
		if out.mode == "stop" {
			metricStopped.WithLabelValues(strconv.Itoa(int(out.code))).Inc()
			s.log.Error("gateway shard stopped: Discord forbids reconnecting after this close code; fix the configuration and restart",
				"code", int(out.code), "reason", out.reason)
			return &FatalError{Shard: s.cfg.ID, Code: int(out.code), Reason: out.reason}
		}
		if out.mode == "identify" {
			s.setCheckpoint(Checkpoint{}) // the session is gone; a new one starts at READY
		}
		metricReconnects.WithLabelValues(out.mode, out.reason).Inc()
		if out.progress {
			failures = 0
		} else {
			failures++
		}
		delay := out.delay
		if failures > 0 {
			ceil := min(s.cfg.Backoff<<min(failures-1, 20), s.cfg.MaxBackoff)
			delay = max(delay, time.Duration(rand.Int64N(int64(ceil)+1)))
		}
		s.log.Info("gateway connection ended", "next", out.mode, "reason", out.reason, "code", int(out.code), "wait", delay)
		if !sleep(ctx, delay) {
			return nil
		}
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// payload is a gateway payload from Discord.
type payload struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
	S  *int64          `json:"s"`
	T  string          `json:"t"`
}

// conn is one websocket of a shard.
type conn struct {
	s      *Shard
	ws     *websocket.Conn
	acked  atomic.Bool
	zombie atomic.Bool
	seq    atomic.Int64 // the last dispatch handed on, for heartbeats
	wmu    sync.Mutex
	// counted caches each type's counter: the label lookup per dispatch was measurable.
	counted map[string]prometheus.Counter
}

// connect runs one connection: hello, identify or resume, then dispatches until it ends.
func (s *Shard) connect(ctx context.Context, cp Checkpoint, emit func(Event)) outcome {
	resume := cp.Resumable()
	url, atResumeURL := s.cfg.URL, false
	if resume && s.resumeDialFailures < resumeURLTries {
		url, atResumeURL = cp.ResumeURL, true
	}
	dialCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	ws, _, err := websocket.Dial(dialCtx, withQuery(url), &websocket.DialOptions{HTTPClient: s.cfg.HTTPClient})
	cancel()
	if err != nil {
		if atResumeURL {
			s.resumeDialFailures++
		}
		s.log.Warn("gateway dial failed", "url", url, "err", err)
		return outcome{mode: modeOf(resume), reason: "dial"}
	}
	if atResumeURL {
		s.resumeDialFailures = 0
	}
	ws.SetReadLimit(s.cfg.ReadLimit)
	c := &conn{s: s, ws: ws}
	c.seq.Store(cp.Seq)
	done := make(chan struct{})
	defer close(done)
	defer func() { _ = ws.CloseNow() }()
	go func() {
		select {
		case <-ctx.Done():
			// A code other than 1000 keeps the session resumable for the next process.
			closeSoon(ws, "shutting down")
		case <-done:
		}
	}()
	return c.run(resume, cp, emit, done)
}

func modeOf(resume bool) string {
	if resume {
		return "resume"
	}
	return "identify"
}

func withQuery(url string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "v=10&encoding=json"
}

func (c *conn) send(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageText, data)
}

func (c *conn) heartbeat() error {
	var d any
	if seq := c.seq.Load(); seq > 0 {
		d = seq
	}
	return c.send(map[string]any{"op": opHeartbeat, "d": d})
}

// beat sends a heartbeat every interval, the first after a random fraction of it as Discord
// asks; a heartbeat still unACKed when the next is due marks a zombie connection, which is
// closed (not with 1000) to be resumed.
func (c *conn) beat(interval time.Duration, done <-chan struct{}) {
	wait := time.Duration(rand.Float64() * float64(interval))
	c.acked.Store(true)
	for {
		t := time.NewTimer(wait)
		select {
		case <-done:
			t.Stop()
			return
		case <-t.C:
		}
		wait = interval
		if !c.acked.Swap(false) {
			c.zombie.Store(true)
			closeSoon(c.ws, "heartbeat not acknowledged")
			return
		}
		if c.heartbeat() != nil {
			return // the read loop sees the connection fail
		}
	}
}

func (c *conn) run(resume bool, cp Checkpoint, emit func(Event), done <-chan struct{}) outcome {
	s := c.s
	mode := modeOf(resume)
	p, err := c.read()
	if err != nil {
		return c.failed(mode, err, false)
	}
	if p.Op != opHello {
		s.log.Warn("gateway: first payload is not HELLO", "op", p.Op)
		return c.drop(mode, "malformed", false)
	}
	var hello struct {
		Interval int64 `json:"heartbeat_interval"`
	}
	if json.Unmarshal(p.D, &hello) != nil || hello.Interval <= 0 {
		s.log.Warn("gateway: bad HELLO", "d", string(p.D))
		return c.drop(mode, "malformed", false)
	}
	go c.beat(time.Duration(hello.Interval)*time.Millisecond, done)

	if resume {
		err = c.send(map[string]any{"op": opResume, "d": map[string]any{"token": s.cfg.Token, "session_id": cp.SessionID, "seq": cp.Seq}})
	} else {
		err = c.send(map[string]any{"op": opIdentify, "d": map[string]any{
			"token":      s.cfg.Token,
			"intents":    s.cfg.Intents,
			"shard":      []int{s.cfg.ID, s.cfg.Count},
			"properties": map[string]string{"os": "linux", "browser": "forumstats-collector", "device": "forumstats-collector"},
		}})
	}
	if err != nil {
		return c.failed(mode, err, false)
	}

	progress := false
	for {
		p, err := c.read()
		if err != nil {
			return c.failed(modeOf(s.Checkpoint().Resumable()), err, progress)
		}
		switch p.Op {
		case opDispatch:
			if p.S == nil {
				s.log.Warn("gateway: dispatch without a sequence number", "type", p.T)
				return c.drop("resume", "malformed", progress)
			}
			seq := *p.S
			cur := s.Checkpoint()
			if p.T != "READY" && cur.Resumable() && seq <= cur.Seq {
				continue // replayed twice: it was handed on already
			}
			if p.T != "READY" && cur.Resumable() && seq != cur.Seq+1 {
				s.log.Warn("gateway: sequence gap, resuming from the last dispatch", "after", cur.Seq, "got", seq)
				return c.drop("resume", "malformed", progress)
			}
			ev, err := decodeEvent(s.cfg.ID, seq, p.T, p.D)
			if err != nil {
				s.log.Warn("gateway: undecodable dispatch", "seq", seq, "err", err)
				return c.drop(modeOf(cur.Resumable()), "malformed", progress)
			}
			if p.T == "READY" {
				cur = Checkpoint{SessionID: ev.SessionID, ResumeURL: ev.ResumeURL}
				progress = true
			}
			if p.T == "RESUMED" {
				progress = true
			}
			emit(ev)
			cur.Seq = seq
			s.setCheckpoint(cur)
			c.seq.Store(seq)
			c.count(p.T)
		case opHeartbeat:
			if err := c.heartbeat(); err != nil {
				return c.failed(modeOf(s.Checkpoint().Resumable()), err, progress)
			}
		case opHeartbeatACK:
			c.acked.Store(true)
		case opReconnect:
			return c.drop("resume", "reconnect", progress)
		case opInvalidSession:
			var resumable bool
			_ = json.Unmarshal(p.D, &resumable)
			if resumable && s.Checkpoint().Resumable() {
				return c.drop("resume", "invalid_session", progress)
			}
			wait := s.cfg.ReidentifyMin + time.Duration(rand.Int64N(int64(s.cfg.ReidentifyMax-s.cfg.ReidentifyMin)+1))
			out := c.drop("identify", "invalid_session", progress)
			out.delay = wait
			return out
		default:
			s.log.Warn("gateway: unknown opcode", "op", p.Op)
			return c.drop(modeOf(s.Checkpoint().Resumable()), "malformed", progress)
		}
	}
}

// read returns the next payload; bad JSON is an error of its own (errMalformed).
func (c *conn) read() (payload, error) {
	_, data, err := c.ws.Read(context.Background())
	if err != nil {
		return payload{}, err
	}
	var p payload
	if err := json.Unmarshal(data, &p); err != nil {
		return payload{}, fmt.Errorf("%w: %w", errMalformed, err)
	}
	return p, nil
}

var errMalformed = errors.New("malformed payload")

// drop closes the connection (not with 1000, so the session stays resumable) and says what next.
func (c *conn) drop(mode, reason string, progress bool) outcome {
	closeSoon(c.ws, reason)
	return outcome{mode: mode, reason: reason, progress: progress}
}

// closeSoon closes with closeResumable, but waits for Discord's half of the closing handshake
// one second at most: a peer that does not answer is cut off (which keeps the session
// resumable too), so that a reconnect never waits on a dead connection.
func closeSoon(ws *websocket.Conn, reason string) {
	closed := make(chan struct{})
	go func() {
		_ = ws.Close(closeResumable, reason)
		close(closed)
	}()
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-closed:
	case <-t.C:
		_ = ws.CloseNow()
	}
}

// failed classifies the end of a connection by its error.
func (c *conn) failed(mode string, err error, progress bool) outcome {
	if errors.Is(err, errMalformed) || errors.Is(err, websocket.ErrMessageTooBig) {
		c.s.log.Warn("gateway: malformed payload", "err", err)
		return c.drop(mode, "malformed", progress)
	}
	if c.zombie.Load() {
		c.s.log.Warn("gateway: heartbeat not acknowledged, resuming on a new connection")
		return outcome{mode: mode, reason: "zombie", progress: progress}
	}
	code := websocket.CloseStatus(err)
	if code == -1 {
		return outcome{mode: mode, reason: "dropped", progress: progress}
	}
	if why, ok := fatalCodes[code]; ok {
		return outcome{mode: "stop", reason: why, code: code}
	}
	switch code {
	case 4007, 4009: // invalid seq, session timed out: the session cannot be resumed
		return outcome{mode: "identify", reason: "closed", code: code, progress: progress}
	}
	return outcome{mode: mode, reason: "closed", code: code, progress: progress}
}

func (c *conn) count(typ string) {
	ctr, ok := c.counted[typ]
	if !ok {
		if c.counted == nil {
			c.counted = map[string]prometheus.Counter{}
		}
		ctr = metricDispatches.WithLabelValues(typeLabel(typ))
		if len(c.counted) < 64 { // Discord's dispatch types, with room; never a leak
			c.counted[typ] = ctr
		}
	}
	ctr.Inc()
}

func typeLabel(t string) string {
	switch t {
	case "MESSAGE_CREATE", "MESSAGE_DELETE", "MESSAGE_DELETE_BULK", "GUILD_CREATE", "READY", "RESUMED",
		"CHANNEL_CREATE", "CHANNEL_UPDATE", "CHANNEL_DELETE", "THREAD_CREATE", "THREAD_UPDATE", "THREAD_DELETE":
		return t
	}
	return "other"
}
