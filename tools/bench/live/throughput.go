package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/coder/websocket"
	"github.com/jackc/pgx/v5"

	"forumstats.local/tools/stack"
)

// throughput is the collector's rate and the bare reader's over the same piled-up stream.
type throughput struct {
	collectorEvents int64 // MESSAGE_CREATE the collector read
	collectorTime   time.Duration
	bareEvents      int64
	bareTime        time.Duration
	rounds          []roundRates
	check           stack.LiveCheck
}

func (t throughput) collectorRate() float64 {
	return float64(t.collectorEvents) / t.collectorTime.Seconds()
}
func (t throughput) bareRate() float64 { return float64(t.bareEvents) / t.bareTime.Seconds() }

// Gateway opcodes and the intents the collector asks (GUILDS | GUILD_MESSAGES).
const (
	opDispatch = 0
	opIdentify = 2
	opResume   = 6
	intents    = 1<<0 | 1<<9
)

// measureThroughput: the fake starts held, so that nothing but READY and the GUILD_CREATEs reaches
// the collector's session and the bare reader's (identified, then left resumable) until a pump. A
// first pump brings both sessions to the same moment. Then, in each of -rounds rounds, once
// -events messages are due, a pump puts them in both sessions at once; the collector's session
// sends them as fast as it reads, and its time is until collector_live_events_total
// {type="MESSAGE_CREATE"} counts them all; once they are flushed, the bare reader resumes its
// session and reads the same messages. The rates are the messages of every round over their
// time; rounds alternate the two so that the machine's drift hits both. Last, the stored counts
// are compared with the fake's.
func measureThroughput(ctx context.Context, e *env) (throughput, error) {
	var res throughput
	s, err := e.startScenario(ctx, "throughput", []string{"--gateway-hold", "--guilds", strconv.Itoa(e.o.guilds),
		"--message-rate", strconv.Itoa(e.o.messageRate), "--replay-limit", strconv.FormatInt(4*e.o.events, 10)})
	if err != nil {
		return res, err
	}
	conn, err := connect(ctx, s.dbURL)
	if err != nil {
		return res, err
	}
	defer conn.Close(ctx)
	// The collector's session holds READY and one GUILD_CREATE per server, flushed.
	greeting := int64(1 + len(s.fake.Guilds))
	var cp stack.LiveCheckpoint
	if err := waitUntil(ctx, time.Minute, "the collector's first checkpoint", func() (bool, error) {
		cps, err := stack.LiveCheckpoints(ctx, conn)
		cp = cps[0]
		return err == nil && cp.Seq == greeting, err
	}); err != nil {
		return res, err
	}
	bare, err := identifyBare(ctx, s.fake, greeting)
	if err != nil {
		return res, err
	}
	// Both sessions began at different moments: a first pump brings both to the same one, and
	// both read what it dispatched, so that the measured pump gives them the same messages.
	p0, err := s.fake.Pump(ctx)
	if err != nil {
		return res, err
	}
	if err := waitUntil(ctx, 2*time.Minute, "the collector's flush of the first pump", func() (bool, error) {
		cps, err := stack.LiveCheckpoints(ctx, conn)
		return err == nil && cps[0].Seq == p0.Sessions[cp.SessionID], err
	}); err != nil {
		return res, err
	}
	if _, err := bare.read(ctx, -1); err != nil {
		return res, err
	}
	e.logf("throughput: bare session %s identified, both sessions at %s; piling up %d messages",
		bare.session, p0.Until.Format(time.RFC3339Nano), e.o.events)

	last, collectorSeq := p0, p0.Sessions[cp.SessionID]
	for round := 1; round <= e.o.rounds; round++ {
		var r roundRates
		if r, last, err = measureRound(ctx, e, s, cp.SessionID, collectorSeq, bare, last.Until); err != nil {
			return res, fmt.Errorf("round %d: %w", round, err)
		}
		collectorSeq = last.Sessions[cp.SessionID]
		res.rounds = append(res.rounds, r)
		res.collectorEvents += r.collectorEvents
		res.collectorTime += r.collectorTime
		res.bareEvents += r.bareEvents
		res.bareTime += r.bareTime
		e.logf("throughput: round %d: the collector read %d messages in %s, the bare reader %d in %s",
			round, r.collectorEvents, r.collectorTime, r.bareEvents, r.bareTime)
	}
	if res.check, err = stack.CheckLiveCounts(ctx, conn, s.fake, s.fake.Guilds, last.BeganTimes(), last.Until); err != nil {
		return res, err
	}
	e.logf("throughput: %s", res.check)
	if st, err := s.fake.GatewayStats(ctx); err == nil {
		e.logf("throughput: the fake's gateway: %+v", st)
	}
	if !res.check.Exact() {
		// What the collector said about it (its warnings: failed flushes, reconnects).
		e.logf("throughput: the collector's log:\n%s", s.collector.Output())
	}
	return res, nil
}

