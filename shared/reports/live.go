package reports

import "time"

// The statuses of an hour of live counting. An hour is exact when live counting owns every
// message of it: the counts of an hour that is not ok lack what search owns.
const (
	HourOK      = StatusOK      // counted live, filled gaps included
	HourGap     = "gap"         // an unfilled gap of the gateway overlaps it
	HourMissing = StatusMissing // part of it is before live counting of the server began
)

// DiscordEpoch is the first instant a snowflake can name (2015-01-01T00:00:00Z), in Unix ms.
const DiscordEpoch int64 = 1420070400000

const hourMillis = int64(time.Hour / time.Millisecond)

// LiveHour is the UTC hour (hours since the Unix epoch, the live_counts hour) holding t.
func LiveHour(t time.Time) int64 {
	ms := t.UnixMilli()
	if ms < 0 {
		return (ms - hourMillis + 1) / hourMillis
	}
	return ms / hourMillis
}

// LiveHourStart is the first instant of hour.
func LiveHourStart(hour int64) time.Time { return time.UnixMilli(hour * hourMillis).UTC() }

// HourFirstID is the smallest snowflake made in hour: 0 for an hour at or before the Discord
// epoch (no snowflake is smaller), (ms - epoch) << 22 otherwise.
func HourFirstID(hour int64) uint64 {
	off := hour*hourMillis - DiscordEpoch
	if off <= 0 {
		return 0
	}
	if off >= 1<<42 {
		return ^uint64(0)
	}
	return uint64(off) << 22
}

// LiveGap is a time the gateway was not counting a server: the messages with
// MinID < id < MaxID (the bounds the message search takes). Filled: search's counts of it have
// been added to the hours.
type LiveGap struct {
	MinID, MaxID uint64
	Filled       bool
}

// LiveCoverage is what live counting owns of one server: the messages from SinceID on, except
// those of its unfilled gaps. Counting false: live counting has no record of the server (no
// live_guilds row), so that it owns nothing.
type LiveCoverage struct {
	Counting bool
	SinceID  uint64
	Gaps     []LiveGap
}

// HourStatus is the status of hour for a server of coverage cov: missing when the hour begins
// before counting began (or counting never began), gap when an unfilled gap holds an id of the
// hour, ok otherwise. The collector composes its reports by the same rule.
func HourStatus(hour int64, cov LiveCoverage) string {
	lo, hi := HourFirstID(hour), HourFirstID(hour+1)
	if !cov.Counting || lo < cov.SinceID {
		return HourMissing
	}
	for _, g := range cov.Gaps {
		// The gap holds ids g.MinID+1 .. g.MaxID-1, the hour lo .. hi-1.
		if !g.Filled && g.MaxID > g.MinID+1 && g.MinID+1 < hi && lo < g.MaxID {
			return HourGap
		}
	}
	return HourOK
}

// WorseHour is the status of hours taken together: missing over gap over ok.
func WorseHour(a, b string) string {
	rank := func(s string) int {
		switch s {
		case HourMissing:
			return 2
		case HourGap:
			return 1
		}
		return 0
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}
