package live

import (
	"math"
	"sort"

	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/shared/reports"
)

// Hour statuses: shared/reports' rule of an hour's status from coverage, which stats-svc reads too.
const (
	StatusOK      = reports.HourOK      // counted live
	StatusGap     = reports.HourGap     // the gateway was not counting during part of it, not yet filled by search
	StatusMissing = reports.HourMissing // part of it is before live counting of the server began
)

// Span is a range of messages, MinID < id < MaxID: the bounds the message search takes.
type Span struct{ MinID, MaxID uint64 }

// HourStatus is the status of one hour of a server.
type HourStatus struct {
	Hour   int64
	Status string
}

// Plan is how to count a server's messages over a window of UTC hours, each message once: the
// stored counts of Hours (which hold exactly what live counting owns, filled gaps included) plus
// a search of each span of Search (what it does not own: before its counting began and its
// unfilled gaps). The boundary between the two is a message's snowflake time.
type Plan struct {
	Hours  []HourStatus
	Search []Span // in order, disjoint, not adjacent
}

// Compose plans the hours [from, to) of a server whose live coverage is cov; counting false
// means live counting has no record of the server, so that search owns the whole window.
func Compose(from, to int64, cov Coverage, counting bool) Plan {
	var p Plan
	if to <= from {
		return p
	}
	if !counting {
		cov = Coverage{SinceID: math.MaxUint64}
	}
	lo, hi := hourID(from), hourID(to) // the window's ids: lo <= id < hi
	// Inclusive ranges of ids that search owns, clipped to the window.
	var owned [][2]uint64
	add := func(a, b uint64) { // [a, b] inclusive
		a, b = max(a, lo), min(b, hi-1)
		if hi > lo && a <= b {
			owned = append(owned, [2]uint64{a, b})
		}
	}
	if cov.SinceID > 0 {
		add(0, cov.SinceID-1)
	}
	for _, g := range cov.Gaps {
		if !g.Filled && g.MaxID > g.MinID+1 {
			add(g.MinID+1, g.MaxID-1)
		}
	}
	sort.Slice(owned, func(i, j int) bool { return owned[i][0] < owned[j][0] })
	var merged [][2]uint64
	for _, r := range owned {
		if n := len(merged); n > 0 && r[0] <= merged[n-1][1]+1 {
			merged[n-1][1] = max(merged[n-1][1], r[1])
			continue
		}
		merged = append(merged, r)
	}
	for _, r := range merged {
		s := Span{MaxID: r[1] + 1}
		if r[0] > 0 {
			s.MinID = r[0] - 1
		}
		p.Search = append(p.Search, s)
	}
	shared := cov.shared()
	for h := from; h < to; h++ {
		p.Hours = append(p.Hours, HourStatus{Hour: h, Status: reports.HourStatus(h, shared)})
	}
	return p
}

// hourID is the first snowflake of hour (0 before the Discord epoch).
func hourID(hour int64) uint64 { return discord.SnowflakeAt(HourStart(hour)) }

// shared is the coverage as shared/reports' rule of an hour's status takes it.
func (c Coverage) shared() reports.LiveCoverage {
	out := reports.LiveCoverage{Counting: true, SinceID: c.SinceID, Gaps: make([]reports.LiveGap, len(c.Gaps))}
	for i, g := range c.Gaps {
		out.Gaps[i] = reports.LiveGap{MinID: g.MinID, MaxID: g.MaxID, Filled: g.Filled}
	}
	return out
}

// HourSpan is the part of a span in one hour.
type HourSpan struct {
	Hour int64
	Span Span
}

// ByHour cuts s at hour boundaries, so that a search filling a gap adds each piece's count to
// the hour it belongs to.
func ByHour(s Span) []HourSpan {
	if s.MaxID <= s.MinID+1 {
		return nil
	}
	first, last := s.MinID+1, s.MaxID-1 // inclusive
	var out []HourSpan
	for h := HourOf(first); ; h++ {
		a, b := max(first, hourID(h)), min(last, hourID(h+1)-1)
		if a > b {
			break
		}
		out = append(out, HourSpan{Hour: h, Span: Span{MinID: a - 1, MaxID: b + 1}})
		if b == last {
			break
		}
	}
	return out
}
