package live

import (
	"maps"
	"slices"
	"testing"
	"time"

	"gorm.io/gorm"

	"forumstats.local/collector-svc/internal/discord"
)

func TestStoreReads(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		s := NewStore(gdb)
		since := discord.SnowflakeAt(t0)
		g1, _ := GapBetween(t0.Add(time.Hour), t0.Add(90*time.Minute))
		g2, _ := GapBetween(t0.Add(3*time.Hour), t0.Add(4*time.Hour))
		g3, _ := GapBetween(t0.Add(-48*time.Hour), t0.Add(-47*time.Hour)) // of the other server, long ago
		h := HourAt(t0)
		first := Batch{Shard: 0, NumShards: 1, NewSession: true,
			Next:   Checkpoint{SessionID: "s", Seq: 1, FlushedAt: t0},
			Guilds: map[uint64]uint64{7: since, 9: 1},
			Gaps:   map[uint64][]Gap{7: {g2, g1}, 9: {g3}},
			Counts: map[Key]int64{{7, h, 0}: 5, {7, h, 11}: 3, {7, h + 2, 0}: 4, {7, h + 2, 12}: 4, {7, h + 5, 0}: 1, {9, h, 0}: 8},
		}
		if err := s.Flush(ctx, first); err != nil {
			t.Fatal(err)
		}
		fill := Batch{Shard: 0, NumShards: 1, Prev: first.Next, Next: Checkpoint{SessionID: "s", Seq: 2, FlushedAt: t0.Add(time.Minute)},
			Fills: []Fill{{Guild: 7, Gap: g1, Counts: map[Key]int64{{7, h + 1, 0}: 2, {7, h + 1, 11}: 2}}}}
		if err := s.Flush(ctx, fill); err != nil {
			t.Fatal(err)
		}

		cov, counting, err := s.Coverage(ctx, 7)
		filled := g1
		filled.Filled = true
		if want := (Coverage{SinceID: since, Gaps: []Gap{filled, g2}}); err != nil || !counting || cov.SinceID != want.SinceID || !slices.Equal(cov.Gaps, want.Gaps) {
			t.Errorf("Coverage(7) = %+v, %v, %v; want %+v", cov, counting, err, want)
		}
		if cov, counting, err := s.Coverage(ctx, 8); err != nil || counting || len(cov.Gaps) != 0 {
			t.Errorf("Coverage of a server never counted = %+v, %v, %v", cov, counting, err)
		}

		tests := []struct {
			from time.Time
			want []GuildGap
		}{
			{t0.Add(-72 * time.Hour), []GuildGap{{7, g2}, {9, g3}}},
			{t0, []GuildGap{{7, g2}}},
			{t0.Add(4 * time.Hour), nil}, // a gap must end after from
		}
		for _, tt := range tests {
			got, err := s.UnfilledGaps(ctx, tt.from)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("UnfilledGaps(%s) = %+v, %v; want %+v", tt.from, got, err, tt.want)
			}
		}

		sums := []struct {
			guild    uint64
			from, to int64
			want     map[uint64]int64
		}{
			{7, h, h + 6, map[uint64]int64{0: 12, 11: 5, 12: 4}},
			{7, h + 1, h + 3, map[uint64]int64{0: 6, 11: 2, 12: 4}},
			{7, h + 6, h + 9, map[uint64]int64{}},
			{9, h, h + 1, map[uint64]int64{0: 8}},
		}
		for _, tt := range sums {
			got, err := s.Sums(ctx, tt.guild, tt.from, tt.to)
			if err != nil || !maps.Equal(got, tt.want) {
				t.Errorf("Sums(%d, %d, %d) = %v, %v; want %v", tt.guild, tt.from-h, tt.to-h, got, err, tt.want)
			}
		}
	})
}
