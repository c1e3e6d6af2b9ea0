package gateway

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// TestLimiter: shards of one bucket (shard_id % max_concurrency) identify interval apart, the
// buckets together, and no more sessions start than remain before the reset.
func TestLimiter(t *testing.T) {
	tests := []struct {
		name      string
		limit     SessionStartLimit
		shards    []int
		wantAfter []time.Duration // when each shard's Wait returns, in order of the calls
	}{
		{"one bucket", SessionStartLimit{Total: 10, Remaining: 10, MaxConcurrency: 1}, []int{0, 1, 2}, []time.Duration{0, 5 * time.Second, 10 * time.Second}},
		{"two buckets", SessionStartLimit{Total: 10, Remaining: 10, MaxConcurrency: 2}, []int{0, 1, 2, 3}, []time.Duration{0, 0, 5 * time.Second, 5 * time.Second}},
		{"no starts left", SessionStartLimit{Total: 10, Remaining: 1, ResetAfter: time.Hour, MaxConcurrency: 16}, []int{0, 1, 2}, []time.Duration{0, time.Hour, time.Hour}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := NewLimiter(tt.limit, 5*time.Second)
				start := time.Now()
				got := make([]time.Duration, len(tt.shards))
				for i, shard := range tt.shards {
					go func() {
						if err := l.Wait(context.Background(), shard); err != nil {
							t.Error(err)
						}
						got[i] = time.Since(start)
					}()
					synctest.Wait() // the calls reserve their turns in order
				}
				time.Sleep(2 * time.Hour)
				synctest.Wait()
				if !slices.Equal(got, tt.wantAfter) {
					t.Fatalf("identified after %v, want %v", got, tt.wantAfter)
				}
			})
		})
	}
}

func TestLimiterCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLimiter(SessionStartLimit{Total: 1, Remaining: 0, ResetAfter: time.Hour, MaxConcurrency: 1}, 5*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := l.Wait(ctx, 0); err == nil {
			t.Fatal("Wait returned before the reset without an error")
		}
	})
}

func TestDecodeEvent(t *testing.T) {
	tests := []struct {
		typ, d string
		want   Event
		bad    bool
	}{
		{"MESSAGE_CREATE", `{"id":"1001","channel_id":"20","guild_id":"300","content":"x"}`, Event{GuildID: 300, ChannelID: 20, IDs: []uint64{1001}}, false},
		{"MESSAGE_DELETE", `{"id":"1001","channel_id":"20","guild_id":"300"}`, Event{GuildID: 300, ChannelID: 20, IDs: []uint64{1001}}, false},
		{"MESSAGE_DELETE_BULK", `{"ids":["1","2"],"channel_id":"20","guild_id":"300"}`, Event{GuildID: 300, ChannelID: 20, IDs: []uint64{1, 2}}, false},
		{"GUILD_CREATE", `{"id":"300","channels":[{"id":"20","type":0,"parent_id":"19","name":"general"}],"threads":[{"id":"21","type":11,"parent_id":"20","name":"t"}]}`,
			Event{GuildID: 300, Channels: []Channel{{ID: 20, ParentID: 19, Type: 0, Name: "general"}, {ID: 21, ParentID: 20, Type: 11, Name: "t", Thread: true}}}, false},
		{"THREAD_CREATE", `{"id":"21","guild_id":"300","parent_id":"20","type":12,"name":"t"}`,
			Event{GuildID: 300, ChannelID: 21, ParentID: 20, Channels: []Channel{{ID: 21, ParentID: 20, Type: 12, Name: "t", Thread: true}}}, false},
		{"CHANNEL_DELETE", `{"id":"22","guild_id":"300","parent_id":null,"type":0,"name":"old"}`,
			Event{GuildID: 300, ChannelID: 22, Channels: []Channel{{ID: 22, Type: 0, Name: "old"}}}, false},
		{"CHANNEL_UPDATE", `{"guild_id":"300"}`, Event{}, true},
		{"READY", `{"session_id":"abc","resume_gateway_url":"wss://r"}`, Event{SessionID: "abc", ResumeURL: "wss://r"}, false},
		{"PRESENCE_UPDATE", `not even json`, Event{}, false}, // not read: passes with its seq
		{"RESUMED", `null`, Event{}, false},
		{"MESSAGE_CREATE", `{"id":1001,"channel_id":"20"}`, Event{}, true},
		{"MESSAGE_CREATE", `{"id":"x","channel_id":"20"}`, Event{}, true},
		{"MESSAGE_CREATE", `{"channel_id":"20"}`, Event{}, true},
		{"MESSAGE_DELETE_BULK", `{"ids":[],"channel_id":"20"}`, Event{}, true},
		{"GUILD_CREATE", `{"channels":[]}`, Event{}, true},
		{"READY", `{"session_id":"abc"}`, Event{}, true},
		{"MESSAGE_CREATE", `[`, Event{}, true},
	}
	for _, tt := range tests {
		got, err := decodeEvent(2, 7, tt.typ, json.RawMessage(tt.d))
		if tt.bad {
			if err == nil {
				t.Errorf("%s %s: no error", tt.typ, tt.d)
			}
			continue
		}
		tt.want.Shard, tt.want.Seq, tt.want.Type = 2, 7, tt.typ
		if err != nil || !equalEvents(got, tt.want) {
			t.Errorf("%s %s = %+v, %v; want %+v", tt.typ, tt.d, got, err, tt.want)
		}
	}
}

func equalEvents(a, b Event) bool {
	return a.Shard == b.Shard && a.Seq == b.Seq && a.Type == b.Type && a.GuildID == b.GuildID && a.ChannelID == b.ChannelID &&
		a.ParentID == b.ParentID && slices.Equal(a.IDs, b.IDs) && a.SessionID == b.SessionID && a.ResumeURL == b.ResumeURL &&
		slices.Equal(a.Channels, b.Channels)
}

// FuzzDecodeEvent: any payload decodes or fails without a panic, and a decoded message event
// always names its channel and at least one message.
func FuzzDecodeEvent(f *testing.F) {
	f.Add("MESSAGE_CREATE", `{"id":"1001","channel_id":"20","guild_id":"300"}`)
	f.Add("MESSAGE_DELETE_BULK", `{"ids":["1","2"],"channel_id":"20"}`)
	f.Add("GUILD_CREATE", `{"id":"300","channels":[{"id":"20"}],"threads":null}`)
	f.Add("READY", `{"session_id":"a","resume_gateway_url":"b"}`)
	f.Fuzz(func(t *testing.T, typ, d string) {
		ev, err := decodeEvent(0, 1, typ, json.RawMessage(d))
		if err != nil {
			return
		}
		switch typ {
		case "MESSAGE_CREATE", "MESSAGE_DELETE", "MESSAGE_DELETE_BULK":
			if ev.ChannelID == 0 || len(ev.IDs) == 0 {
				t.Fatalf("%s %s decoded to %+v", typ, d, ev)
			}
		}
	})
}
