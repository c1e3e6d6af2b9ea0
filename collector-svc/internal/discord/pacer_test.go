package discord

import (
	"math/rand/v2"
	"testing"
	"time"
)

// simulate sends count requests, always one waiting, through p: a request
// that has to sleep until the pacer's earliest time wakes up late by late(i)
// (timer lateness, a busy CPU, a stall); one that is due at once leaves
// 10 µs after the previous. It returns the departures.
func simulate(p *pacer, count int, late func(i int) time.Duration) []time.Time {
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]time.Time, 0, count)
	for i := range count {
		if e := p.earliest(); e.After(t) {
			t = e.Add(late(i))
		} else {
			t = t.Add(10 * time.Microsecond)
		}
		p.left(t)
		out = append(out, t)
	}
	return out
}

func TestPacerNoLateness(t *testing.T) {
	p := newPacer(50)
	sent := simulate(p, 200, func(int) time.Duration { return 0 })
	for i := 1; i < len(sent); i++ {
		if gap := sent[i].Sub(sent[i-1]); gap != 20*time.Millisecond {
			t.Fatalf("gap %d = %s, want 20ms", i, gap)
		}
	}
}

func TestPacerLatenessWithinTolerance(t *testing.T) {
	p := newPacer(200)
	r := rand.New(rand.NewPCG(1, 2))
	sent := simulate(p, 2000, func(int) time.Duration { return time.Duration(r.Int64N(int64(pacerTolerance))) })
	// The schedule does not drift with lateness: 2000 requests at 200/s take
	// 1999 intervals, plus what the sliding window passes on from one second to
	// the next (the lateness of a request delays the one n places later).
	ideal := 1999 * 5 * time.Millisecond
	if d := sent[len(sent)-1].Sub(sent[0]); d < ideal || d > ideal+11*pacerTolerance {
		t.Errorf("2000 requests took %s, want %s plus at most the lateness of each second", d, ideal)
	}
	checkSlidingWindow(t, p, sent)
}

func TestPacerStalls(t *testing.T) {
	for _, rate := range []float64{50, 200, 7.5} {
		p := newPacer(rate)
		r := rand.New(rand.NewPCG(3, 4))
		sent := simulate(p, 3000, func(i int) time.Duration {
			switch {
			case r.IntN(50) == 0:
				return time.Duration(r.Int64N(int64(2 * time.Second))) // a stall
			case r.IntN(5) == 0:
				return time.Duration(r.Int64N(int64(3 * pacerTolerance)))
			}
			return time.Duration(r.Int64N(int64(time.Millisecond)))
		})
		checkSlidingWindow(t, p, sent)
		// After a stall, at most tolerance/interval + 1 requests leave together.
		maxBurst := int(p.tolerance/p.interval) + 1
		for i := maxBurst; i < len(sent); i++ {
			if sent[i].Sub(sent[i-maxBurst]) < p.interval/2 {
				t.Fatalf("rate %v: %d requests within half an interval at %d", rate, maxBurst+1, i)
			}
		}
	}
}

// checkWindow asserts the sliding-window rule: at most n requests in any n/rate.
func checkSlidingWindow(t *testing.T, p *pacer, sent []time.Time) {
	t.Helper()
	n := len(p.sent)
	for i := n; i < len(sent); i++ {
		if d := sent[i].Sub(sent[i-n]); d < p.window {
			t.Fatalf("%d requests within %s (window %s) at %d", n+1, d, p.window, i)
		}
	}
}
