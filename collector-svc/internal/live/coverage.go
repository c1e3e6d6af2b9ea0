package live

import (
	"slices"
	"time"

	"forumstats.local/collector-svc/internal/discord"
)

// Gap is a time a server was not counted live: the messages with MinID < id < MaxID, the
// exclusive bounds the message search takes. Until it is filled, search owns those messages;
// filling adds the search's counts to the hourly counts.
type Gap struct {
	MinID, MaxID uint64
	Filled       bool
}

// GapBetween is the gap of the messages made in [from, to); ok is false when it holds none.
func GapBetween(from, to time.Time) (Gap, bool) {
	minID, maxID, ok := discord.WindowIDs(from, to)
	return Gap{MinID: minID, MaxID: maxID}, ok
}

func (g Gap) span() Span { return Span{MinID: g.MinID, MaxID: g.MaxID} }

// Holds reports whether the message id lies in the gap.
func (g Gap) Holds(id uint64) bool { return g.MinID < id && id < g.MaxID }

// Coverage is what live counting owns of one server: the messages with ids from SinceID on (its
// counting began then), except those in its gaps. Search owns the rest.
type Coverage struct {
	SinceID uint64
	Gaps    []Gap
}

// inGap reports whether id lies in one of the gaps; with unfilledOnly, in an unfilled one.
func (c *Coverage) inGap(id uint64, unfilledOnly bool) bool {
	for _, g := range c.Gaps {
		if g.Holds(id) && !(unfilledOnly && g.Filled) {
			return true
		}
	}
	return false
}

// countsCreate reports whether a new message id is counted live: it is after counting began and
// in no gap, filled or not (search has counted, or will count, a message of a gap).
func (c *Coverage) countsCreate(id uint64) bool {
	return id >= c.SinceID && !c.inGap(id, false)
}

// countsDelete reports whether the deletion of message id is subtracted: the message was counted
// (after counting began, outside any unfilled gap: a filled gap's count is in the hours) and its
// hour is still refreshed (id at or after cutoffID). A message of an unfilled gap is gone before
// its search, which will not count it.
func (c *Coverage) countsDelete(id, cutoffID uint64) bool {
	return id >= cutoffID && id >= c.SinceID && !c.inGap(id, true)
}

// addGap adds g unless a gap with its MinID is already known (the stored key).
func (c *Coverage) addGap(g Gap) {
	if !slices.ContainsFunc(c.Gaps, func(o Gap) bool { return o.MinID == g.MinID }) {
		c.Gaps = append(c.Gaps, g)
	}
}
