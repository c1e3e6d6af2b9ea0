// Package window computes the Moscow-calendar periods a collection pass counts: each as a
// half-open UTC interval [From, To) and the label its report is stored under.
package window

import (
	"fmt"
	"time"
	// Europe/Moscow must resolve on a machine or container without zoneinfo.
	_ "time/tzdata"
)

// Moscow is the time zone of every calendar boundary (stats-icons-api.md).
var Moscow = mustLoad("Europe/Moscow")

func mustLoad(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(fmt.Sprintf("load time zone %s: %v", name, err))
	}
	return loc
}

// Kind says whether a window is a Moscow day or a Moscow month.
type Kind int

const (
	Day Kind = iota + 1
	Month
)

// String is the kind as metrics and logs name it.
func (k Kind) String() string {
	switch k {
	case Day:
		return "daily"
	case Month:
		return "monthly"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Window is one period to count.
type Window struct {
	Kind  Kind
	Label string    // "YYYY-MM-DD" for a day, "YYYY-MM" for a month
	From  time.Time // UTC, included
	To    time.Time // UTC, excluded
	// Backfill marks the six days before yesterday, which a pass counts only for a server
	// that lacks them (its first collection).
	Backfill bool
}

// BackfillDays is how many days before yesterday a first collection also counts, so that a
// new server has a full week at once.
const BackfillDays = 6

// DayAt returns the Moscow day holding t.
func DayAt(t time.Time) Window {
	m := t.In(Moscow)
	return day(m.Year(), m.Month(), m.Day())
}

// MonthAt returns the Moscow month holding t.
func MonthAt(t time.Time) Window {
	m := t.In(Moscow)
	return month(m.Year(), m.Month())
}

func day(y int, mo time.Month, d int) Window {
	from := time.Date(y, mo, d, 0, 0, 0, 0, Moscow)
	to := time.Date(y, mo, d+1, 0, 0, 0, 0, Moscow)
	return Window{Kind: Day, Label: from.Format("2006-01-02"), From: from.UTC(), To: to.UTC()}
}

func month(y int, mo time.Month) Window {
	from := time.Date(y, mo, 1, 0, 0, 0, 0, Moscow)
	to := time.Date(y, mo+1, 1, 0, 0, 0, 0, Moscow)
	return Window{Kind: Month, Label: from.Format("2006-01"), From: from.UTC(), To: to.UTC()}
}

// ForPass returns the windows of a pass that starts at now, in the order they are counted:
// today, yesterday, the current month, the previous month, then the six days before
// yesterday (newest first) marked Backfill.
func ForPass(now time.Time) []Window {
	m := now.In(Moscow)
	y, mo, d := m.Date()
	out := []Window{day(y, mo, d), day(y, mo, d-1), month(y, mo), month(y, mo-1)}
	for i := 2; i < 2+BackfillDays; i++ {
		w := day(y, mo, d-i)
		w.Backfill = true
		out = append(out, w)
	}
	return out
}
