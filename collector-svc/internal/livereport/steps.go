package livereport

import (
	"context"
	"errors"
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

// fillGaps searches every unfilled gap of a catalog server counted here once it is due (the
// others are never reported: their gaps would spend the search's budget for nothing), hour by hour,
// for the server's total and its channels, and hands the counts to the server's flusher, which
// stores them and marks the gap filled in one transaction. A failed search hands over nothing:
// the gap stays unfilled and is searched again GapDelay later.
func (r *Reporter) fillGaps(ctx context.Context) error {
	now := r.cfg.Now()
	// Only the hours still refreshed matter: older gaps are no longer live counting's.
	gaps, err := r.cfg.Live.UnfilledGaps(ctx, reports.RefreshedAt(now).Months[1].Start())
	if err != nil {
		return err
	}
	guilds, err := r.catalogGuilds(ctx)
	if err != nil {
		return err
	}
	stored := make(map[live.GuildGap]bool, len(gaps))
	for _, gg := range gaps {
		stored[gg] = true
	}
	// A fill handed over leaves the list once its flush stored it, or, never stored, after
	// GapDelay (its shard went elsewhere); a refusal is kept for SearchEvery.
	maps.DeleteFunc(r.pending, func(gg live.GuildGap, at time.Time) bool { return !stored[gg] || !now.Before(at.Add(r.cfg.GapDelay)) })
	maps.DeleteFunc(r.refused, func(gg live.GuildGap, at time.Time) bool {
		return !stored[gg] || !now.Before(at.Add(r.cfg.SearchEvery))
	})
	maps.DeleteFunc(r.failedGap, func(gg live.GuildGap, _ time.Time) bool { return !stored[gg] })
	var errs []error
	for _, gg := range gaps {
		_, pending := r.pending[gg]
		_, refused := r.refused[gg]
		if _, ok := guilds[gg.Guild]; pending || refused || !ok || !due(gg.Gap, r.cfg.GapDelay, now) {
			continue
		}
		if next, ok := r.failedGap[gg]; ok && now.Before(next) {
			continue
		}
		counts, err := r.searchGap(ctx, gg)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			metricGapFills.WithLabelValues("failed").Inc()
			r.failedGap[gg] = now.Add(r.cfg.GapDelay)
			r.log.Warn("live gap: search failed, the gap stays unfilled and is searched again", "guild_id", gg.Guild,
				"min_id", gg.Gap.MinID, "max_id", gg.Gap.MaxID, "err", err)
			errs = append(errs, err)
			continue
		}
		switch err := r.cfg.Filler.Fill(gg.Guild, gg.Gap, counts); {
		case errors.Is(err, live.ErrFill):
			metricGapFills.WithLabelValues("refused").Inc()
			r.log.Info("live gap: not one this process counts, left alone", "guild_id", gg.Guild, "err", err)
			r.refused[gg] = now
		case err != nil:
			errs = append(errs, err)
		default:
			metricGapFills.WithLabelValues("filled").Inc()
			r.pending[gg] = now
			delete(r.failedGap, gg)
		}
	}
	return errors.Join(errs...)
}

// searchGap counts a gap per UTC hour: the server's total and, by the search collector's rules,
// its channels.
func (r *Reporter) searchGap(ctx context.Context, gg live.GuildGap) (map[live.Key]int64, error) {
	guildID := strconv.FormatUint(gg.Guild, 10)
	channels, err := r.channelList(ctx, guildID)
	if err != nil {
		return nil, err
	}
	counts := map[live.Key]int64{}
	for _, piece := range live.ByHour(live.Span{MinID: gg.Gap.MinID, MaxID: gg.Gap.MaxID}) {
		from, to, err := spanWindow(piece.Span)
		if err != nil {
			return nil, err
		}
		total, err := r.cfg.Discord.CountMessages(ctx, guildID, "", from, to)
		if err != nil {
			return nil, err
		}
		rows, _, err := r.cfg.Channels.CountChannels(ctx, guildID, channels, from, to, total, r.cfg.Now())
		if err != nil {
			return nil, err
		}
		if err := fillCounts(counts, gg.Guild, piece.Hour, total, rows); err != nil {
			return nil, err
		}
	}
	return counts, nil
}

