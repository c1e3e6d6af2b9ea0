package livereport

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"forumstats.local/collector-svc/internal/collect"
	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/collector-svc/internal/live"
	"forumstats.local/shared/reports"
)

// at is the first snowflake of the instant.
func at(s string) uint64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return discord.SnowflakeAt(t)
}

func hourOf(s string) int64 { return live.HourOf(at(s)) }

func TestSpanWindow(t *testing.T) {
	tests := []struct {
		name     string
		span     live.Span
		from, to string // "" when an error is expected
	}{
		{"a gap", live.Span{MinID: at("2026-11-20T10:00:00.5Z") - 1, MaxID: at("2026-11-20T10:30:00Z")}, "2026-11-20T10:00:00.5Z", "2026-11-20T10:30:00Z"},
		{"one millisecond", live.Span{MinID: at("2026-11-20T10:00:00Z") - 1, MaxID: at("2026-11-20T10:00:00.001Z")}, "2026-11-20T10:00:00Z", "2026-11-20T10:00:00.001Z"},
		{"from the epoch", live.Span{MinID: 0, MaxID: at("2015-01-01T01:00:00Z")}, "2015-01-01T00:00:00Z", "2015-01-01T01:00:00Z"},
		{"max inside a millisecond", live.Span{MinID: at("2026-11-20T10:00:00Z") - 1, MaxID: at("2026-11-20T11:00:00Z") + 5}, "", ""},
		{"min inside a millisecond", live.Span{MinID: at("2026-11-20T10:00:00Z"), MaxID: at("2026-11-20T11:00:00Z")}, "", ""},
		{"empty", live.Span{MinID: at("2026-11-20T10:00:00Z") - 1, MaxID: at("2026-11-20T10:00:00Z")}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from, to, err := spanWindow(tt.span)
			if tt.from == "" {
				if err == nil {
					t.Fatalf("spanWindow(%+v) = %s, %s; want an error", tt.span, from, to)
				}
				return
			}
			if err != nil || from.Format(time.RFC3339Nano) != tt.from || to.Format(time.RFC3339Nano) != tt.to {
				t.Fatalf("spanWindow(%+v) = %s, %s, %v; want %s, %s", tt.span, from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano), err, tt.from, tt.to)
			}
			// The search of the window sends the span's own bounds.
			if lo, hi, ok := discord.WindowIDs(from, to); !ok || lo != tt.span.MinID || hi != tt.span.MaxID {
				t.Fatalf("WindowIDs of the window = %d, %d, %v; want %d, %d", lo, hi, ok, tt.span.MinID, tt.span.MaxID)
			}
		})
	}
}

// FuzzSpanWindow: every span on millisecond boundaries is searched with exactly its bounds.
func FuzzSpanWindow(f *testing.F) {
	f.Add(int64(0), int64(1))
	f.Add(int64(3_600_000), int64(7_200_000))
	f.Add(int64(375_000_000_000), int64(1))
	f.Fuzz(func(t *testing.T, fromMs, lenMs int64) {
		if fromMs < 0 || lenMs <= 0 || fromMs > 1<<41 || lenMs > 1<<41 {
			return
		}
		s := live.Span{MaxID: uint64(fromMs+lenMs) << 22}
		if fromMs > 0 {
			s.MinID = uint64(fromMs)<<22 - 1
		}
		from, to, err := spanWindow(s)
		if err != nil {
			t.Fatalf("spanWindow(%+v): %v", s, err)
		}
		if lo, hi, ok := discord.WindowIDs(from, to); !ok || lo != s.MinID || hi != s.MaxID {
			t.Fatalf("span %+v: window %s-%s searches %d-%d", s, from, to, lo, hi)
		}
	})
}

