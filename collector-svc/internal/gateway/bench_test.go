package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"forumstats.local/collector-svc/internal/fakediscord"
	"forumstats.local/collector-svc/internal/fakediscord/fakediscordtest"
)

// replaySession makes a fake whose one session holds many dispatches: a bare client identifies,
// leaves, and the clock passes ten minutes of busy channels. Each benchmark iteration resumes
// that session from seq 1, so that the fake replays them all as fast as the reader takes them;
// last is the session's last sequence number. Both benchmarks check that every dispatch up to
// their RESUMED arrived once, so that events/s counts exactly.
func replaySession(b *testing.B) (e *env, sessionID, resumeURL string, last int64) {
	e = newEnv(b, fakediscord.Options{Guilds: 3, MessageRate: 5000,
		Gateway: fakediscord.GatewayOptions{HeartbeatInterval: time.Hour, ReplayLimit: 1 << 22}})
	c := fakediscordtest.Dial(b, strings.Replace(e.srv.URL, "http://", "ws://", 1)+"/gateway?v=10&encoding=json")
	if hello := c.Must(); hello.Op != opHello {
		b.Fatalf("first payload %s, want HELLO", hello.Raw)
	}
	c.Send(map[string]any{"op": opIdentify, "d": map[string]any{"token": "secret", "intents": DefaultIntents}})
	f := c.Next()
	var ready struct {
		SessionID string `json:"session_id"`
		ResumeURL string `json:"resume_gateway_url"`
	}
	if err := json.Unmarshal(f.D, &ready); err != nil || f.T != "READY" || ready.SessionID == "" {
		b.Fatalf("after IDENTIFY %s, want READY: %v", f.Raw, err)
	}
	_ = c.Conn.CloseNow()
	e.advance(10 * time.Minute)
	return e, ready.SessionID, ready.ResumeURL, e.fake.GatewayStats().Dispatched
}

// BenchmarkReplayBare is the floor: a bare coder/websocket reader that decodes only op, s and t.
func BenchmarkReplayBare(b *testing.B) {
	_, session, resumeURL, last := replaySession(b)
	ctx := context.Background()
	var total int64
	for b.Loop() {
		c := fakediscordtest.Dial(b, resumeURL+"?v=10&encoding=json")
		if hello := c.Must(); hello.Op != opHello {
			b.Fatalf("first payload %s, want HELLO", hello.Raw)
		}
		c.Send(map[string]any{"op": opResume, "d": map[string]any{"token": "secret", "session_id": session, "seq": 1}})
		// The replay is read straight off the connection, decoding only op, s and t: the floor.
		var n int64
		for {
			_, data, err := c.Conn.Read(ctx)
			if err != nil {
				b.Fatal(err)
			}
			var p struct {
				Op int    `json:"op"`
				S  int64  `json:"s"`
				T  string `json:"t"`
			}
			if err := json.Unmarshal(data, &p); err != nil {
				b.Fatal(err)
			}
			if p.Op == opDispatch {
				n++
			}
			if p.T == "RESUMED" && p.S == last+1 {
				break
			}
		}
		_ = c.Conn.CloseNow()
		if n != last {
			b.Fatalf("%d dispatches up to RESUMED at seq %d", n, last+1)
		}
		last++ // this resume's RESUMED joined the session
		total += n
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(total)/float64(b.N), "events/op")
}

// BenchmarkReplayShard is the collector's connection: every dispatch decoded into an Event,
// with the sequence checks and the checkpoint kept.
func BenchmarkReplayShard(b *testing.B) {
	e, session, resumeURL, last := replaySession(b)
	var total int64
	for b.Loop() {
		ctx, cancel := context.WithCancel(context.Background())
		cfg := e.shardConfig(0, 1)
		cfg.Logger = nil
		sh := NewShard(cfg, Checkpoint{SessionID: session, Seq: 1, ResumeURL: resumeURL})
		var n, prev int64 = 0, 1
		err := sh.Run(ctx, func(ev Event) {
			if ev.Seq != prev+1 {
				b.Errorf("%s at seq %d after %d", ev.Type, ev.Seq, prev)
			}
			prev = ev.Seq
			n++
			if ev.Type == "RESUMED" && ev.Seq == last+1 {
				cancel()
			}
		})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		if n != last {
			b.Fatalf("%d events up to RESUMED at seq %d: lost or repeated", n, last+1)
		}
		last++ // this resume's RESUMED joined the session
		total += n
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(total)/float64(b.N), "events/op")
}