// writeChanged writes today's and this month's reports of the catalog's servers noted since the
// last step. A server whose write failed waits GapDelay before the next try, however often its
// counts change, so that a failing search is not repeated at every flush.
func (r *Reporter) writeChanged(ctx context.Context) error {
	now := r.cfg.Now()
	changed, wholeShards := r.takeChanged()
	// A server waiting for its retry is skipped below; it is written once its time has come.
	for g, at := range r.retryWrite {
		if !now.Before(at) {
			delete(r.retryWrite, g)
			changed = append(changed, g)
		}
	}
	guilds, err := r.catalogGuilds(ctx)
	if err != nil {
		r.keep(changed)
		r.keepShards(wholeShards)
		return err
	}
	// The pass leaves these reports to live counting: a server whose counts did not change is
	// still written once a day begins and every SearchEvery, so that its today's report exists
	// from the day's start and no report readers age by its time turns stale.
	for g := range guilds {
		if at, ok := r.written[g]; !ok || refreshDue(at, now, r.cfg.SearchEvery) {
			changed = append(changed, g)
		}
	}
	for _, sh := range wholeShards {
		for g := range guilds {
			if int((g>>22)%uint64(sh[1])) == sh[0] {
				changed = append(changed, g)
			}
		}
	}
	slices.Sort(changed)
	changed = slices.Compact(changed)
	var errs []error
	for _, g := range changed {
		guildID, ok := guilds[g]
		if !ok {
			continue
		}
		if _, ok := r.retryWrite[g]; ok {
			continue
		}
		if err := r.writeGuild(ctx, g, guildID, now); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.retryWrite[g] = now.Add(r.cfg.GapDelay)
			errs = append(errs, err)
			continue
		}
		r.written[g] = now
	}
	r.pruneSpans(now)
	return errors.Join(errs...)
}

func (r *Reporter) writeGuild(ctx context.Context, g uint64, guildID string, now time.Time) error {
	cov, counting, err := r.cfg.Live.Coverage(ctx, g)
	if err != nil || !counting {
		return err
	}
	windows := []reports.Window{reports.DayOf(now).Window(), reports.MonthOf(now).Window()}
	channels, err := r.channelList(ctx, guildID)
	if err != nil {
		var errs []error
		for _, w := range windows {
			errs = append(errs, r.stale(ctx, guildID, w, err))
		}
		return errors.Join(errs...)
	}
	var errs []error
	for _, w := range windows {
		errs = append(errs, r.writeWindow(ctx, g, guildID, cov, channels, w, now))
	}
	return errors.Join(errs...)
}

// writeWindow writes the report of w from the stored counts of its hours, the search of its hours
// before counting began and, as stale, without the messages of its unfilled gaps. A failed search
// marks the stored report stale instead, as the search collector does.
func (r *Reporter) writeWindow(ctx context.Context, g uint64, guildID string, cov live.Coverage, channels []discord.Channel,
	w reports.Window, now time.Time) error {
	fromH, toH := live.HourAt(w.From), live.HourAt(w.To)
	var searched []spanCount
	for _, s := range reportSearch(fromH, toH, cov) {
		sc, err := r.searchSpan(ctx, guildID, channels, s, now)
		if err != nil {
			return r.stale(ctx, guildID, w, err)
		}
		searched = append(searched, sc)
	}
	sums, err := r.cfg.Live.Sums(ctx, g, fromH, toH)
	if err != nil {
		return err
	}
	row, rows := compose(guildID, w, sums, searched, channels, unfilledIn(fromH, toH, cov), r.cfg.GapDelay, now)
	if err := r.cfg.Reports.SaveReport(ctx, w.Kind, row, rows); err != nil {
		return fmt.Errorf("write %s report %s of %s: %w", w.Kind, w.Label, guildID, err)
	}
	metricReports.WithLabelValues(w.Kind.String(), row.Status).Inc()
	return nil
}

// searchSpan searches a span live counting does not own, for the server and its channels; the
// answer is reused for SearchEvery.
func (r *Reporter) searchSpan(ctx context.Context, guildID string, channels []discord.Channel, s live.Span, now time.Time) (spanCount, error) {
	from, to, err := spanWindow(s)
	if err != nil {
		return spanCount{}, err
	}
	key := spanKey{guild: guildID, from: from.UnixMilli(), to: to.UnixMilli()}
	if c, ok := r.spans[key]; ok && now.Sub(c.at) < r.cfg.SearchEvery {
		return c.count, nil
	}
	total, err := r.cfg.Discord.CountMessages(ctx, guildID, "", from, to)
	if err != nil {
		return spanCount{}, err
	}
	rows, _, err := r.cfg.Channels.CountChannels(ctx, guildID, channels, from, to, total, now)
	if err != nil {
		return spanCount{}, err
	}
	sc := spanRows(total, rows)
	r.spans[key] = cachedSpan{count: sc, at: now}
	return sc, nil
}

func (r *Reporter) pruneSpans(now time.Time) {
	maps.DeleteFunc(r.spans, func(_ spanKey, c cachedSpan) bool { return now.Sub(c.at) >= r.cfg.SearchEvery })
}

