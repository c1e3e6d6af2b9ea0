package reports_test

import (
	"testing"
	"time"

	"forumstats.local/shared/reports"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestForPass(t *testing.T) {
	tests := []struct {
		name string
		now  string
		// labels and UTC bounds, in ForPass order
		want []string
	}{
		{
			name: "one minute before Moscow midnight",
			now:  "2026-11-19T20:59:00Z", // 23:59 MSK on the 19th
			want: []string{
				"2026-11-19 2026-11-18T21:00:00Z 2026-11-19T21:00:00Z",
				"2026-11-18 2026-11-17T21:00:00Z 2026-11-18T21:00:00Z",
				"2026-11 2026-10-31T21:00:00Z 2026-11-30T21:00:00Z",
				"2026-10 2026-09-30T21:00:00Z 2026-10-31T21:00:00Z",
				"2026-11-17 2026-11-16T21:00:00Z 2026-11-17T21:00:00Z",
				"2026-11-16 2026-11-15T21:00:00Z 2026-11-16T21:00:00Z",
				"2026-11-15 2026-11-14T21:00:00Z 2026-11-15T21:00:00Z",
				"2026-11-14 2026-11-13T21:00:00Z 2026-11-14T21:00:00Z",
				"2026-11-13 2026-11-12T21:00:00Z 2026-11-13T21:00:00Z",
				"2026-11-12 2026-11-11T21:00:00Z 2026-11-12T21:00:00Z",
			},
		},
		{
			name: "one minute after Moscow midnight (still the 19th in UTC)",
			now:  "2026-11-19T21:01:00Z", // 00:01 MSK on the 20th
			want: []string{
				"2026-11-20 2026-11-19T21:00:00Z 2026-11-20T21:00:00Z",
				"2026-11-19 2026-11-18T21:00:00Z 2026-11-19T21:00:00Z",
				"2026-11 2026-10-31T21:00:00Z 2026-11-30T21:00:00Z",
				"2026-10 2026-09-30T21:00:00Z 2026-10-31T21:00:00Z",
				"2026-11-18 2026-11-17T21:00:00Z 2026-11-18T21:00:00Z",
				"2026-11-17 2026-11-16T21:00:00Z 2026-11-17T21:00:00Z",
				"2026-11-16 2026-11-15T21:00:00Z 2026-11-16T21:00:00Z",
				"2026-11-15 2026-11-14T21:00:00Z 2026-11-15T21:00:00Z",
				"2026-11-14 2026-11-13T21:00:00Z 2026-11-14T21:00:00Z",
				"2026-11-13 2026-11-12T21:00:00Z 2026-11-13T21:00:00Z",
			},
		},
		{
			name: "exactly Moscow midnight belongs to the new day",
			now:  "2026-11-19T21:00:00Z",
			want: []string{
				"2026-11-20 2026-11-19T21:00:00Z 2026-11-20T21:00:00Z",
				"2026-11-19 2026-11-18T21:00:00Z 2026-11-19T21:00:00Z",
			},
		},
		{
			name: "new year in Moscow while UTC is still on 31 December",
			now:  "2026-12-31T21:00:00.000000001Z", // 00:00:00.000000001 MSK on 1 January 2027
			want: []string{
				"2027-01-01 2026-12-31T21:00:00Z 2027-01-01T21:00:00Z",
				"2026-12-31 2026-12-30T21:00:00Z 2026-12-31T21:00:00Z",
				"2027-01 2026-12-31T21:00:00Z 2027-01-31T21:00:00Z",
				"2026-12 2026-11-30T21:00:00Z 2026-12-31T21:00:00Z",
				"2026-12-30 2026-12-29T21:00:00Z 2026-12-30T21:00:00Z",
				"2026-12-29 2026-12-28T21:00:00Z 2026-12-29T21:00:00Z",
				"2026-12-28 2026-12-27T21:00:00Z 2026-12-28T21:00:00Z",
				"2026-12-27 2026-12-26T21:00:00Z 2026-12-27T21:00:00Z",
				"2026-12-26 2026-12-25T21:00:00Z 2026-12-26T21:00:00Z",
				"2026-12-25 2026-12-24T21:00:00Z 2026-12-25T21:00:00Z",
			},
		},
		{
			name: "last minute of 31 December in Moscow",
			now:  "2026-12-31T20:59:59Z",
			want: []string{
				"2026-12-31 2026-12-30T21:00:00Z 2026-12-31T21:00:00Z",
				"2026-12-30 2026-12-29T21:00:00Z 2026-12-30T21:00:00Z",
				"2026-12 2026-11-30T21:00:00Z 2026-12-31T21:00:00Z",
				"2026-11 2026-10-31T21:00:00Z 2026-11-30T21:00:00Z",
			},
		},
		{
			name: "first day of a month: yesterday and the backfill are in the previous month",
			now:  "2028-03-01T06:00:00Z", // leap year
			want: []string{
				"2028-03-01 2028-02-29T21:00:00Z 2028-03-01T21:00:00Z",
				"2028-02-29 2028-02-28T21:00:00Z 2028-02-29T21:00:00Z",
				"2028-03 2028-02-29T21:00:00Z 2028-03-31T21:00:00Z",
				"2028-02 2028-01-31T21:00:00Z 2028-02-29T21:00:00Z",
				"2028-02-28 2028-02-27T21:00:00Z 2028-02-28T21:00:00Z",
			},
		},
		{
			name: "instant given in another zone",
			now:  "2026-11-20T00:30:00+03:00",
			want: []string{"2026-11-20 2026-11-19T21:00:00Z 2026-11-20T21:00:00Z"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := reports.ForPass(mustTime(t, tt.now))
			if len(got) != 4+reports.BackfillDays {
				t.Fatalf("%d windows, want %d", len(got), 4+reports.BackfillDays)
			}
			for i, want := range tt.want {
				w := got[i]
				s := w.Label + " " + w.From.Format(time.RFC3339) + " " + w.To.Format(time.RFC3339)
				if s != want {
					t.Errorf("window %d = %q, want %q", i, s, want)
				}
				if w.From.Location() != time.UTC || w.To.Location() != time.UTC {
					t.Errorf("window %d bounds not in UTC", i)
				}
			}
			kinds := []reports.Kind{reports.KindDay, reports.KindDay, reports.KindMonth, reports.KindMonth}
			for i, w := range got {
				wantKind, wantBackfill := reports.KindDay, i >= 4
				if i < 4 {
					wantKind = kinds[i]
				}
				if w.Kind != wantKind || w.Backfill != wantBackfill {
					t.Errorf("window %d (%s): kind %v backfill %v", i, w.Label, w.Kind, w.Backfill)
				}
			}
		})
	}
}

func TestKindString(t *testing.T) {
	if reports.KindDay.String() != "daily" || reports.KindMonth.String() != "monthly" || reports.Kind(9).String() != "Kind(9)" {
		t.Fatal(reports.KindDay.String(), reports.KindMonth.String(), reports.Kind(9).String())
	}
}

// TestRefreshedHas: the refreshed periods are today, yesterday, this month and the previous
// month, in the Moscow calendar of the instant; nothing else, and each only under its own kind.
func TestRefreshedHas(t *testing.T) {
	// 00:30 on 1 January 2027 in Moscow, still 31 December 2026 in UTC.
	r := reports.RefreshedAt(mustTime(t, "2026-12-31T21:30:00Z"))
	tests := []struct {
		kind  reports.Kind
		label string
		want  bool
	}{
		{reports.KindDay, "2027-01-01", true},
		{reports.KindDay, "2026-12-31", true},
		{reports.KindDay, "2026-12-30", false}, // a backfill day: final as written
		{reports.KindDay, "2027-01-02", false},
		{reports.KindMonth, "2027-01", true},
		{reports.KindMonth, "2026-12", true},
		{reports.KindMonth, "2026-11", false},
		{reports.KindMonth, "2027-02", false},
		{reports.KindMonth, "2027-01-01", false}, // a day's label under the month kind
		{reports.KindDay, "2027-01", false},
		{reports.Kind(9), "2027-01-01", false},
		{reports.KindDay, "", false},
	}
	for _, tt := range tests {
		if got := r.Has(tt.kind, tt.label); got != tt.want {
			t.Errorf("Has(%v, %q) = %v, want %v", tt.kind, tt.label, got, tt.want)
		}
	}
	want := reports.Refreshed{
		Days:   [2]reports.Day{{Year: 2027, Month: time.January, Day: 1}, {Year: 2026, Month: time.December, Day: 31}},
		Months: [2]reports.Month{{Year: 2027, Month: time.January}, {Year: 2026, Month: time.December}},
	}
	if r != want {
		t.Fatalf("RefreshedAt = %+v, want %+v", r, want)
	}
}

func TestTurnsStale(t *testing.T) {
	at := mustTime(t, "2026-11-19T10:00:00.5Z")
	tests := []struct {
		minutes int
		want    string
	}{
		{10, "2026-11-19T10:30:00.5Z"},
		{1, "2026-11-19T10:03:00.5Z"},
		{60, "2026-11-19T13:00:00.5Z"},
		{1440, "2026-11-22T10:00:00.5Z"},
	}
	for _, tt := range tests {
		if got := reports.TurnsStale(at, tt.minutes); !got.Equal(mustTime(t, tt.want)) {
			t.Errorf("TurnsStale(%s, %d) = %s, want %s", at, tt.minutes, got, tt.want)
		}
	}
}

// FuzzForPass checks the calendar invariants for any instant of the service's years: the days
// of a pass are contiguous going back from today, the two months are contiguous and hold now,
// every window starts at a Moscow midnight named by its label, and exactly the windows that are
// not backfill are the refreshed periods.
func FuzzForPass(f *testing.F) {
	for _, s := range []string{"2026-11-19T20:59:00Z", "2026-11-19T21:00:00Z", "2026-12-31T21:00:00Z", "2028-02-29T20:59:59Z", "2015-01-01T00:00:00Z"} {
		v, _ := time.Parse(time.RFC3339, s)
		f.Add(v.Unix(), int64(0))
	}
	lo := time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(2099, 12, 31, 0, 0, 0, 0, time.UTC).Unix()
	f.Fuzz(func(t *testing.T, sec, nsec int64) {
		if sec < lo || sec > hi {
			sec = lo + (sec%(hi-lo)+(hi-lo))%(hi-lo)
		}
		now := time.Unix(sec, (nsec%1e9+1e9)%1e9)
		ws := reports.ForPass(now)
		today, yesterday, cur, prev := ws[0], ws[1], ws[2], ws[3]
		if now.Before(today.From) || !now.Before(today.To) {
			t.Fatalf("now %s outside today %s [%s, %s)", now.UTC(), today.Label, today.From, today.To)
		}
		if now.Before(cur.From) || !now.Before(cur.To) {
			t.Fatalf("now %s outside month %s", now.UTC(), cur.Label)
		}
		if prev.To != cur.From {
			t.Fatalf("previous month %s does not end where %s starts", prev.Label, cur.Label)
		}
		days := append([]reports.Window{today, yesterday}, ws[4:]...)
		for i := 1; i < len(days); i++ {
			if days[i].To != days[i-1].From {
				t.Fatalf("day %s does not end where %s starts", days[i].Label, days[i-1].Label)
			}
		}
		refreshed := reports.RefreshedAt(now)
		for _, w := range ws {
			checkWindow(t, w)
			if refreshed.Has(w.Kind, w.Label) == w.Backfill {
				t.Fatalf("%s: backfill %v but refreshed %v", w.Label, w.Backfill, !w.Backfill)
			}
		}
		if y := reports.MonthOf(yesterday.From); y.Window() != cur && y.Window() != prev {
			t.Fatalf("yesterday %s in neither %s nor %s", yesterday.Label, cur.Label, prev.Label)
		}
	})
}

// checkWindow: a window is not empty, starts at a Moscow midnight, is named by its start and is
// what its day or month gives as a window.
func checkWindow(t *testing.T, w reports.Window) {
	t.Helper()
	start := w.From.In(reports.Moscow)
	if !w.From.Before(w.To) {
		t.Fatalf("empty window %s", w.Label)
	}
	if start.Hour() != 0 || start.Minute() != 0 || start.Second() != 0 || start.Nanosecond() != 0 {
		t.Fatalf("%s starts at %s Moscow time, not midnight", w.Label, start)
	}
	layout, same := "2006-01-02", reports.DayOf(w.From).Window()
	if w.Kind == reports.KindMonth {
		layout, same = "2006-01", reports.MonthOf(w.From).Window()
	}
	if start.Format(layout) != w.Label {
		t.Fatalf("label %s does not name its start %s", w.Label, start)
	}
	same.Backfill = w.Backfill
	if same != w {
		t.Fatalf("%s: %+v, but its period gives %+v", w.Label, w, same)
	}
}
