package collect

import (
	"context"
	"testing"
	"time"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/shared/reports"
)

// channelCalls counts the per-channel searches among calls, by channel id.
func channelCalls(calls []call) map[string]int {
	out := map[string]int{}
	for _, c := range calls {
		if c.channelID != "" && c.channelID != "guild" && c.channelID != "channels" {
			out[c.channelID]++
		}
	}
	return out
}

// TestZeroTotalAsksNoChannel: a window whose server total is 0 (today, half an hour after Moscow
// midnight, with no whole hour of messages yet) is written with every channel at 0, without a
// per-channel request.
func TestZeroTotalAsksNoChannel(t *testing.T) {
	e := newEnv(t, "2026-11-18T21:30:00Z", catalog.Entry{Number: 1, Name: "Alpha", GuildID: guildA})
	e.pass(t)
	for _, c := range e.discord.takeCalls() {
		if c.from.Equal(msk("2026-11-19")) && c.channelID != "" {
			t.Fatalf("a channel of a window with total 0 was asked: %+v", c)
		}
	}
	r, ok := e.daily(t, guildA, "2026-11-19")
	if !ok || r.Status != reports.StatusOK || r.TotalMessages != 0 {
		t.Fatalf("today %+v", r.Row)
	}
	e.checkCounts(t, r, guildA, msk("2026-11-19"), msk("2026-11-20"))
}

// TestUnchangedClosedWindowsKeepTheirCounts: the second pass over closed windows whose totals
// did not change asks only their totals, refreshes their reports (new generatedAt, ok) with the
// same counts, and counts again a closed window whose total changed.
func TestUnchangedClosedWindowsKeepTheirCounts(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "2026-11-19T12:00:00Z")
	e.pass(t)
	first := len(e.discord.takeCalls())
	yesterday, _ := e.daily(t, guildA, "2026-11-18")
	// A's October report was stored before a deletion (its total is one more than Discord's now):
	// it must be counted again.
	e.st.mu.Lock()
	key := reportKey{reports.KindMonth, guildA, "2026-10"}
	oldOct := e.st.reports[key]
	oldOct.TotalMessages++
	for id, c := range oldOct.channels {
		c.Messages += 1000
		oldOct.channels[id] = c
	}
	e.st.reports[key] = oldOct
	e.st.mu.Unlock()
	e.clock.Set(ts("2026-11-19T13:00:00Z"))
	res, err := e.col.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	calls := e.discord.takeCalls()
	for _, c := range calls {
		if c.channelID != "" && c.channelID != "guild" && c.channelID != "channels" && c.from.Equal(msk("2026-11-18")) {
			t.Fatalf("a channel of an unchanged closed day was asked: %+v", c)
		}
	}
	if res.Reused != 3 { // yesterday of A and B, October of B
		t.Fatalf("reused %d closed windows, want 3", res.Reused)
	}
	after, _ := e.daily(t, guildA, "2026-11-18")
	if after.Status != reports.StatusOK || !after.GeneratedAt.Equal(ts("2026-11-19T13:00:00Z")) || after.TotalMessages != yesterday.TotalMessages {
		t.Fatalf("yesterday %+v", after.Row)
	}
	e.checkCounts(t, after, guildA, msk("2026-11-18"), msk("2026-11-19"))
	oct, _ := e.monthly(t, guildA, "2026-10")
	e.checkCounts(t, oct, guildA, msk("2026-10-01"), msk("2026-11-01"))
	if len(calls) >= first {
		t.Fatalf("second pass %d calls, first %d", len(calls), first)
	}
}

// TestForbiddenChannelRemembered: a channel that answered 403 is not asked again in the other
// windows nor the next pass, until its permission overwrites change or a day has passed.
func TestForbiddenChannelRemembered(t *testing.T) {
	e := newEnv(t, "2026-11-19T12:00:00Z", catalog.Entry{Number: 1, Name: "Alpha", GuildID: guildA})
	forbidNews := func(guildID, channelID string, from time.Time) error {
		if channelID == chNews {
			return &discord.APIError{Status: 403, Code: 50001, Message: "Missing Access"}
		}
		return nil
	}
	e.discord.fail = forbidNews
	e.pass(t)
	if n := channelCalls(e.discord.takeCalls())[chNews]; n != 1 {
		t.Fatalf("the forbidden channel was asked %d times in the pass, want 1", n)
	}
	e.passAt(t, "2026-11-19T13:00:00Z")
	if n := channelCalls(e.discord.takeCalls())[chNews]; n != 0 {
		t.Fatalf("the forbidden channel was asked %d times an hour later", n)
	}
	r, _ := e.daily(t, guildA, "2026-11-19")
	if _, ok := r.channels[chNews]; ok || r.Status != reports.StatusOK {
		t.Fatalf("today %+v %v", r.Row, r.channels)
	}

	// Its permission overwrites change: it is asked again (and answers now).
	e.discord.fail = nil
	chans := e.discord.channels[guildA]
	for i := range chans {
		if chans[i].ID == chNews {
			chans[i].Overwrites = `[{"id":"1","type":0,"allow":"1024","deny":"0"}]`
		}
	}
	e.passAt(t, "2026-11-19T14:00:00Z")
	if n := channelCalls(e.discord.takeCalls())[chNews]; n == 0 {
		t.Fatal("the channel was not asked after its overwrites changed")
	}

	// Forbidden again; a day later it is asked again even with the same overwrites.
	e.discord.fail = forbidNews
	e.passAt(t, "2026-11-19T15:00:00Z")
	e.discord.takeCalls()
	e.passAt(t, "2026-11-20T14:59:00Z")
	if n := channelCalls(e.discord.takeCalls())[chNews]; n != 0 {
		t.Fatalf("asked %d times within the day", n)
	}
	e.passAt(t, "2026-11-20T15:01:00Z")
	if n := channelCalls(e.discord.takeCalls())[chNews]; n != 1 {
		t.Fatalf("asked %d times a day later, want 1", n)
	}
}

// TestFreshnessFirst: today and the current month of every server are counted before any closed
// window of any server.
func TestFreshnessFirst(t *testing.T) {
	e := newEnv(t, "2026-11-19T12:00:00Z")
	e.col.cfg.Concurrency, e.col.cfg.PerServer = 1, 1
	e.pass(t)
	lastOpen, firstClosed := -1, -1
	for i, c := range e.discord.takeCalls() {
		if c.channelID == "guild" || c.channelID == "channels" {
			continue
		}
		if c.to.After(ts("2026-11-19T12:00:00Z")) {
			lastOpen = i
		} else if firstClosed < 0 {
			firstClosed = i
		}
	}
	if lastOpen < 0 || firstClosed < 0 || lastOpen > firstClosed {
		t.Fatalf("last open-window call %d, first closed-window call %d", lastOpen, firstClosed)
	}
}
