package livegw

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"

	"forumstats.local/collector-svc/internal/gateway"
)

type countedReplicas struct {
	n   int
	err error
}

func (c countedReplicas) Replicas(context.Context) (int, error) { return c.n, c.err }
func (countedReplicas) Leave()                                  {}

func TestShare(t *testing.T) {
	for _, tc := range []struct {
		name     string
		shards   int
		replicas Replicas
		want     int
	}{
		{"not counted (SQLite)", 4, nil, 4},
		{"alone", 4, countedReplicas{n: 1}, 4},
		{"two", 4, countedReplicas{n: 2}, 2},
		{"three: rounded up", 4, countedReplicas{n: 3}, 2},
		{"more replicas than shards", 4, countedReplicas{n: 5}, 1},
		{"one shard", 1, countedReplicas{n: 3}, 1},
		{"count failed: any free shard", 4, countedReplicas{err: errors.New("down")}, 4},
		{"count of none", 4, countedReplicas{n: 0}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &owner{cfg: Config{Replicas: tc.replicas}, bot: gateway.Bot{Shards: tc.shards}, log: slog.New(slog.DiscardHandler)}
			if got := o.share(context.Background()); got != tc.want {
				t.Fatalf("share %d, want %d", got, tc.want)
			}
		})
	}
}

// TestLetGoBeyond: the highest-numbered shards beyond the share are stopped, once each, and
// those already being let go count as gone.
func TestLetGoBeyond(t *testing.T) {
	o := &owner{bot: gateway.Bot{Shards: 6}, log: slog.New(slog.DiscardHandler),
		held: make([]context.CancelFunc, 6), releasing: make([]bool, 6)}
	var stopped []int
	for _, s := range []int{0, 2, 3, 5} {
		o.held[s] = func() { stopped = append(stopped, s) }
	}
	o.letGoBeyond(2)
	if want := []int{5, 3}; !slices.Equal(stopped, want) {
		t.Fatalf("stopped %v, want %v", stopped, want)
	}
	if o.kept() != 2 {
		t.Fatalf("kept %d", o.kept())
	}
	o.letGoBeyond(2) // the two are still being let go: nothing more
	o.letGoBeyond(4) // a larger share stops nothing
	if len(stopped) != 2 {
		t.Fatalf("stopped %v", stopped)
	}
	o.letGoBeyond(1)
	if want := []int{5, 3, 2}; !slices.Equal(stopped, want) {
		t.Fatalf("stopped %v, want %v", stopped, want)
	}
}
