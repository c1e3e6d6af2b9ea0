package bench

import (
	"errors"
	"slices"
	"testing"
)

func TestCleanupsReverseOrder(t *testing.T) {
	var c Cleanups
	var ran []int
	for i := range 3 {
		c.Add(func() { ran = append(ran, i) })
	}
	ok := error(nil)
	c.CloseOnError(&ok)
	if len(ran) != 0 {
		t.Fatalf("CloseOnError without an error ran %v", ran)
	}
	failed := errors.New("setup failed")
	c.CloseOnError(&failed)
	if !slices.Equal(ran, []int{2, 1, 0}) {
		t.Fatalf("ran %v, want the last added first: [2 1 0]", ran)
	}
	c.Close()
	if len(ran) != 3 {
		t.Fatalf("a second Close ran the cleanups again: %v", ran)
	}
}

func TestFlagsCheck(t *testing.T) {
	for _, db := range []string{"stats_bench", "_b2", "collector_bench_4242"} {
		if err := (Flags{DB: db}).Check(); err != nil {
			t.Errorf("Check(%q) = %v, want nil", db, err)
		}
	}
	// Names PostgreSQL would fold, need quoted, or refuse.
	for _, db := range []string{"Stats", "2bench", "bench-db", "bench; DROP", ""} {
		if err := (Flags{DB: db}).Check(); err == nil {
			t.Errorf("Check(%q) = nil, want a refusal", db)
		}
	}
}