func TestReportSearchAndUnfilled(t *testing.T) {
	from, to := hourOf("2026-11-19T21:00:00Z"), hourOf("2026-11-20T21:00:00Z") // a Moscow day
	since := at("2026-11-20T02:17:00Z")
	gap := live.Gap{MinID: at("2026-11-20T10:00:00Z") - 1, MaxID: at("2026-11-20T11:30:00Z")}
	filled := live.Gap{MinID: at("2026-11-20T05:00:00Z") - 1, MaxID: at("2026-11-20T05:10:00Z"), Filled: true}
	before := live.Gap{MinID: at("2026-11-18T10:00:00Z") - 1, MaxID: at("2026-11-18T11:00:00Z")}
	tests := []struct {
		name     string
		cov      live.Coverage
		search   []live.Span
		unfilled []live.Gap
	}{
		{"counted all day", live.Coverage{SinceID: at("2026-11-01T00:00:00Z")}, nil, nil},
		{"counting began during the day", live.Coverage{SinceID: since},
			[]live.Span{{MinID: at("2026-11-19T21:00:00Z") - 1, MaxID: since}}, nil},
		{"an unfilled gap is not searched for the report", live.Coverage{SinceID: since, Gaps: []live.Gap{filled, gap}},
			[]live.Span{{MinID: at("2026-11-19T21:00:00Z") - 1, MaxID: since}}, []live.Gap{gap}},
		{"a gap before the window", live.Coverage{SinceID: at("2026-11-01T00:00:00Z"), Gaps: []live.Gap{before}}, nil, nil},
		{"counting begins after the window", live.Coverage{SinceID: at("2026-11-22T00:00:00Z")},
			[]live.Span{{MinID: at("2026-11-19T21:00:00Z") - 1, MaxID: at("2026-11-20T21:00:00Z")}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reportSearch(from, to, tt.cov); !slices.Equal(got, tt.search) {
				t.Errorf("reportSearch = %+v, want %+v", got, tt.search)
			}
			if got := unfilledIn(from, to, tt.cov); !slices.Equal(got, tt.unfilled) {
				t.Errorf("unfilledIn = %+v, want %+v", got, tt.unfilled)
			}
		})
	}
}

func TestCompose(t *testing.T) {
	day := reports.Day{Year: 2026, Month: time.November, Day: 20}
	w := day.Window()
	now := day.Start().Add(12 * time.Hour)
	channels := []discord.Channel{
		{ID: "1000000000000000000", Name: "general"},
		{ID: "1100000000000000000", Name: "quiet"},
		{ID: "99999999999999999999999", Name: "not a snowflake"},
		{ID: strconvU(discord.SnowflakeAt(w.To)), Name: "made after the day"},
	}
	sums := map[uint64]int64{0: 12, 1000000000000000000: 10} // the stored counts added up
	searched := []spanCount{{Total: 10, Channels: map[string]int64{"1000000000000000000": 3, "1100000000000000000": 2}}}
	gap := live.Gap{MinID: at("2026-11-20T06:00:00Z") - 1, MaxID: at("2026-11-20T06:30:00Z")}

	tests := []struct {
		name     string
		searched []spanCount
		gaps     []live.Gap
		total    int64
		perCh    map[string]int64
		status   string
	}{
		{"live counts only", nil, nil, 12, map[string]int64{"1000000000000000000": 10, "1100000000000000000": 0}, reports.StatusOK},
		{"with the hours before counting", searched, nil, 22, map[string]int64{"1000000000000000000": 13, "1100000000000000000": 2}, reports.StatusOK},
		{"a gap not filled", searched, []live.Gap{gap}, 22, map[string]int64{"1000000000000000000": 13, "1100000000000000000": 2}, reports.StatusStale},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row, rows := compose("42", w, sums, tt.searched, channels, tt.gaps, 2*time.Minute, now)
			if row.TotalMessages != tt.total || row.Status != tt.status || row.Period != w.Label || !row.GeneratedAt.Equal(now) {
				t.Fatalf("row %+v; want total %d status %s", row, tt.total, tt.status)
			}
			if tt.status == reports.StatusStale {
				if deref(row.ErrorCode) != collect.CodeGapNotFilled || !strings.Contains(deref(row.ErrorMessage), "2026-11-20T06:00:00Z to 2026-11-20T06:30:00Z") {
					t.Errorf("stale error %q %q", deref(row.ErrorCode), deref(row.ErrorMessage))
				}
			} else if row.ErrorCode != nil || row.ErrorMessage != nil {
				t.Errorf("ok row with an error %q", deref(row.ErrorMessage))
			}
			got := map[string]int64{}
			for _, r := range rows {
				if r.Period != w.Label || r.GuildID != "42" {
					t.Errorf("channel row %+v", r)
				}
				got[r.ChannelID] = r.Messages
			}
			if !maps.Equal(got, tt.perCh) {
				t.Errorf("channels %v, want %v", got, tt.perCh)
			}
		})
	}
}

