package reports_test

import (
	"slices"
	"testing"
	"time"

	"forumstats.local/shared/reports"
)

var liveT0 = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

// idAt is the first snowflake of the millisecond holding t.
func idAt(t time.Time) uint64 { return uint64(t.UnixMilli()-reports.DiscordEpoch) << 22 }

// gapOf is the gap of the messages made in [t0+from, t0+to), with the search's exclusive bounds.
func gapOf(from, to time.Duration, filled bool) reports.LiveGap {
	return reports.LiveGap{MinID: idAt(liveT0.Add(from)) - 1, MaxID: idAt(liveT0.Add(to)), Filled: filled}
}

// The cases of the collector's composition of reports, whose rule this is.
func TestHourStatus(t *testing.T) {
	h10 := reports.LiveHour(liveT0)
	since := idAt(liveT0.Add(90 * time.Minute))
	for _, c := range []struct {
		name     string
		from, to int64
		cov      reports.LiveCoverage
		want     []string
	}{
		{"all live", h10, h10 + 2, reports.LiveCoverage{Counting: true, SinceID: 1}, []string{"ok", "ok"}},
		{"not counted", h10, h10 + 2, reports.LiveCoverage{}, []string{"missing", "missing"}},
		{"counting began inside the window", h10, h10 + 3, reports.LiveCoverage{Counting: true, SinceID: since},
			[]string{"missing", "missing", "ok"}},
		{"counting began at an hour's first id", h10, h10 + 2, reports.LiveCoverage{Counting: true, SinceID: idAt(liveT0.Add(time.Hour))},
			[]string{"missing", "ok"}},
		{"an unfilled gap", h10, h10 + 3,
			reports.LiveCoverage{Counting: true, SinceID: 1, Gaps: []reports.LiveGap{gapOf(30*time.Minute, 75*time.Minute, false)}},
			[]string{"gap", "gap", "ok"}},
		{"a filled gap is counted in its hours", h10, h10 + 2,
			reports.LiveCoverage{Counting: true, SinceID: 1, Gaps: []reports.LiveGap{gapOf(30*time.Minute, 75*time.Minute, true)}},
			[]string{"ok", "ok"}},
		{"a gap ending at an hour's first id leaves that hour", h10, h10 + 2,
			reports.LiveCoverage{Counting: true, SinceID: 1, Gaps: []reports.LiveGap{gapOf(10*time.Minute, time.Hour, false)}},
			[]string{"gap", "ok"}},
		{"a gap that holds no id", h10, h10 + 1,
			reports.LiveCoverage{Counting: true, SinceID: 1, Gaps: []reports.LiveGap{{MinID: idAt(liveT0) + 5, MaxID: idAt(liveT0) + 6}}},
			[]string{"ok"}},
		{"missing wins over gap", h10, h10 + 3,
			reports.LiveCoverage{Counting: true, SinceID: since, Gaps: []reports.LiveGap{gapOf(90*time.Minute, 130*time.Minute, false)}},
			[]string{"missing", "missing", "gap"}},
		{"hours before the Discord epoch", reports.LiveHour(time.Date(2014, 12, 31, 22, 0, 0, 0, time.UTC)), reports.LiveHour(time.Date(2015, 1, 1, 2, 0, 0, 0, time.UTC)),
			reports.LiveCoverage{Counting: true, SinceID: 1}, []string{"missing", "missing", "missing", "ok"}}, // the epoch's hour holds id 0
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for h := c.from; h < c.to; h++ {
				got = append(got, reports.HourStatus(h, c.cov))
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("statuses %v, want %v", got, c.want)
			}
		})
	}
}

func TestLiveHour(t *testing.T) {
	for _, c := range []struct {
		at   time.Time
		want int64
	}{
		{time.Unix(0, 0), 0},
		{time.Unix(3599, 999e6), 0},
		{time.Unix(3600, 0), 1},
		{time.Unix(-1, 0), -1},
		{liveT0.Add(59 * time.Minute), 498658},
	} {
		if got := reports.LiveHour(c.at); got != c.want {
			t.Errorf("LiveHour(%v) = %d, want %d", c.at, got, c.want)
		}
		if s := reports.LiveHourStart(c.want); c.at.Before(s) || !c.at.Before(s.Add(time.Hour)) {
			t.Errorf("LiveHourStart(%d) = %v does not hold %v", c.want, s, c.at)
		}
	}
	if got := reports.HourFirstID(reports.LiveHour(liveT0)); got != idAt(liveT0) {
		t.Errorf("HourFirstID = %d, want %d", got, idAt(liveT0))
	}
	if got := reports.HourFirstID(0); got != 0 {
		t.Errorf("HourFirstID(0) = %d, want 0", got)
	}
}

func TestWorseHour(t *testing.T) {
	for _, c := range [][3]string{
		{"ok", "ok", "ok"}, {"ok", "gap", "gap"}, {"gap", "ok", "gap"}, {"gap", "missing", "missing"},
		{"missing", "gap", "missing"}, {"missing", "ok", "missing"},
	} {
		if got := reports.WorseHour(c[0], c[1]); got != c[2] {
			t.Errorf("WorseHour(%s, %s) = %s, want %s", c[0], c[1], got, c[2])
		}
	}
}
