package live

import (
	"testing"

	"forumstats.local/shared/reports"
	"forumstats.local/shared/testutil"
)

// BenchmarkFlushBusiestHour: one flush of a shard where, within the interval, every channel of
// 1,000 servers of 30 channels got a message in one hour (31,000 upserts: the worst batch of a
// 5 s interval at that size), on PostgreSQL, onto a table holding earlier flushes of that hour.
func BenchmarkFlushBusiestHour(b *testing.B) {
	gdb := testutil.OpenDB(b, testutil.NewDatabase(b, reports.Migrations))
	s := NewStore(gdb)
	var cp Checkpoint // none stored yet
	batch := func(seq int64) Batch {
		next := Checkpoint{SessionID: "s", Seq: seq, ResumeURL: "r", FlushedAt: t0}
		bt := Batch{NumShards: 1, Prev: cp, Next: next, Counts: map[Key]int64{}}
		for g := range uint64(1000) {
			for c := range uint64(31) {
				bt.Counts[Key{guild + g<<22, h10, c * 1000}] = 1
			}
		}
		return bt
	}
	if err := s.Flush(ctx, batch(1)); err != nil {
		b.Fatal(err)
	}
	cp = batch(1).Next
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		bt := batch(int64(i + 2))
		b.StartTimer()
		if err := s.Flush(ctx, bt); err != nil {
			b.Fatal(err)
		}
		cp = bt.Next
	}
}
