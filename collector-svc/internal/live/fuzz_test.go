package live

import (
	"maps"
	"testing"
	"time"
)

// events decodes fuzz input into a session's dispatches from seq 3 on (after started's READY and
// GUILD_CREATE): creates and deletions of messages in the hours around t0, in the listed
// channels and the thread.
func events(data []byte) []Event {
	channels := []uint64{general, random, thread}
	var out []Event
	for i := 0; i+2 < len(data) && len(out) < 200; i += 3 {
		op, ch, when := data[i], channels[int(data[i+1])%len(channels)], data[i+2]
		id := msg(time.Duration(int(when)-64)*time.Minute, uint64(op>>2))
		seq := int64(len(out) + 3)
		switch op % 4 {
		case 0, 1:
			out = append(out, create(seq, ch, id))
		case 2:
			out = append(out, del(seq, ch, id))
		default:
			out = append(out, del(seq, ch, id, id+1, id+2))
		}
	}
	return out
}

func add(into map[Key]int64, counts map[Key]int64) {
	for k, v := range counts {
		into[k] += v
	}
}

func nonZero(m map[Key]int64) map[Key]int64 {
	out := maps.Clone(m)
	maps.DeleteFunc(out, func(_ Key, v int64) bool { return v == 0 })
	return out
}

// FuzzAccumulatorReplay: whatever the events, a process that flushed part of them, went on and
// was lost, then resumed from its stored checkpoint and was sent everything again (a resume
// replays from the checkpoint; duplicates too) ends with the counts of one clean pass; and in
// every hour the server's total is its channels' counts plus its thread's messages.
func FuzzAccumulatorReplay(f *testing.F) {
	f.Add([]byte{0, 0, 64, 1, 1, 64, 2, 0, 64, 3, 2, 70, 0, 2, 10}, uint8(2), uint8(3))
	f.Add([]byte{4, 0, 0, 8, 1, 255, 2, 1, 0, 3, 0, 255}, uint8(0), uint8(4))
	f.Fuzz(func(t *testing.T, data []byte, cut, lost uint8) {
		evs := events(data)
		clean := started(t)
		for _, ev := range evs {
			clean.Apply(ev, t0)
		}
		want := nonZero(clean.Take(t0).Counts)

		crashed := started(t)
		k := min(int(cut), len(evs))
		for _, ev := range evs[:k] {
			crashed.Apply(ev, t0)
		}
		stored := crashed.Take(t0)
		crashed.Committed(stored)
		for _, ev := range evs[k:min(k+int(lost), len(evs))] {
			crashed.Apply(ev, t0) // lost with the process
		}
		cov, _ := crashed.Coverage(guild)
		resumed := NewAccumulator(0, 1, State{Checkpoint: stored.Next, Coverage: map[uint64]Coverage{guild: cov},
			Threads: []ChannelKey{{guild, thread}}})
		for _, ev := range append(evs, evs...) {
			resumed.Apply(ev, t0)
		}
		got := maps.Clone(stored.Counts)
		add(got, resumed.Take(t0).Counts)
		if got = nonZero(got); !maps.Equal(got, want) {
			t.Fatalf("after a crash at %d: %v, want %v", k, got, want)
		}

		threadMessages := map[int64]int64{}
		for _, ev := range evs {
			if ev.ChannelID != thread {
				continue
			}
			for _, id := range ev.IDs {
				if cov.countsCreate(id) {
					if ev.Type == TypeMessageCreate {
						threadMessages[HourOf(id)]++
					} else {
						threadMessages[HourOf(id)]--
					}
				}
			}
		}
		sums := map[int64]int64{}
		for k, v := range want {
			if k.Channel == 0 {
				sums[k.Hour] += v
			} else {
				sums[k.Hour] -= v
			}
		}
		if !maps.Equal(nonZeroHours(sums), nonZeroHours(threadMessages)) {
			t.Fatalf("total minus channels per hour %v, thread messages %v", sums, threadMessages)
		}
	})
}

func nonZeroHours(m map[int64]int64) map[int64]int64 {
	out := maps.Clone(m)
	maps.DeleteFunc(out, func(_ int64, v int64) bool { return v == 0 })
	return out
}
