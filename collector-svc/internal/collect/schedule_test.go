package collect

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/shared/reports"
)

// serverTotals lists, per guild, the windows (by label) whose server total the pass asked for,
// in the order asked; the listings come first as "guild" and "channels".
func serverTotals(calls []call) map[string][]string {
	out := map[string][]string{}
	for _, c := range calls {
		switch {
		case c.channelID == "guild" || c.channelID == "channels":
			out[c.guildID] = append(out[c.guildID], c.channelID)
		case c.channelID == "":
			label := reports.DayOf(c.from).String()
			if c.to.Sub(c.from) > 25*time.Hour { // a month
				label = reports.MonthOf(c.from).String()
			}
			out[c.guildID] = append(out[c.guildID], label)
		}
	}
	return out
}

// TestPassSchedule: a new server gets its open windows (today, the current month), then the
// closed ones (yesterday, the previous month), then the six backfill days, newest first; a server with every day stored gets the regular windows only; a backfill day that went
// missing is counted again, alone, after the regular windows.
func TestPassSchedule(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "2026-11-19T12:00:00Z", catalog.Entry{Number: 1, Name: "Alpha", GuildID: guildA})
	e.col.cfg.Concurrency = 1
	regular := []string{"guild", "channels", "2026-11-19", "2026-11", "2026-11-18", "2026-10"}
	backfill := []string{"2026-11-17", "2026-11-16", "2026-11-15", "2026-11-14", "2026-11-13", "2026-11-12"}
	steps := []struct {
		name   string
		before func()
		want   []string
	}{
		{"new server", func() {}, append(slices.Clone(regular), backfill...)},
		{"every day stored", func() {}, regular},
		{"one backfill day missing", func() {
			e.st.mu.Lock()
			delete(e.st.reports, reportKey{reports.KindDay, guildA, "2026-11-15"})
			e.st.mu.Unlock()
		}, append(slices.Clone(regular), "2026-11-15")},
	}
	for _, step := range steps {
		step.before()
		if _, err := e.col.Pass(ctx); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := serverTotals(e.discord.takeCalls())[guildA]; !slices.Equal(got, step.want) {
			t.Fatalf("%s: asked\n%v\nwant\n%v", step.name, got, step.want)
		}
	}
}

// TestPassScheduleMovesWithTheClock: after two days without a pass (an outage), the pass
// counts the new today and yesterday, leaves the backfill days the first pass stored, and
// backfills the one day nothing stored.
func TestPassScheduleMovesWithTheClock(t *testing.T) {
	e := newEnv(t, "2026-11-19T12:00:00Z", catalog.Entry{Number: 1, Name: "Alpha", GuildID: guildA})
	e.col.cfg.Concurrency = 1
	e.pass(t)
	e.discord.takeCalls()
	e.passAt(t, "2026-11-22T12:00:00Z")
	want := []string{"guild", "channels", "2026-11-22", "2026-11", "2026-11-21", "2026-10", "2026-11-20"}
	if got := serverTotals(e.discord.takeCalls())[guildA]; !slices.Equal(got, want) {
		t.Fatalf("asked %v, want %v", got, want)
	}
}

// TestStoreFailureMarksStale: a report the store cannot write fails its window with
// store_error; the earlier report of that window is marked stale, a never-written one stays
// missing, and the other windows are written.
func TestStoreFailureMarksStale(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "2026-11-19T12:00:00Z", catalog.Entry{Number: 1, Name: "Alpha", GuildID: guildA})
	e.pass(t)
	before, _ := e.monthly(t, guildA, "2026-11")
	// Two days later: today and the backfill day 2026-11-20 were never stored.
	e.clock.Set(ts("2026-11-22T12:00:00Z"))
	e.st.saveFail = func(kind reports.Kind, r reports.Row) error {
		if r.Period == "2026-11" || r.Period == "2026-11-22" || r.Period == "2026-11-20" {
			return errors.New("disk full")
		}
		return nil
	}
	res, err := e.col.Pass(ctx)
	if !errors.Is(err, ErrPassFailed) || !strings.Contains(err.Error(), CodeStoreError) {
		t.Fatalf("err %v", err)
	}
	if len(res.Failures) != 3 || res.Written != 5-3 {
		t.Fatalf("written %d, failures %+v", res.Written, res.Failures)
	}
	for _, f := range res.Failures {
		if f.Code != CodeStoreError || f.Message != errStore.Error() || f.Stale != (f.Period == "2026-11") {
			t.Fatalf("failure %+v", f)
		}
	}
	m, _ := e.monthly(t, guildA, "2026-11")
	if m.Status != reports.StatusStale || *m.ErrorCode != CodeStoreError || m.TotalMessages != before.TotalMessages {
		t.Fatalf("month after a failed write %+v", m.Row)
	}
	for _, day := range []string{"2026-11-22", "2026-11-20"} {
		if _, ok := e.daily(t, guildA, day); ok {
			t.Fatalf("%s: a report never written is stored", day)
		}
	}
	if r, _ := e.daily(t, guildA, "2026-11-21"); r.Status != reports.StatusOK || !r.GeneratedAt.Equal(ts("2026-11-22T12:00:00Z")) {
		t.Fatalf("yesterday %+v", r.Row)
	}
}
