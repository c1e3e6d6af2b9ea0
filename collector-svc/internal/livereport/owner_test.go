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
