package livereport

import (
	"testing"
	"time"

	"gorm.io/gorm"

	"forumstats.local/collector-svc/internal/collect"
	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/shared/reports"
)

// TestPassLeavesLiveReportsToTheReporter runs the search collector's pass and the reporter of live
// counts over one database: of two catalog servers, the first is counted live, the second is not
// (the bot is not on the gateway for it). A pass writes no today's or this month's report of the
// first and writes them for the second; the reporter writes the first's, and they stay the stored
// ones (its generatedAt, the fake's counts) after another pass. Once the shard stops being
// flushed for LIVE_GAP_DELAY, the pass writes them again.
func TestPassLeavesLiveReportsToTheReporter(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		day := reports.Day{Year: 2026, Month: time.November, Day: 20}
		since := day.Start().Add(-90 * time.Minute) // counting began yesterday at 22:30 Moscow time
		r := newRigOf(t, gdb, since, 2)
		other := r.entries[1].GuildID
		var otherListed int
		chans, err := r.client.Channels(ctx, other)
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range chans {
			if discord.MessageBearing(ch.Type) {
				otherListed++
			}
		}
		const fresh = 2 * time.Minute
		pass := collect.New(collect.Config{Discord: r.client, Store: r.reports, Live: r.lstore, LiveFresh: fresh,
			Now: r.clock.Now})
		runPass := func() collect.Result {
			t.Helper()
			res, err := pass.Pass(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		r.ready("s1")
		r.guildCreate()
		r.fedTo = since
		now := day.Start().Add(10 * time.Hour)
		r.feed(now)
		r.flush() // the shard's checkpoint, flushed now

		counted, err := r.lstore.Counted(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c, ok := counted[r.guildID]; !ok || !c.Flushed.Equal(now) || c.SinceID != discord.SnowflakeAt(since) {
			t.Fatalf("live counts of the first server: %+v (%v), want counted since %s, flushed %s", c, ok, since, now)
		}
		if _, ok := counted[other]; ok {
			t.Fatal("the second server is counted live")
		}

		today, month := day.Window(), day.MonthOf().Window()
		r.clock.Set(now.Add(time.Second))
		if res := runPass(); res.Live != 2 {
			t.Errorf("the pass left %d windows to live counting, want 2", res.Live)
		}
		for _, w := range []reports.Window{today, month} {
			if _, _, found, err := r.reports.Report(ctx, w.Kind, r.guildID, w.Label); err != nil || found {
				t.Fatalf("the pass wrote the live server's %s %s (found %v, %v)", w.Kind, w.Label, found, err)
			}
			r.exactOf(other, otherListed, w)
		}
		// The closed windows stay the pass's.
		r.exactOf(r.guildID, len(r.listed), day.AddDays(-1).Window())

		// The reporter writes the live server's reports, the pass leaves them.
		r.clock.Set(now.Add(2 * time.Second))
		if err := r.rep.Flushed(ctx); err != nil {
			t.Fatal(err)
		}
		r.clock.Set(now.Add(3 * time.Second))
		runPass()
		for _, w := range []reports.Window{today, month} {
			if row, _ := r.reportOf(other, w.Kind, w.Label); !row.GeneratedAt.Equal(now.Add(3 * time.Second)) {
				t.Errorf("the second server's %s %s generated at %s, want the pass's %s", w.Kind, w.Label, row.GeneratedAt, now.Add(3*time.Second))
			}
		}
		// The messages fed and flushed are those before now: the fake counts up to its clock,
		// included.
		r.clock.Set(now.Add(-time.Millisecond))
		for _, w := range []reports.Window{today, month} {
			row, _ := r.report(w.Kind, w.Label)
			if !row.GeneratedAt.Equal(now.Add(2 * time.Second)) {
				t.Errorf("%s %s generated at %s, want the reporter's %s", w.Kind, w.Label, row.GeneratedAt, now.Add(2*time.Second))
			}
			r.exact(w)
		}

		// Nobody flushes the shard any more: the pass writes the live server's reports again.
		r.fedTo = now.Add(fresh)
		r.clock.Set(now.Add(fresh))
		if res := runPass(); res.Live != 0 {
			t.Errorf("a shard not flushed for %s: %d windows left to live counting, want 0", fresh, res.Live)
		}
		for _, w := range []reports.Window{today, month} {
			if row, _ := r.report(w.Kind, w.Label); !row.GeneratedAt.Equal(now.Add(fresh)) {
				t.Errorf("%s %s generated at %s, want the pass's %s", w.Kind, w.Label, row.GeneratedAt, now.Add(fresh))
			}
			r.exact(w)
		}
	})
}

// TestPassLeavesFinishedDayToTheReporter: over one database, a day of a server counted live whole
// closes with the live total equal to the search's: the reporter records it finished, and a pass
// after the close leaves its report alone (the reporter's, exact). A deletion in that day that the
// gateway tells is written into it by the reporter, with no request; the pass still leaves it, and
// it stays equal to the fake's count.
func TestPassLeavesFinishedDayToTheReporter(t *testing.T) {
	both(t, func(t *testing.T, gdb *gorm.DB) {
		day := reports.Day{Year: 2026, Month: time.November, Day: 20}
		since := day.Start().Add(-90 * time.Minute)
		r := newRig(t, gdb, since)
		const fresh = 2 * time.Minute
		pass := collect.New(collect.Config{Discord: r.client, Store: r.reports, Live: r.lstore, LiveFresh: fresh,
			Now: r.clock.Now})
		r.ready("s1")
		r.guildCreate()
		r.fedTo = since
		checked := day.End().Add(fresh + time.Second)
		r.feed(checked)
		r.flush()
		if err := r.rep.Flushed(ctx); err != nil { // the day closes: checked, equal, finished
			t.Fatal(err)
		}
		if done, err := r.lstore.FinishedOf(ctx, r.guild, []string{day.String()}); err != nil || !done[day.String()] {
			t.Fatalf("the day is not recorded finished: %v, %v", done, err)
		}
		stored, _ := r.report(reports.KindDay, day.String())

		// A pass twice LIVE_GAP_DELAY after the close, the shard just flushed: it leaves the day.
		at := day.End().Add(2*fresh + time.Second)
		r.feed(at)
		r.flush()
		r.clock.Set(at.Add(time.Second))
		res, err := pass.Pass(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Finished != 1 {
			t.Errorf("the pass left %d finished windows, want 1 (yesterday; the previous month is the pass's)", res.Finished)
		}
		if row, _ := r.report(reports.KindDay, day.String()); !row.GeneratedAt.Equal(stored.GeneratedAt) {
			t.Errorf("the pass rewrote the finished day at %s (the reporter's at %s)", row.GeneratedAt, stored.GeneratedAt)
		}

		// The gateway tells a deletion in the finished day: the reporter writes it in.
		gone := r.messages(day.Start().Add(12*time.Hour), day.Start().Add(13*time.Hour))[0]
		r.remove(gone, true)
		r.flush()
		before := r.requests()
		if err := r.rep.Flushed(ctx); err != nil {
			t.Fatal(err)
		}
		if n := r.requests() - before; n != 0 {
			t.Errorf("writing a deletion into a finished day sent %d requests, want 0", n)
		}
		r.clock.Set(r.clock.Now().Add(time.Second))
		if _, err := pass.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		r.exact(day.Window())
	})
}