// roundRates is one round: the same messages read by the collector, then by the bare reader.
type roundRates struct {
	collectorEvents, bareEvents int64
	collectorTime, bareTime     time.Duration
}

// measureRound piles up -events messages made from since, pumps them, times the collector's
// reading (its session's messages after seq), waits for their flush, then times the bare
// reader's. It returns the pump.
func measureRound(ctx context.Context, e *env, s *scenario, session string, seq int64, bare *bareSession, since time.Time) (roundRates, stack.Pumped, error) {
	var r roundRates
	if err := waitUntil(ctx, e.o.maxPile, fmt.Sprintf("%d messages due", e.o.events), func() (bool, error) {
		var due int64
		for _, g := range s.fake.Guilds {
			n, err := s.fake.Count(ctx, g, "", since, time.Now())
			if err != nil {
				return false, err
			}
			due += n
		}
		return due >= e.o.events, nil
	}); err != nil {
		return r, stack.Pumped{}, fmt.Errorf("%w: raise -max-pile or -message-rate, or lower -events", err)
	}
	counted := func() (int64, error) {
		n, err := stack.Metric(ctx, s.collector.URL+"/metrics", "collector_live_events_total", `type="MESSAGE_CREATE"`)
		return int64(n), err
	}
	base, err := counted()
	if err != nil {
		return r, stack.Pumped{}, err
	}
	p, err := s.fake.Pump(ctx)
	if err != nil {
		return r, p, err
	}
	start := time.Now()
	r.collectorEvents = p.Sessions[session] - seq
	r.bareEvents = p.Sessions[bare.session] - bare.seq
	// Asked every 50 ms: a scrape costs the collector about a millisecond of CPU.
	for {
		n, err := counted()
		if err != nil {
			return r, p, err
		}
		if n-base >= r.collectorEvents {
			r.collectorTime = time.Since(start)
			break
		}
		if time.Since(start) > 5*time.Minute {
			return r, p, fmt.Errorf("the collector read %d of %d messages in 5 minutes", n-base, r.collectorEvents)
		}
		time.Sleep(50 * time.Millisecond)
	}
	conn, err := connect(ctx, s.dbURL)
	if err != nil {
		return r, p, err
	}
	defer conn.Close(ctx)
	if err := waitUntil(ctx, time.Minute, "the collector's flush of every message", func() (bool, error) {
		cps, err := stack.LiveCheckpoints(ctx, conn)
		return err == nil && cps[0].Seq == p.Sessions[session], err
	}); err != nil {
		return r, p, err
	}
	// The reports that flush wakes are written meanwhile: let them end before the ceiling runs.
	time.Sleep(2 * time.Second)
	if r.bareTime, err = bare.read(ctx, r.bareEvents); err != nil {
		return r, p, err
	}
	return r, p, nil
}

// bareSession is the ceiling's gateway session: identified, then left resumable.
type bareSession struct {
	url, session string
	seq          int64 // the last dispatch it read
}

