package demo

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/collector-svc/internal/fakediscord"
	"forumstats.local/collector-svc/internal/reportfile"
	"forumstats.local/shared/reports"
)

// 2026-11-26 12:00 in Moscow, a Thursday.
var now = time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)

func demoCatalog(t *testing.T) []catalog.Entry {
	t.Helper()
	entries, err := catalog.Load("../../../deploy/compose/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 2 {
		t.Fatalf("the demo catalog has %d servers; the demo's gaps need two", len(entries))
	}
	return entries
}

// The demo of 90 days for the demo catalog: every day of every server but one missing, one
// stale, today partial and just refreshed, totals holding the channels, months holding their
// days, a weekly rhythm, the same file for the same moment, and a file the import accepts.
func TestGenerate(t *testing.T) {
	cat := demoCatalog(t)
	f, err := Generate(Options{Now: now, Days: 90, Catalog: cat, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Generate(Options{Now: now, Days: 90, Catalog: cat, Seed: 1})
	if !reflect.DeepEqual(f, again) {
		t.Fatal("two files for one moment")
	}
	if f.RefreshMinutes == nil || *f.RefreshMinutes != 10 || !reflect.DeepEqual(f.Catalog, cat) || len(f.Guilds) != len(cat) {
		t.Fatalf("header: refresh %v, catalog %v, %d guilds", f.RefreshMinutes, f.Catalog, len(f.Guilds))
	}

	today := reports.DayOf(now)
	first := today.AddDays(-89)
	type key struct{ guild, period string }
	daily := map[key]reportfile.Report{}
	var stale []key
	for _, r := range f.Daily {
		k := key{r.GuildID, r.Period}
		if _, dup := daily[k]; dup {
			t.Fatalf("two reports of %v", k)
		}
		daily[k] = r
		if r.Status == reports.StatusStale {
			stale = append(stale, k)
		}
		checkReport(t, r)
	}
	// Exactly the gaps placed on purpose.
	staleKey := key{cat[1].GuildID, today.AddDays(-StaleDaysAgo).String()}
	missingKey := key{cat[len(cat)-1].GuildID, today.AddDays(-MissingDaysAgo).String()}
	if len(stale) != 1 || stale[0] != staleKey || daily[staleKey].Error == nil || daily[staleKey].Error.Code == "" {
		t.Fatalf("stale reports %v, want only %v with its error", stale, staleKey)
	}
	var missing []key
	for d := first; !today.Before(d); d = d.AddDays(1) {
		for _, e := range cat {
			if _, ok := daily[key{e.GuildID, d.String()}]; !ok {
				missing = append(missing, key{e.GuildID, d.String()})
			}
		}
	}
	if len(missing) != 1 || missing[0] != missingKey || len(f.Daily) != 90*len(cat)-1 {
		t.Fatalf("missing %v, want only %v; %d daily reports", missing, missingKey, len(f.Daily))
	}

	// Today is in progress: counted up to now, refreshed two minutes ago; yesterday is whole.
	whole := fakediscord.New(fakediscord.Options{Seed: 1, Guilds: len(cat)})
	for _, e := range cat {
		r := daily[key{e.GuildID, today.String()}]
		full := whole.Count(e.GuildID, "", today.Start(), today.End())
		if r.TotalMessages == 0 || r.TotalMessages >= full || !r.GeneratedAt.Equal(now.Add(-2*time.Minute)) {
			t.Fatalf("%s today: %d messages of the day's %d, generated %v", e.GuildID, r.TotalMessages, full, r.GeneratedAt)
		}
		y := today.AddDays(-1)
		if r := daily[key{e.GuildID, y.String()}]; r.TotalMessages != whole.Count(e.GuildID, "", y.Start(), y.End()) {
			t.Fatalf("%s yesterday: %d, want the whole day", e.GuildID, r.TotalMessages)
		}
	}

	// Weekly rhythm: Saturdays busier than Mondays, for every server.
	for _, e := range cat {
		var sat, mon int64
		for d := first; d.Before(today); d = d.AddDays(1) {
			switch time.Date(d.Year, d.Month, d.Day, 12, 0, 0, 0, time.UTC).Weekday() {
			case time.Saturday:
				sat += daily[key{e.GuildID, d.String()}].TotalMessages
			case time.Monday:
				mon += daily[key{e.GuildID, d.String()}].TotalMessages
			}
		}
		if sat <= mon*11/10 {
			t.Fatalf("%s: Saturdays %d, Mondays %d: no weekly rhythm", e.GuildID, sat, mon)
		}
	}

	// Months: every month the days touch, for every server; a month counted whole holds its days'
	// totals exactly when none of its days is a gap, more when one is.
	months := map[key]reportfile.Report{}
	for _, r := range f.Monthly {
		months[key{r.GuildID, r.Period}] = r
		checkReport(t, r)
	}
	if len(f.Monthly) != 4*len(cat) {
		t.Fatalf("%d monthly reports, want 4 months (2026-08..11) for %d servers", len(f.Monthly), len(cat))
	}
	for _, month := range []string{"2026-10", "2026-11"} {
		for _, e := range cat {
			m, ok := months[key{e.GuildID, month}]
			if !ok {
				t.Fatalf("no %s report of %s", month, e.GuildID)
			}
			var sum int64
			gap := false
			for _, r := range f.Daily {
				if r.GuildID == e.GuildID && strings.HasPrefix(r.Period, month) {
					sum += r.TotalMessages
				}
			}
			for _, k := range []key{staleKey, missingKey} {
				gap = gap || (k.guild == e.GuildID && strings.HasPrefix(k.period, month))
			}
			if (!gap && m.TotalMessages != sum) || (gap && m.TotalMessages <= sum) {
				t.Fatalf("%s %s: month %d, days %d (a gap: %v)", e.GuildID, month, m.TotalMessages, sum, gap)
			}
		}
	}

	// The import's own reading accepts the file.
	var buf bytes.Buffer
	if err := reportfile.Encode(&buf, f); err != nil {
		t.Fatal(err)
	}
	counts, err := reportfile.Scan(bytes.NewReader(buf.Bytes()), reportfile.Visitor{})
	if err != nil || counts.Daily != len(f.Daily) || counts.Monthly != len(f.Monthly) {
		t.Fatalf("the import reads %+v, %v", counts, err)
	}
}

// checkReport: the total counts threads too, so it holds at least the listed channels; the
// report was generated after its period began and never after now.
func checkReport(t *testing.T, r reportfile.Report) {
	t.Helper()
	var sum int64
	for _, c := range r.Channels {
		sum += c.Messages
	}
	if len(r.Channels) == 0 || r.TotalMessages < sum {
		t.Fatalf("%s %s: total %d, channels %d (%d listed)", r.GuildID, r.Period, r.TotalMessages, sum, len(r.Channels))
	}
	start := time.Time{}
	if d, ok := reports.ParseDay(r.Period); ok {
		start = d.Start()
	} else if m, ok := reports.ParseMonth(r.Period); ok {
		start = m.Start()
	}
	if !r.GeneratedAt.After(start) || r.GeneratedAt.After(now) {
		t.Fatalf("%s %s generated at %v", r.GuildID, r.Period, r.GeneratedAt)
	}
}

func TestGenerateRefuses(t *testing.T) {
	cat := demoCatalog(t)
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"one day", Options{Now: now, Days: 1, Catalog: cat, Seed: 1}, "at least 2 days"},
		{"no catalog", Options{Now: now, Days: 90, Seed: 1}, "catalog is empty"},
		{"not a fake server", Options{Now: now, Days: 90, Seed: 1, Catalog: []catalog.Entry{{Number: 1, Name: "x", GuildID: "42"}}}, "not a server of the fake"},
		{"another seed", Options{Now: now, Days: 90, Seed: 2, Catalog: cat}, "not a server of the fake"},
	} {
		if _, err := Generate(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
