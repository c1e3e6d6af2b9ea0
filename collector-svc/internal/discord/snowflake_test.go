package discord

import (
	"math"
	"testing"
	"time"
)

func ms(v int64) time.Time { return time.UnixMilli(v).UTC() }

func TestSnowflakeAt(t *testing.T) {
	// The example of Discord's documentation: 175928847299117063 was made at
	// 1462015105796 ms (2016-04-30T11:18:25.796Z).
	docTime := time.Date(2016, 4, 30, 11, 18, 25, 796e6, time.UTC)
	tests := []struct {
		name string
		t    time.Time
		want uint64
	}{
		{"epoch", ms(Epoch), 0},
		{"before epoch", ms(Epoch - 1), 0},
		{"unix zero", time.Unix(0, 0), 0},
		{"one ms after epoch", ms(Epoch + 1), 1 << 22},
		{"documentation example", docTime, 175928847299117063 &^ (1<<22 - 1)},
		{"sub-millisecond is truncated", docTime.Add(999 * time.Microsecond), 175928847299117063 &^ (1<<22 - 1)},
		{"last representable ms", ms(Epoch + maxTimestamp), uint64(maxTimestamp) << 22},
		{"past 42 bits saturates", ms(Epoch + maxTimestamp + 1), math.MaxUint64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SnowflakeAt(tt.t); got != tt.want {
				t.Fatalf("SnowflakeAt(%s) = %d, want %d", tt.t, got, tt.want)
			}
		})
	}
}

func TestSnowflakeTime(t *testing.T) {
	tests := []struct {
		id   uint64
		want time.Time
	}{
		{175928847299117063, time.Date(2016, 4, 30, 11, 18, 25, 796e6, time.UTC)},
		{0, ms(Epoch)},
		{1<<22 - 1, ms(Epoch)},
		{1 << 22, ms(Epoch + 1)},
		{math.MaxUint64, ms(Epoch + maxTimestamp)},
	}
	for _, tt := range tests {
		if got := SnowflakeTime(tt.id); !got.Equal(tt.want) || got.Location() != time.UTC {
			t.Errorf("SnowflakeTime(%d) = %s, want %s UTC", tt.id, got, tt.want)
		}
	}
}

// inWindow is what the search does with exclusive bounds.
func inWindow(id, minID, maxID uint64) bool { return minID < id && id < maxID }

func TestWindowIDs(t *testing.T) {
	day := time.Date(2026, 11, 19, 21, 0, 0, 0, time.UTC) // Moscow midnight
	dayMs := day.UnixMilli()
	tests := []struct {
		name     string
		from, to time.Time
		min, max uint64
		ok       bool
	}{
		{"day", day, day.Add(24 * time.Hour), SnowflakeAt(day) - 1, SnowflakeAt(day.Add(24 * time.Hour)), true},
		{"one millisecond", ms(dayMs), ms(dayMs + 1), SnowflakeAt(day) - 1, SnowflakeAt(ms(dayMs + 1)), true},
		{"sub-ms start rounds up", day.Add(time.Nanosecond), day.Add(time.Second), SnowflakeAt(ms(dayMs+1)) - 1, SnowflakeAt(day.Add(time.Second)), true},
		{"sub-ms end rounds up", day, day.Add(time.Nanosecond), SnowflakeAt(day) - 1, SnowflakeAt(ms(dayMs + 1)), true},
		{"empty", day, day, 0, 0, false},
		{"inside one ms", day.Add(time.Nanosecond), day.Add(2 * time.Nanosecond), 0, 0, false},
		{"reversed", day.Add(time.Hour), day, 0, 0, false},
		{"starts before epoch", ms(0), ms(Epoch + 10), 0, SnowflakeAt(ms(Epoch + 10)), true},
		{"starts at epoch", ms(Epoch), ms(Epoch + 10), 0, SnowflakeAt(ms(Epoch + 10)), true},
		{"ends at epoch", ms(0), ms(Epoch), 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, hi, ok := WindowIDs(tt.from, tt.to)
			if lo != tt.min || hi != tt.max || ok != tt.ok {
				t.Fatalf("WindowIDs = (%d, %d, %v), want (%d, %d, %v)", lo, hi, ok, tt.min, tt.max, tt.ok)
			}
		})
	}
}

// checkWindow asserts that a message stamped at mMs with low bits low is
// counted by the search exactly when its time lies in [from, to).
func checkWindow(t *testing.T, from, to time.Time, mMs int64, low uint64) {
	t.Helper()
	if mMs <= Epoch || mMs-Epoch > maxTimestamp {
		return
	}
	id := uint64(mMs-Epoch)<<22 | low&(1<<22-1)
	m := ms(mMs)
	want := !m.Before(from) && m.Before(to)
	lo, hi, ok := WindowIDs(from, to)
	got := ok && inWindow(id, lo, hi)
	if got != want {
		t.Fatalf("window [%s, %s) (ids %d..%d ok=%v), message at %s low %#x: counted=%v, want %v",
			from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano), lo, hi, ok, m.Format(time.RFC3339Nano), low, got, want)
	}
}

func TestWindowIDsMillisecondEdges(t *testing.T) {
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	lows := []uint64{0, 1, 1 << 12, 1<<22 - 2, 1<<22 - 1}
	offsets := []time.Duration{-time.Millisecond, -time.Nanosecond, 0, time.Nanosecond, time.Millisecond - time.Nanosecond, time.Millisecond}
	for _, low := range lows {
		for m := base - 2; m <= base+2; m++ {
			for _, fo := range offsets {
				for _, to := range offsets {
					from := ms(base).Add(fo)
					checkWindow(t, from, ms(base+1).Add(to), m, low)
					checkWindow(t, from, ms(base+1000).Add(to), m, low)
				}
			}
		}
	}
}

func FuzzWindowIDs(f *testing.F) {
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	f.Add(base, base+int64(time.Hour), int64(0), uint64(0))
	f.Add(base, base+int64(time.Millisecond), int64(0), uint64(1<<22-1))
	f.Add(base+1, base+int64(time.Millisecond), int64(0), uint64(5))
	f.Add(base, base+int64(time.Millisecond), int64(time.Millisecond), uint64(0))
	f.Add(int64(0), Epoch*int64(time.Millisecond)+5, int64(Epoch*int64(time.Millisecond)), uint64(3))
	f.Fuzz(func(t *testing.T, fromNs, toNs, offNs int64, low uint64) {
		from, to := time.Unix(0, fromNs), time.Unix(0, toNs)
		// The message: near the start of the window, where the edges are.
		m := time.Unix(0, fromNs).Add(time.Duration(offNs % int64(time.Second))).UnixMilli()
		checkWindow(t, from, to, m, low)
		checkWindow(t, from, to, to.UnixMilli(), low)
		checkWindow(t, from, to, to.UnixMilli()-1, low)
		checkWindow(t, from, to, from.UnixMilli(), low)
	})
}

func FuzzSnowflakeRoundTrip(f *testing.F) {
	f.Add(uint64(175928847299117063))
	f.Add(uint64(0))
	f.Add(uint64(math.MaxUint64))
	f.Fuzz(func(t *testing.T, id uint64) {
		at := SnowflakeTime(id)
		lo := SnowflakeAt(at)
		if lo > id || id-lo >= 1<<22 {
			t.Fatalf("SnowflakeAt(SnowflakeTime(%d)) = %d: not the start of its millisecond", id, lo)
		}
		if !SnowflakeTime(lo).Equal(at) {
			t.Fatalf("SnowflakeTime(%d) = %s, want %s", lo, SnowflakeTime(lo), at)
		}
	})
}
