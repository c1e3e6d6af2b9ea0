package bench

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

type closeCounter struct{ closed int }

func (c *closeCounter) Close() { c.closed++ }

// Run closes what the setup made however the run ends: a failed measure, a SIGINT that cancels
// the context during the measure, a report with a missed target; a failed setup has nothing to
// close.
func TestRun(t *testing.T) {
	failed := errors.New("measure failed")
	for _, tc := range []struct {
		name     string
		setupErr error
		measure  func(context.Context) error
		missed   bool
		wantErr  string
		closes   int
		reported bool
	}{
		{name: "met", measure: func(context.Context) error { return nil }, closes: 1, reported: true},
		{name: "missed", measure: func(context.Context) error { return nil }, missed: true, wantErr: "missed: figure", closes: 1, reported: true},
		{name: "setup fails", setupErr: errors.New("no database"), wantErr: "no database"},
		{name: "measure fails", measure: func(context.Context) error { return failed }, wantErr: failed.Error(), closes: 1},
		{name: "interrupted", measure: func(ctx context.Context) error {
			if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Second):
				return errors.New("SIGINT did not cancel the context")
			}
		}, wantErr: context.Canceled.Error(), closes: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := &closeCounter{}
			reported := false
			err := Run(
				func(context.Context) (*closeCounter, error) {
					if tc.setupErr != nil {
						return nil, tc.setupErr
					}
					return env, nil
				},
				func(ctx context.Context, _ *closeCounter) (int, error) { return 0, tc.measure(ctx) },
				func(*closeCounter, int) *Report {
					reported = true
					r := &Report{Title: tc.name}
					r.Add("figure", "1", "≤ 0", !tc.missed)
					return r
				})
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Run = %v, want %q", err, tc.wantErr)
			}
			if env.closed != tc.closes {
				t.Fatalf("closed %d times, want %d", env.closed, tc.closes)
			}
			if reported != tc.reported {
				t.Fatalf("reported %v, want %v", reported, tc.reported)
			}
		})
	}
}