// stale marks the stored report of w stale with the failure's code, keeping its counts, and
// returns the failure.
func (r *Reporter) stale(ctx context.Context, guildID string, w reports.Window, cause error) error {
	code, msg := collect.Classify(cause)
	marked, err := r.cfg.Reports.MarkStale(ctx, w.Kind, guildID, w.Label, code, msg)
	if marked {
		metricReports.WithLabelValues(w.Kind.String(), reports.StatusStale).Inc()
	}
	r.log.Warn("live report not refreshed", "guild_id", guildID, "kind", w.Kind.String(), "period", w.Label,
		"code", code, "err", cause, "marked_stale", marked)
	return errors.Join(fmt.Errorf("%s report %s of %s: %w", w.Kind, w.Label, guildID, cause), err)
}

// closeDays checks, once each, the newest closed day of every catalog server counted here.
func (r *Reporter) closeDays(ctx context.Context) error {
	now := r.cfg.Now()
	day := closingDay(now, r.cfg.GapDelay)
	guilds, err := r.catalogGuilds(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, g := range slices.Sorted(maps.Keys(guilds)) {
		if r.closed[g] == day {
			continue
		}
		if at, ok := r.retryClose[g]; ok && now.Before(at) {
			continue
		}
		done, err := r.closeDay(ctx, g, guilds[g], day, now)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.retryClose[g] = now.Add(r.cfg.GapDelay)
			errs = append(errs, err)
		case done:
			r.closed[g] = day
			delete(r.retryClose, g)
		}
	}
	return errors.Join(errs...)
}

// closeDay makes the report of a closed day final. A day counted live whole is checked with one
// search of the server's total: equal to the live total, the report is written from live counts
// with no other request; different, the day is counted by the search collector's rules (its
// channels searched) and the difference logged. A day whose counting began during it is counted
// by those rules at once; a day with an unfilled gap waits for its fill (done false). When the
// day is the last of its month, the month's report is written again from live counts too.
func (r *Reporter) closeDay(ctx context.Context, g uint64, guildID string, day reports.Day, now time.Time) (done bool, err error) {
	cov, counting, err := r.cfg.Live.Coverage(ctx, g)
	if err != nil {
		return false, err
	}
	if !counting || cov.SinceID >= discord.SnowflakeAt(day.End()) {
		return true, nil // search owns the whole day
	}
	w := day.Window()
	fromH, toH := live.HourAt(w.From), live.HourAt(w.To)
	if len(unfilledIn(fromH, toH, cov)) > 0 {
		return false, nil
	}
	channels, err := r.channelList(ctx, guildID)
	if err != nil {
		return false, r.stale(ctx, guildID, w, err)
	}
	total, err := r.cfg.Discord.CountMessages(ctx, guildID, "", w.From, w.To)
	if err != nil {
		return false, r.stale(ctx, guildID, w, err)
	}
	var (
		row  reports.Row
		rows []reports.ChannelRow
	)
	sums, err := r.cfg.Live.Sums(ctx, g, fromH, toH)
	if err != nil {
		return false, err
	}
	partial := len(reportSearch(fromH, toH, cov)) > 0
	if lt := sums[0]; !partial && lt == total {
		metricClosedDays.WithLabelValues("equal").Inc()
		row, rows = compose(guildID, w, sums, nil, channels, nil, r.cfg.GapDelay, now)
	} else {
		if partial {
			metricClosedDays.WithLabelValues("searched").Inc()
		} else {
			metricClosedDays.WithLabelValues("differs").Inc()
			metricClosedDiff.Observe(float64(max(lt-total, total-lt)))
			r.log.Warn("live counts: a closed day's live total differs from the search; its channels are searched", "guild_id", guildID,
				"day", w.Label, "live", lt, "search", total, "difference", lt-total)
		}
		rows, _, err = r.cfg.Channels.CountChannels(ctx, guildID, channels, w.From, w.To, total, now)
		if err != nil {
			return false, r.stale(ctx, guildID, w, err)
		}
		for i := range rows {
			rows[i].Period = w.Label
		}
		row = reports.Row{GuildID: guildID, Period: w.Label, GeneratedAt: now, Status: reports.StatusOK, TotalMessages: total}
	}
	if err := r.cfg.Reports.SaveReport(ctx, w.Kind, row, rows); err != nil {
		return false, fmt.Errorf("write daily report %s of %s: %w", w.Label, guildID, err)
	}
	metricReports.WithLabelValues(w.Kind.String(), row.Status).Inc()
	if day.AddDays(1).MonthOf() != day.MonthOf() {
		if err := r.writeWindow(ctx, g, guildID, cov, channels, day.MonthOf().Window(), now); err != nil {
			return false, err
		}
	}
	return true, nil
}
