package livegw

import (
	"reflect"
	"testing"

	"forumstats.local/collector-svc/internal/gateway"
	"forumstats.local/collector-svc/internal/live"
)

func TestEvent(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   gateway.Event
		want live.Event
	}{
		{"ready", gateway.Event{Shard: 2, Seq: 1, Type: "READY", SessionID: "s", ResumeURL: "wss://r"},
			live.Event{Shard: 2, Seq: 1, Type: "READY", SessionID: "s", ResumeURL: "wss://r"}},
		{"message", gateway.Event{Shard: 1, Seq: 7, Type: "MESSAGE_CREATE", GuildID: 10, ChannelID: 20, IDs: []uint64{30}},
			live.Event{Shard: 1, Seq: 7, Type: "MESSAGE_CREATE", GuildID: 10, ChannelID: 20, IDs: []uint64{30}}},
		{"bulk delete", gateway.Event{Seq: 8, Type: "MESSAGE_DELETE_BULK", GuildID: 10, ChannelID: 20, IDs: []uint64{30, 31}},
			live.Event{Seq: 8, Type: "MESSAGE_DELETE_BULK", GuildID: 10, ChannelID: 20, IDs: []uint64{30, 31}}},
		{"guild create", gateway.Event{Seq: 3, Type: "GUILD_CREATE", GuildID: 10, Channels: []gateway.Channel{
			{ID: 20, Type: 0, Name: "general"}, {ID: 21, ParentID: 20, Type: 11, Name: "a thread", Thread: true}}},
			live.Event{Seq: 3, Type: "GUILD_CREATE", GuildID: 10, Channels: []live.Channel{
				{ID: 20, Name: "general"}, {ID: 21, Name: "a thread", Thread: true, Type: 11}}}},
		{"thread create", gateway.Event{Seq: 4, Type: "THREAD_CREATE", GuildID: 10, ChannelID: 21, ParentID: 20,
			Channels: []gateway.Channel{{ID: 21, ParentID: 20, Type: 11, Name: "t", Thread: true}}},
			live.Event{Seq: 4, Type: "THREAD_CREATE", GuildID: 10, ChannelID: 21, ParentID: 20,
				Channels: []live.Channel{{ID: 21, Name: "t", Thread: true, Type: 11}}}},
		{"other type", gateway.Event{Shard: 3, Seq: 9, Type: "TYPING_START"}, live.Event{Shard: 3, Seq: 9, Type: "TYPING_START"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Event(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestResumeFrom(t *testing.T) {
	got := resumeFrom(live.Checkpoint{SessionID: "s", Seq: 42, ResumeURL: "wss://r"})
	if want := (gateway.Checkpoint{SessionID: "s", Seq: 42, ResumeURL: "wss://r"}); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if resumeFrom(live.Checkpoint{}).Resumable() {
		t.Fatal("no stored checkpoint must identify")
	}
}
