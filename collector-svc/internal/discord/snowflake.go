package discord

import (
	"math"
	"time"
)

// Epoch is the Discord epoch (2015-01-01T00:00:00Z) in Unix milliseconds.
const Epoch int64 = 1420070400000

// timestampShift is how far the millisecond timestamp is shifted inside a
// snowflake; the low 22 bits hold worker, process and increment.
const timestampShift = 22

// maxTimestamp is the largest millisecond offset that fits the 42 timestamp bits.
const maxTimestamp = int64(1)<<(64-timestampShift) - 1

// SnowflakeAt returns the smallest snowflake of the millisecond holding t:
// (ms - Epoch) << 22. Instants before the epoch give 0 and instants past the
// 42-bit range (year 2154) give math.MaxUint64.
func SnowflakeAt(t time.Time) uint64 {
	return snowflakeAtMilli(t.UnixMilli())
}

func snowflakeAtMilli(ms int64) uint64 {
	off := ms - Epoch
	switch {
	case off <= 0:
		return 0
	case off > maxTimestamp:
		return math.MaxUint64
	}
	return uint64(off) << timestampShift
}

// SnowflakeTime returns the instant (millisecond precision, UTC) at which the
// snowflake was generated.
func SnowflakeTime(id uint64) time.Time {
	return time.UnixMilli(int64(id>>timestampShift) + Epoch).UTC()
}

// ceilMilli returns t in Unix milliseconds rounded up, so that a message stamped
// with millisecond m lies in [from, to) exactly when ceilMilli(from) <= m < ceilMilli(to).
func ceilMilli(t time.Time) int64 {
	ms := t.UnixMilli() // floor: the nanosecond part of a time is never negative
	if t.Nanosecond()%int(time.Millisecond) != 0 {
		ms++
	}
	return ms
}

// WindowIDs returns the min_id and max_id to send to the message search so that
// it counts exactly the messages whose timestamp lies in [from, to).
//
// Discord treats both bounds as exclusive (min_id: "messages after this ID",
// max_id: "messages before this ID"). A message stamped with millisecond m has
// an ID in [(m-E)<<22, (m-E)<<22 + 2^22-1], so
//   - id > SnowflakeAt(from)-1  ⇔ id >= SnowflakeAt(from) ⇔ m >= from, and
//   - id < SnowflakeAt(to)      ⇔ m < to.
//
// ok is false when the window can hold no message (it ends at or before the
// Discord epoch, or to <= from): the caller then needs no request at all. A
// window starting at or before the epoch gets min_id 0.
func WindowIDs(from, to time.Time) (minID, maxID uint64, ok bool) {
	fromMs, toMs := ceilMilli(from), ceilMilli(to)
	if toMs <= fromMs || toMs <= Epoch {
		return 0, 0, false
	}
	if lo := snowflakeAtMilli(fromMs); lo > 0 {
		minID = lo - 1
	}
	return minID, snowflakeAtMilli(toMs), true
}
