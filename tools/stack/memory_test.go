package stack

import (
	"os"
	"testing"
)

func TestReadMemory(t *testing.T) {
	if err := ResetPeak(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	before, err := ReadMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if before.RSS <= 0 || before.Peak < before.RSS {
		t.Fatalf("ReadMemory = %+v, want 0 < RSS <= Peak", before)
	}
	// Touch 64 MiB, then let it go: the peak must show it.
	b := make([]byte, 64<<20)
	for i := range b {
		if i%4096 == 0 {
			b[i] = 1
		}
	}
	after, err := ReadMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if grew := after.Peak - before.Peak; grew < 60<<20 {
		t.Fatalf("peak grew by %s after touching 64 MiB, want at least 60 MiB", MiB(grew))
	}
	_ = b[len(b)-1]
}
