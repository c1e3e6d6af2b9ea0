package livereport

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"forumstats.local/collector-svc/internal/collect"
	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/collector-svc/internal/live"
	"forumstats.local/shared/reports"
)

// spanCount is a search's count of a span of messages: the server's total and each channel's.
type spanCount struct {
	Total    int64
	Channels map[string]int64
}

// snowflakeLow masks the bits of a snowflake below its millisecond.
const snowflakeLow = 1<<22 - 1

// spanWindow is the window [from, to) of the messages MinID < id < MaxID, so that the search of
// the window sends exactly the span's bounds as min_id and max_id. The spans of live counting
// start and end on millisecond boundaries (MinID one below one, MaxID on one); another span has
// no window and is an error.
func spanWindow(s live.Span) (from, to time.Time, err error) {
	if s.MaxID&snowflakeLow != 0 || s.MinID != 0 && (s.MinID+1)&snowflakeLow != 0 || s.MaxID <= s.MinID+1 {
		return from, to, fmt.Errorf("span %d-%d does not lie on millisecond boundaries", s.MinID, s.MaxID)
	}
	return discord.SnowflakeTime(s.MinID + 1), discord.SnowflakeTime(s.MaxID), nil
}

// reportSearch is what a report of the hours [fromH, toH) searches besides its stored counts: the
// spans before the server's counting began. The unfilled gaps are not searched for the report:
// the gap filler searches each once it is due, and until then the report is stale.
func reportSearch(fromH, toH int64, cov live.Coverage) []live.Span {
	return live.Compose(fromH, toH, live.Coverage{SinceID: cov.SinceID}, true).Search
}

// unfilledIn is the unfilled gaps of cov that hold messages of the hours [fromH, toH).
func unfilledIn(fromH, toH int64, cov live.Coverage) []live.Gap {
	lo, hi := discord.SnowflakeAt(live.HourStart(fromH)), discord.SnowflakeAt(live.HourStart(toH))
	var out []live.Gap
	for _, g := range cov.Gaps {
		if !g.Filled && g.MaxID > g.MinID+1 && g.MinID+1 < hi && lo < g.MaxID {
			out = append(out, g)
		}
	}
	return out
}

// gapMessage says which messages a stale report lacks, and why.
func gapMessage(gaps []live.Gap, delay time.Duration) string {
	first, last := gaps[0].MinID+1, gaps[0].MaxID
	for _, g := range gaps[1:] {
		first, last = min(first, g.MinID+1), max(last, g.MaxID)
	}
	return fmt.Sprintf("messages posted from %s to %s were not received live and are not counted yet; they are searched %s after",
		discord.SnowflakeTime(first).Format(time.RFC3339), discord.SnowflakeTime(last).Format(time.RFC3339), delay)
}

// compose adds up a report of the window w: the stored live counts of its hours (sums, per
// channel, the total under 0) plus the
// searched spans, for the server and for each of its channels that existed before the window
// ended (a channel live counting never saw a message of counts 0). Unfilled gaps make it stale
// with the code gap_not_filled.
func compose(guildID string, w reports.Window, sums map[uint64]int64, searched []spanCount, channels []discord.Channel,
	gaps []live.Gap, delay time.Duration, now time.Time) (reports.Row, []reports.ChannelRow) {
	row := reports.Row{GuildID: guildID, Period: w.Label, GeneratedAt: now, Status: reports.StatusOK, TotalMessages: sums[0]}
	for _, s := range searched {
		row.TotalMessages += s.Total
	}
	if len(gaps) > 0 {
		code, msg := collect.CodeGapNotFilled, gapMessage(gaps, delay)
		row.Status, row.ErrorCode, row.ErrorMessage = reports.StatusStale, &code, &msg
	}
	rows := make([]reports.ChannelRow, 0, len(channels))
	for _, ch := range channels {
		id, err := strconv.ParseUint(ch.ID, 10, 64)
		if err != nil || !discord.SnowflakeTime(id).Before(w.To) {
			continue
		}
		n := sums[id]
		for _, s := range searched {
			n += s.Channels[ch.ID]
		}
		rows = append(rows, reports.ChannelRow{GuildID: guildID, Period: w.Label, ChannelID: ch.ID, Name: ch.Name, Messages: n})
	}
	return row, rows
}

// fillCounts adds a search of one hour of a gap to the counts a fill hands over: the server's
// total, and each channel's (only counts above zero: a missing count is zero).
func fillCounts(into map[live.Key]int64, guild uint64, hour, total int64, rows []reports.ChannelRow) error {
	if total > 0 {
		into[live.Key{Guild: guild, Hour: hour}] += total
	}
	for _, r := range rows {
		if r.Messages <= 0 {
			continue
		}
		c, err := strconv.ParseUint(r.ChannelID, 10, 64)
		if err != nil || c == 0 {
			return fmt.Errorf("channel id %q: not a snowflake", r.ChannelID)
		}
		into[live.Key{Guild: guild, Hour: hour, Channel: c}] += r.Messages
	}
	return nil
}

// due reports whether the gap ended at least delay before now: Discord's search index then holds
// its messages.
func due(g live.Gap, delay time.Duration, now time.Time) bool {
	return !discord.SnowflakeTime(g.MaxID).Add(delay).After(now)
}

// closingDay is the last day whose end is at least delay before now: the newest day a search can
// check whole.
// refreshDue tells whether a server's today's and this month's reports, last written at at, are
// written again at now although its counts did not change: when a new Moscow day has begun (its
// today is another report) or every is past.
func refreshDue(at, now time.Time, every time.Duration) bool {
	return reports.DayOf(at) != reports.DayOf(now) || now.Sub(at) >= every
}

func closingDay(now time.Time, delay time.Duration) reports.Day {
	return reports.DayOf(now.Add(-delay)).AddDays(-1)
}

// batchGuilds is the servers whose counts or coverage a stored batch changed, in order.
func batchGuilds(b live.Batch) []uint64 {
	set := map[uint64]bool{}
	for k := range b.Counts {
		set[k.Guild] = true
	}
	for _, f := range b.Fills {
		set[f.Guild] = true
	}
	for g := range b.Gaps {
		set[g] = true
	}
	for g := range b.Guilds {
		set[g] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// spanRows turns a channel count's rows into spanCount's channels.
func spanRows(total int64, rows []reports.ChannelRow) spanCount {
	sc := spanCount{Total: total, Channels: make(map[string]int64, len(rows))}
	for _, r := range rows {
		sc.Channels[r.ChannelID] += r.Messages
	}
	return sc
}