// identifyBare identifies a session of the one shard and reads its READY and GUILD_CREATEs, then
// drops the connection, which leaves the session resumable.
func identifyBare(ctx context.Context, fake *stack.FakeDiscord, greeting int64) (*bareSession, error) {
	ws, err := dialGateway(ctx, fake.GatewayURL())
	if err != nil {
		return nil, err
	}
	defer func() { _ = ws.CloseNow() }()
	if err := send(ctx, ws, map[string]any{"op": opIdentify, "d": map[string]any{"token": token, "intents": intents}}); err != nil {
		return nil, err
	}
	b := &bareSession{}
	for b.seq < greeting {
		_, data, err := ws.Read(ctx)
		if err != nil {
			return nil, fmt.Errorf("bare reader: %w", err)
		}
		var p struct {
			Op int    `json:"op"`
			S  int64  `json:"s"`
			T  string `json:"t"`
			D  struct {
				SessionID string `json:"session_id"`
				ResumeURL string `json:"resume_gateway_url"`
			} `json:"d"`
		}
		if err := json.Unmarshal(data, &p); err != nil {
			return nil, fmt.Errorf("bare reader: %w", err)
		}
		if p.Op != opDispatch {
			continue
		}
		if p.T == "READY" {
			b.session, b.url = p.D.SessionID, p.D.ResumeURL
		}
		b.seq = p.S
	}
	if b.session == "" {
		return nil, fmt.Errorf("bare reader: no READY")
	}
	return b, nil
}

// read resumes the session and reads until RESUMED, decoding each payload's op, s and t only, and
// returns how long it took; it fails unless exactly want MESSAGE_CREATE came (any number when want
// is negative), each once. It drops the connection at the end, which leaves the session resumable.
func (b *bareSession) read(ctx context.Context, want int64) (time.Duration, error) {
	start := time.Now()
	ws, err := dialGateway(ctx, b.url)
	if err != nil {
		return 0, err
	}
	defer func() { _ = ws.CloseNow() }()
	if err := send(ctx, ws, map[string]any{"op": opResume, "d": map[string]any{"token": token, "session_id": b.session, "seq": b.seq}}); err != nil {
		return 0, err
	}
	var n int64
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			return 0, fmt.Errorf("bare reader, after %d messages: %w", n, err)
		}
		var p struct {
			Op int    `json:"op"`
			S  int64  `json:"s"`
			T  string `json:"t"`
		}
		if err := json.Unmarshal(data, &p); err != nil {
			return 0, fmt.Errorf("bare reader: %w", err)
		}
		if p.Op != opDispatch {
			continue
		}
		if p.S != b.seq+1 {
			return 0, fmt.Errorf("bare reader: seq %d after %d", p.S, b.seq)
		}
		b.seq = p.S
		switch p.T {
		case "MESSAGE_CREATE":
			n++
		case "RESUMED":
			d := time.Since(start)
			if want >= 0 && n != want {
				return 0, fmt.Errorf("bare reader: %d MESSAGE_CREATE before RESUMED, want %d", n, want)
			}
			return d, nil
		}
	}
}

// dialGateway connects and reads HELLO.
func dialGateway(ctx context.Context, url string) (*websocket.Conn, error) {
	ws, _, err := websocket.Dial(ctx, url+"?v=10&encoding=json", nil)
	if err != nil {
		return nil, fmt.Errorf("bare reader: %w", err)
	}
	ws.SetReadLimit(1 << 20)
	if _, _, err := ws.Read(ctx); err != nil {
		_ = ws.CloseNow()
		return nil, fmt.Errorf("bare reader, HELLO: %w", err)
	}
	return ws, nil
}

func send(ctx context.Context, ws *websocket.Conn, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return ws.Write(ctx, websocket.MessageText, data)
}

func connect(ctx context.Context, url string) (*pgx.Conn, error) {
	return pgx.Connect(ctx, url)
}