func strconvU(v uint64) string { return strconv.FormatUint(v, 10) }

func TestFillCounts(t *testing.T) {
	rows := []reports.ChannelRow{{ChannelID: "11", Messages: 3}, {ChannelID: "12", Messages: 0}, {ChannelID: "13", Messages: 1}}
	got := map[live.Key]int64{}
	if err := fillCounts(got, 7, 100, 5, rows); err != nil {
		t.Fatal(err)
	}
	if err := fillCounts(got, 7, 101, 0, nil); err != nil {
		t.Fatal(err)
	}
	want := map[live.Key]int64{{Guild: 7, Hour: 100}: 5, {Guild: 7, Hour: 100, Channel: 11}: 3, {Guild: 7, Hour: 100, Channel: 13}: 1}
	if !maps.Equal(got, want) {
		t.Fatalf("fillCounts = %v, want %v", got, want)
	}
	for _, bad := range []string{"", "0", "x", "-1"} {
		if err := fillCounts(map[live.Key]int64{}, 7, 100, 1, []reports.ChannelRow{{ChannelID: bad, Messages: 1}}); err == nil {
			t.Errorf("channel %q: no error", bad)
		}
	}
}

func TestDueAndClosingDay(t *testing.T) {
	gap := live.Gap{MinID: at("2026-11-20T10:00:00Z") - 1, MaxID: at("2026-11-20T10:30:00Z")}
	mustTime := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	for _, tt := range []struct {
		now  string
		want bool
	}{{"2026-11-20T10:31:59Z", false}, {"2026-11-20T10:32:00Z", true}, {"2026-11-21T00:00:00Z", true}} {
		if got := due(gap, 2*time.Minute, mustTime(tt.now)); got != tt.want {
			t.Errorf("due at %s = %v, want %v", tt.now, got, tt.want)
		}
	}
	// Moscow midnight is 21:00 UTC; a day is checked GapDelay after it.
	for _, tt := range []struct{ now, want string }{
		{"2026-11-20T21:01:59Z", "2026-11-19"},
		{"2026-11-20T21:02:00Z", "2026-11-20"},
		{"2026-11-21T12:00:00Z", "2026-11-20"},
		{"2026-12-31T21:02:00Z", "2026-12-31"},
	} {
		if got := closingDay(mustTime(tt.now), 2*time.Minute).String(); got != tt.want {
			t.Errorf("closingDay(%s) = %s, want %s", tt.now, got, tt.want)
		}
	}
}

func TestBatchGuilds(t *testing.T) {
	b := live.Batch{
		Counts: map[live.Key]int64{{Guild: 5, Hour: 1}: 1, {Guild: 3, Hour: 1, Channel: 9}: -1},
		Fills:  []live.Fill{{Guild: 8}},
		Gaps:   map[uint64][]live.Gap{2: nil},
		Guilds: map[uint64]uint64{5: 1, 1: 1},
		// Channels alone change no count.
		Channels: map[live.ChannelKey]live.ChannelState{{Guild: 77, Channel: 1}: {}},
	}
	if got, want := batchGuilds(b), []uint64{1, 2, 3, 5, 8}; !slices.Equal(got, want) {
		t.Fatalf("batchGuilds = %v, want %v", got, want)
	}
	if got := batchGuilds(live.Batch{}); len(got) != 0 {
		t.Fatalf("an empty batch changes %v", got)
	}
}

