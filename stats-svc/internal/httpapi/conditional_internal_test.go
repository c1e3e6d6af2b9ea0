package httpapi

import (
	"testing"
	"time"
)

func TestMaxAgeSeconds(t *testing.T) {
	now := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		until time.Time
		want  int
	}{
		{time.Time{}, 60},
		{now.Add(time.Hour), 60},
		{now.Add(61 * time.Second), 60},
		{now.Add(59*time.Second + 999*time.Millisecond), 59}, // rounded down: never past the change
		{now.Add(time.Nanosecond), 0},
		{now, 0},
		{now.Add(-time.Second), 0},
	}
	for _, tt := range tests {
		if got := maxAgeSeconds(tt.until, now); got != tt.want {
			t.Errorf("maxAgeSeconds(%v) = %d, want %d", tt.until.Sub(now), got, tt.want)
		}
	}
}
