package live

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"forumstats.local/collector-svc/internal/discord"
)

func span(from, to time.Duration) Span {
	minID, maxID, _ := discord.WindowIDs(t0.Add(from), t0.Add(to))
	return Span{minID, maxID}
}

func gapOf(from, to time.Duration, filled bool) Gap {
	s := span(from, to)
	return Gap{MinID: s.MinID, MaxID: s.MaxID, Filled: filled}
}

func TestCompose(t *testing.T) {
	since := discord.SnowflakeAt(t0.Add(90 * time.Minute))
	for _, c := range []struct {
		name     string
		from, to int64
		cov      Coverage
		counting bool
		search   []Span
		statuses []string
	}{
		{"all live", h10, h10 + 2, Coverage{SinceID: 1}, true, nil, []string{"ok", "ok"}},
		{"not counted: all searched", h10, h10 + 2, Coverage{}, false, []Span{span(0, 2*time.Hour)}, []string{"missing", "missing"}},
		{"counting began inside the window", h10, h10 + 3, Coverage{SinceID: since}, true,
			[]Span{span(0, 90*time.Minute)}, []string{"missing", "missing", "ok"}},
		{"an unfilled gap is searched by its snowflakes", h10, h10 + 2,
			Coverage{SinceID: 1, Gaps: []Gap{gapOf(30*time.Minute, 75*time.Minute, false)}}, true,
			[]Span{span(30*time.Minute, 75*time.Minute)}, []string{"gap", "gap"}},
		{"a filled gap is counted in its hours", h10, h10 + 2,
			Coverage{SinceID: 1, Gaps: []Gap{gapOf(30*time.Minute, 75*time.Minute, true)}}, true, nil, []string{"ok", "ok"}},
		{"a gap is clipped to the window", h10, h10 + 1,
			Coverage{SinceID: 1, Gaps: []Gap{gapOf(-time.Hour, 10*time.Minute, false), gapOf(50*time.Minute, 2*time.Hour, false)}}, true,
			[]Span{span(0, 10*time.Minute), span(50*time.Minute, time.Hour)}, []string{"gap"}},
		{"touching ranges are one search", h10, h10 + 3,
			Coverage{SinceID: since, Gaps: []Gap{gapOf(90*time.Minute, 100*time.Minute, false), gapOf(100*time.Minute, 130*time.Minute, false)}}, true,
			[]Span{span(0, 130*time.Minute)}, []string{"missing", "missing", "gap"}},
		{"an empty window", h10, h10, Coverage{SinceID: 1}, true, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := Compose(c.from, c.to, c.cov, c.counting)
			if !reflect.DeepEqual(p.Search, c.search) {
				t.Errorf("search %v, want %v", p.Search, c.search)
			}
			var statuses []string
			for i, h := range p.Hours {
				if h.Hour != c.from+int64(i) {
					t.Errorf("hour %d is %d", i, h.Hour)
				}
				statuses = append(statuses, h.Status)
			}
			if !slices.Equal(statuses, c.statuses) {
				t.Errorf("statuses %v, want %v", statuses, c.statuses)
			}
		})
	}
}

func TestByHour(t *testing.T) {
	got := ByHour(span(30*time.Minute, 2*time.Hour+time.Minute))
	want := []HourSpan{{h10, span(30*time.Minute, time.Hour)}, {h10 + 1, span(time.Hour, 2*time.Hour)},
		{h10 + 2, span(2*time.Hour, 2*time.Hour+time.Minute)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ByHour = %v, want %v", got, want)
	}
	if got := ByHour(Span{MinID: 5, MaxID: 6}); got != nil {
		t.Errorf("an empty span cut into %v", got)
	}
}

// FuzzCompose: every message of the window is counted exactly once, by search when a span holds
// it and by the live counts otherwise, and live counts are used only where live counting owns
// the message; the spans are ordered, disjoint and inside the window; ByHour cuts each span into
// pieces that cover it exactly, each inside its hour.
func FuzzCompose(f *testing.F) {
	f.Add(uint16(3), uint16(2), uint64(1000), uint64(1200), uint64(5000), true, uint64(1), uint64(90), uint64(40), false, int64(7))
	f.Add(uint16(0), uint16(30), uint64(0), uint64(3), uint64(7200), false, uint64(10), uint64(10), uint64(3600), true, int64(1))
	f.Fuzz(func(t *testing.T, fromH, hours uint16, sinceS, g1From, g1Len uint64, g1Filled bool, g2From, g2Len, sinceJitter uint64,
		counting bool, seed int64) {
		from := h10 - 48 + int64(fromH%96)
		to := from + int64(hours%72)
		base := t0.Add(-48 * time.Hour)
		at := func(s uint64) uint64 { return discord.SnowflakeAt(base.Add(time.Duration(s%(200*3600)) * time.Second)) }
		cov := Coverage{SinceID: at(sinceS) + sinceJitter%(1<<22)}
		for _, g := range []struct {
			from, len uint64
			filled    bool
		}{{g1From, g1Len, g1Filled}, {g2From, g2Len, !g1Filled}} {
			lo := at(g.from)
			gap := Gap{MinID: lo, MaxID: lo + 2 + g.len%(1<<40), Filled: g.filled}
			if !slices.ContainsFunc(cov.Gaps, func(o Gap) bool { return o.MinID < gap.MaxID && gap.MinID < o.MaxID }) {
				cov.Gaps = append(cov.Gaps, gap)
			}
		}
		p := Compose(from, to, cov, counting)
		lo, hi := hourID(from), hourID(to)
		for i, s := range p.Search {
			if s.MaxID <= s.MinID+1 || s.MinID+1 < lo || s.MaxID > hi || i > 0 && s.MinID < p.Search[i-1].MaxID {
				t.Fatalf("span %d %v of %v: empty, outside [%d, %d) or not after the previous", i, s, p.Search, lo, hi)
			}
			var covered uint64
			for _, piece := range ByHour(s) {
				if piece.Span.MinID+1 < hourID(piece.Hour) || piece.Span.MaxID > hourID(piece.Hour+1) {
					t.Fatalf("piece %v outside its hour", piece)
				}
				covered += piece.Span.MaxID - piece.Span.MinID - 1
			}
			if covered != s.MaxID-s.MinID-1 {
				t.Fatalf("ByHour(%v) covers %d ids, want %d", s, covered, s.MaxID-s.MinID-1)
			}
		}
		if len(p.Hours) != int(max(0, to-from)) {
			t.Fatalf("%d hours for [%d, %d)", len(p.Hours), from, to)
		}
		if hi <= lo {
			return
		}
		r := rand.New(rand.NewPCG(uint64(seed), 1))
		probes := []uint64{lo, hi - 1, cov.SinceID, cov.SinceID - 1}
		for _, g := range cov.Gaps {
			probes = append(probes, g.MinID, g.MinID+1, g.MaxID-1, g.MaxID)
		}
		for range 64 {
			probes = append(probes, lo+r.Uint64N(hi-lo))
		}
		for _, id := range probes {
			if id < lo || id >= hi {
				continue
			}
			searched := slices.ContainsFunc(p.Search, func(s Span) bool { return s.MinID < id && id < s.MaxID })
			live := counting && id >= cov.SinceID && !cov.inGap(id, true)
			if searched == live {
				t.Fatalf("message %d: searched %t, live %t (plan %+v, coverage %+v)", id, searched, live, p, cov)
			}
		}
	})
}
