package httpapi_test

import (
	"reflect"
	"testing"

	"forumstats.local/stats-svc/internal/answers/answerstest"
)

func getSeries(t *testing.T, s *stack, target string) answerstest.Series {
	t.Helper()
	return getJSON[answerstest.Series](t, s, target)
}

// totals renders a totals array with -1 for null.
func totals(ts []*int64) []int64 {
	out := make([]int64, len(ts))
	for i, p := range ts {
		out[i] = num(p)
	}
	return out
}

func TestSeriesAllServers(t *testing.T) {
	s := newStack(t, pgDB(t), stackOptions{redis: newRedis(t, "")})
	for _, target := range []string{seriesPath + "?from=2026-11-16&to=2026-11-20", seriesPath + "/?to=2026-11-20&from=2026-11-16&x=1"} {
		b := getSeries(t, s, target)
		if b.From != "2026-11-16" || b.To != "2026-11-20" || b.Timezone != "Europe/Moscow" || b.RefreshMinutes != 10 ||
			!reflect.DeepEqual(b.Days, []string{"2026-11-16", "2026-11-17", "2026-11-18", "2026-11-19", "2026-11-20"}) {
			t.Fatalf("%s: header fields %+v", target, b)
		}
		want := []struct {
			number   int
			totals   []int64
			statuses []string
		}{
			{1, []int64{11, 11, 11, 11, 11}, []string{"ok", "ok", "ok", "ok", "ok"}},
			{2, []int64{5, -1, 5, 5, 5}, []string{"ok", "missing", "ok", "ok", "ok"}},
			// The 18th is stored stale; today's report is an hour old: stale by age.
			{3, []int64{2, 2, 2, 2, 2}, []string{"ok", "ok", "stale", "ok", "stale"}},
		}
		if len(b.Servers) != len(want) {
			t.Fatalf("%d servers (a server that left the catalog is never listed)", len(b.Servers))
		}
		for i, w := range want {
			got := b.Servers[i]
			if got.Number != w.number || !reflect.DeepEqual(totals(got.Totals), w.totals) || !reflect.DeepEqual(got.Statuses, w.statuses) || got.Channels != nil {
				t.Fatalf("server %d: %+v, want %+v", i, got, w)
			}
		}
	}
}

func TestSeriesOneServer(t *testing.T) {
	s := newStack(t, pgDB(t), stackOptions{})
	b := getSeries(t, s, seriesPath+"?from=2026-11-05&to=2026-11-20&server=01")
	if len(b.Servers) != 1 || b.Servers[0].Name != "Alpha" || b.Servers[0].Channels == nil {
		t.Fatalf("servers %+v", b.Servers)
	}
	srv := b.Servers[0]
	if srv.Totals[0] != nil || srv.Statuses[0] != "missing" || num(srv.Totals[1]) != 12 || num(srv.Totals[15]) != 11 {
		t.Fatalf("totals %v statuses %v", totals(srv.Totals), srv.Statuses)
	}
	chans := *srv.Channels
	if len(chans) != 3 {
		t.Fatalf("channels %+v", chans)
	}
	// By sum: 10 (150), 12 (15), 13 (2); 12's name is the newest day's.
	if chans[0].ID != "10" || chans[1].ID != "12" || chans[1].Name != "new-name" || chans[2].ID != "13" || chans[2].Name != "archived" {
		t.Fatalf("channels %+v", chans)
	}
	archived := totals(chans[2].Totals)
	// Missing on the 5th (null), 1 on the 6th and 7th, 0 on every later day.
	if archived[0] != -1 || archived[1] != 1 || archived[2] != 1 || archived[3] != 0 || archived[15] != 0 {
		t.Fatalf("archived channel totals %v", archived)
	}
	// The guildId match wins over the catalog number, as in the statistics.
	g := getSeries(t, s, seriesPath+"?from=2026-11-20&to=2026-11-20&server="+gammaID)
	if g.Servers[0].Name != "Gamma & Co" || g.Servers[0].Statuses[0] != "stale" {
		t.Fatalf("gamma %+v", g.Servers)
	}
}