func TestClosedHours(t *testing.T) {
	today := hourOf("2026-11-19T21:00:00Z") // Moscow 20 November begins
	b := live.Batch{Counts: map[live.Key]int64{
		{Guild: 1, Hour: today - 1}:              -1, // a deletion yesterday
		{Guild: 1, Hour: today - 1, Channel: 9}:  -1,
		{Guild: 1, Hour: today - 30}:             -2, // the day before
		{Guild: 2, Hour: today}:                  -1, // today: written anyway
		{Guild: 3, Hour: today - 5}:              0,
		{Guild: 4, Hour: today - 2, Channel: 10}: 1, // a message delivered late
	}, Fills: []live.Fill{{Guild: 4, Counts: map[live.Key]int64{{Guild: 4, Hour: today - 3}: 2, {Guild: 4, Hour: today}: 1}}}}
	got := closedHours(b, today)
	want := map[uint64][]int64{1: {today - 30, today - 1}, 4: {today - 3, today - 2}}
	if len(got) != len(want) {
		t.Fatalf("closedHours = %v, want %v", got, want)
	}
	for g, hs := range want {
		if !slices.Equal(got[g], hs) {
			t.Errorf("closedHours[%d] = %v, want %v", g, got[g], hs)
		}
	}
}

func TestClosedWindows(t *testing.T) {
	now, _ := time.Parse(time.RFC3339, "2026-11-20T09:00:00Z") // 20 November, Moscow
	labels := func(hours map[int64]bool) []string {
		var out []string
		for _, w := range closedWindows(now, hours) {
			out = append(out, w.Label)
		}
		return out
	}
	for _, tt := range []struct {
		name  string
		hours map[int64]bool
		want  []string
	}{
		{"every closed window", nil, []string{"2026-11-19", "2026-10"}},
		{"an hour of yesterday", map[int64]bool{hourOf("2026-11-19T10:00:00Z"): true}, []string{"2026-11-19"}},
		{"yesterday's first hour (Moscow midnight)", map[int64]bool{hourOf("2026-11-18T21:00:00Z"): true}, []string{"2026-11-19"}},
		{"the day before yesterday: neither", map[int64]bool{hourOf("2026-11-18T20:00:00Z"): true}, nil},
		{"the previous month's last hour", map[int64]bool{hourOf("2026-10-31T20:00:00Z"): true}, []string{"2026-10"}},
		{"both", map[int64]bool{hourOf("2026-10-02T00:00:00Z"): true, hourOf("2026-11-19T00:00:00Z"): true}, []string{"2026-11-19", "2026-10"}},
	} {
		if got := labels(tt.hours); !slices.Equal(got, tt.want) {
			t.Errorf("%s: closedWindows = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestMonthDays(t *testing.T) {
	m := reports.Month{Year: 2026, Month: time.November}
	if got := monthDays(m, at("2026-09-01T00:00:00Z")); len(got) != 30 || got[0] != "2026-11-01" || got[29] != "2026-11-30" {
		t.Errorf("counted before the month: %v", got)
	}
	// Counting began at 10:00 Moscow time on 17 November: that day and the later ones.
	if got := monthDays(m, at("2026-11-17T07:00:00Z")); len(got) != 14 || got[0] != "2026-11-17" {
		t.Errorf("counted from 17 November: %v", got)
	}
	if got := monthDays(m, at("2026-12-01T00:00:00Z")); len(got) != 0 {
		t.Errorf("counted after the month: %v", got)
	}
}
