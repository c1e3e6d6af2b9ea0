package collect

import (
	"context"
	"time"

	"forumstats.local/collector-svc/internal/live"
	"forumstats.local/shared/reports"
)

// LiveCounts tells a pass which servers live counting covers (live.Store).
type LiveCounts interface {
	// Counted lists the servers counted live by guild id: where counting began and when the
	// server's shard was last flushed.
	Counted(ctx context.Context) (map[string]live.Counted, error)
}

// LiveOwns reports whether the report of w is written from live counts, not by a pass that starts
// at start, for a server of which live counting holds c (counting false: no record of it). Live
// counting owns the open windows (today and the current month: they end after start) of a server
// whose counting began and whose shard some replica flushed within fresh of start (LIVE_GAP_DELAY,
// the time after which the reporter of live counts also takes a shard as gone). Everything else is
// the pass's: closed windows and backfill days (the reporter checks a day only once, as it closes),
// servers never counted live, and servers whose shard nobody has flushed lately (no replica holds
// it, or live counting is stopped): those go back to the pass, so that no window stays unwritten.
// A flush stamped more than fresh after start (a replica's clock far ahead) does not count either.
func LiveOwns(w reports.Window, c live.Counted, counting bool, start time.Time, fresh time.Duration) bool {
	if !counting || w.Backfill || !w.To.After(start) || c.Flushed.IsZero() {
		return false
	}
	age := start.Sub(c.Flushed)
	return age < fresh && age > -fresh
}
