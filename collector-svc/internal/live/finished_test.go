package live

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"forumstats.local/collector-svc/internal/discord"
)

// TestGuildChannels: a server's channels come from the gateway once a GUILD_CREATE listed them
// with their types: the message-bearing ones, neither threads nor categories nor deleted ones.
// Before that listing, or with a row of unknown type, they are not known (listed false).
func TestGuildChannels(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		ctx := context.Background()
		s := NewStore(gdb)
		const guild = uint64(1 << 40)
		now := time.Date(2026, 11, 19, 9, 0, 0, 0, time.UTC)
		seq := int64(0)
		flush := func(b Batch) {
			t.Helper()
			b.Shard, b.NumShards = 0, 1
			b.Prev = Checkpoint{SessionID: "s", Seq: seq, FlushedAt: now}
			if seq == 0 {
				b.Prev = Checkpoint{}
			}
			seq++
			b.Next = Checkpoint{SessionID: "s", Seq: seq, FlushedAt: now}
			if err := s.Flush(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		names := func() ([]string, bool) {
			t.Helper()
			chs, listed, err := s.GuildChannels(ctx, guild)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, c := range chs {
				out = append(out, c.ID+":"+c.Name)
			}
			return out, listed
		}
		key := func(c uint64) ChannelKey { return ChannelKey{Guild: guild, Channel: c} }

		if _, listed := names(); listed {
			t.Fatal("a server never counted: its channels are listed")
		}
		// Counting began, a channel learned from CHANNEL_CREATE: not the whole list yet.
		flush(Batch{Guilds: map[uint64]uint64{guild: discord.SnowflakeAt(now)},
			Channels: map[ChannelKey]ChannelState{key(14): {Name: "old"}}})
		if _, listed := names(); listed {
			t.Error("channels listed before any GUILD_CREATE")
		}
		flush(Batch{Listed: map[uint64][]uint64{guild: {100, 11, 12, 13}}, Channels: map[ChannelKey]ChannelState{
			key(100): {Name: "general", Type: 0}, key(11): {Name: "category", Type: 4},
			key(12): {Name: "a thread", Thread: true, Type: 11}, key(13): {Name: "voice", Type: 2},
		}})
		got, listed := names()
		if want := []string{"13:voice", "100:general"}; !listed || !slices.Equal(got, want) {
			t.Errorf("after GUILD_CREATE: %v listed %v, want %v listed", got, listed, want)
		}
		flush(Batch{Channels: map[ChannelKey]ChannelState{key(13): {Name: "voice", Type: 2, Deleted: true},
			key(100): {Name: "renamed", Type: 0}}})
		if got, _ := names(); !slices.Equal(got, []string{"100:renamed"}) {
			t.Errorf("after CHANNEL_DELETE and UPDATE: %v", got)
		}
		// A row written before the types were kept: not known until the next GUILD_CREATE.
		if err := gdb.Exec(`INSERT INTO live_channels (guild_id, channel_id, name, thread) VALUES (?, '15', 'legacy', false)`,
			id(guild)).Error; err != nil {
			t.Fatal(err)
		}
		if _, listed := names(); listed {
			t.Error("a channel of unknown type: the list is taken as known")
		}
	})
}

// TestFinished: finished periods are recorded once per server and period, and read back by
// period for every server or for one.
func TestFinished(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		ctx := context.Background()
		s := NewStore(gdb)
		at := time.Date(2026, 11, 20, 0, 2, 0, 0, time.UTC)
		for _, f := range []struct {
			guild  uint64
			period string
		}{{1, "2026-11-18"}, {1, "2026-10"}, {2, "2026-11-18"}, {1, "2026-11-18"}} {
			if err := s.Finish(ctx, f.guild, f.period, at); err != nil {
				t.Fatal(err)
			}
		}
		all, err := s.Finished(ctx, []string{"2026-11-18", "2026-10", "2026-11-17"})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 2 || !maps.Equal(all["1"], map[string]bool{"2026-11-18": true, "2026-10": true}) ||
			!maps.Equal(all["2"], map[string]bool{"2026-11-18": true}) {
			t.Errorf("Finished: %v", all)
		}
		if none, err := s.Finished(ctx, nil); err != nil || len(none) != 0 {
			t.Errorf("Finished of no period: %v, %v", none, err)
		}
		one, err := s.FinishedOf(ctx, 2, []string{"2026-11-18", "2026-10"})
		if err != nil || !maps.Equal(one, map[string]bool{"2026-11-18": true}) {
			t.Errorf("FinishedOf(2): %v, %v", one, err)
		}
		if err := s.Unfinish(ctx, 1, "2026-11-18"); err != nil {
			t.Fatal(err)
		}
		if err := s.Unfinish(ctx, 1, "2026-11-17"); err != nil { // never recorded: nothing to forget
			t.Fatal(err)
		}
		one, err = s.FinishedOf(ctx, 1, []string{"2026-11-18", "2026-10"})
		if err != nil || !maps.Equal(one, map[string]bool{"2026-10": true}) {
			t.Errorf("FinishedOf(1) after Unfinish: %v, %v", one, err)
		}
		if two, _ := s.FinishedOf(ctx, 2, []string{"2026-11-18"}); !two["2026-11-18"] {
			t.Error("Unfinish of server 1 forgot server 2's day")
		}
	})
}
