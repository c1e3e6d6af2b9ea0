package reports

import (
	"fmt"
	"time"
)

// Kind says whether a report covers a Moscow day or a Moscow month.
type Kind int

const (
	KindDay Kind = iota + 1
	KindMonth
)

// String is the kind as metrics and logs name it.
func (k Kind) String() string {
	switch k {
	case KindDay:
		return "daily"
	case KindMonth:
		return "monthly"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Window is one period a collection pass counts.
type Window struct {
	Kind  Kind
	Label string    // Day.String() or Month.String(): the period its report is stored under
	From  time.Time // UTC, included
	To    time.Time // UTC, excluded
	// Backfill marks the days before yesterday that a pass counts only for a server that lacks
	// them (its first collection); the collector does not keep refreshing them.
	Backfill bool
}

// Window is the day as a period to count.
func (d Day) Window() Window {
	return Window{Kind: KindDay, Label: d.String(), From: d.Start(), To: d.End()}
}

// Window is the month as a period to count.
func (m Month) Window() Window {
	return Window{Kind: KindMonth, Label: m.String(), From: m.Start(), To: m.End()}
}

// BackfillDays is how many days before yesterday a first collection also counts, so that a new
// server has a full week at once.
const BackfillDays = 6

// Refreshed is the rule of which periods the collector keeps refreshing at a moment: today,
// yesterday, this month and the previous month (Moscow). Every pass recounts them, so their
// reports turn stale by age when passes stop; a report of any other period is final as written.
type Refreshed struct {
	Days   [2]Day   // today, yesterday
	Months [2]Month // this month, the previous month
}

// RefreshedAt returns the periods the collector keeps refreshing at now.
func RefreshedAt(now time.Time) Refreshed {
	today, month := DayOf(now), MonthOf(now)
	return Refreshed{
		Days:   [2]Day{today, today.AddDays(-1)},
		Months: [2]Month{month, month.AddMonths(-1)},
	}
}

// Has reports whether the period label of kind is refreshed. It parses the label rather than
// printing the periods: readers ask it for every report they compose, and it allocates nothing.
func (r Refreshed) Has(kind Kind, label string) bool {
	switch kind {
	case KindDay:
		d, ok := ParseDay(label)
		return ok && (d == r.Days[0] || d == r.Days[1])
	case KindMonth:
		m, ok := ParseMonth(label)
		return ok && (m == r.Months[0] || m == r.Months[1])
	}
	return false
}

// ForPass returns the windows of a pass that starts at now, in the order they are counted: the
// refreshed periods (today, yesterday, this month, the previous month), then the BackfillDays days
// before yesterday, newest first, marked Backfill.
func ForPass(now time.Time) []Window {
	r := RefreshedAt(now)
	out := make([]Window, 0, 4+BackfillDays)
	out = append(out, r.Days[0].Window(), r.Days[1].Window(), r.Months[0].Window(), r.Months[1].Window())
	for i := 1; i <= BackfillDays; i++ {
		w := r.Days[1].AddDays(-i).Window()
		w.Backfill = true
		out = append(out, w)
	}
	return out
}

// StaleAfterRefreshes is how many refresh intervals a refreshed period's ok report stays fresh:
// past GeneratedAt + StaleAfterRefreshes × the refresh interval, readers show it as stale.
// A dead collector then does not look healthy: its last reports turn stale instead of ok.
const StaleAfterRefreshes = 3

// TurnsStale is the moment an ok report of a refreshed period, generated at generatedAt while the
// collector refreshes every refreshMinutes, starts to read as stale; it reads stale strictly after.
func TurnsStale(generatedAt time.Time, refreshMinutes int) time.Time {
	return generatedAt.Add(StaleAfterRefreshes * time.Duration(refreshMinutes) * time.Minute)
}
