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
	// Finished lists, by guild id, which of the closed periods (labels) the reporter of live
	// counts made final.
	Finished(ctx context.Context, periods []string) (map[string]map[string]bool, error)
}

// LiveOwns reports whether the report of w is written from live counts, not by a pass that starts
// at start, for a server of which live counting holds c (counting false: no record of it). Live
// counting owns the open windows (today and the current month: they end after start) of a server
// whose counting began and whose shard some replica flushed within fresh of start (LIVE_GAP_DELAY,
// the time after which the reporter of live counts also takes a shard as gone). Everything else is
// the pass's (LiveFinished leaves it the closed windows the reporter made final): closed windows
// and backfill days, servers never counted live, and servers whose shard nobody has flushed lately (no replica holds
// it, or live counting is stopped): those go back to the pass, so that no window stays unwritten.
// A flush stamped more than fresh after start (a replica's clock far ahead) does not count either.
func LiveOwns(w reports.Window, c live.Counted, counting bool, start time.Time, fresh time.Duration) bool {
	if !counting || w.Backfill || !w.To.After(start) || c.Flushed.IsZero() {
		return false
	}
	age := start.Sub(c.Flushed)
	return age < fresh && age > -fresh
}

// LiveFinished reports whether a pass that starts at start leaves the closed window w of a server
// to the reporter of live counts: the server is covered (live counting owns its open windows,
// LiveOwns) and the reporter recorded w's report final (its day check found the live total equal
// to the search's; a month, every day of it counted live). A closed window the reporter has not
// finished (the check failed or differed, counting began during it, a gap is unfilled, history
// before counting, backfill) is the pass's, by its usual rules; so is every window of a server
// whose shard nobody flushes lately (its deletions are not seen live: the pass's search sees them).
func LiveFinished(w reports.Window, covered, finished bool, start time.Time) bool {
	return covered && finished && !w.Backfill && !w.To.After(start)
}

// LiveAwaitsCheck reports whether a pass that starts at start leaves the closed window w of a
// covered server for now because the reporter's check of it is still due: w closed less than
// twice fresh (LIVE_GAP_DELAY) ago, and the reporter checks a day fresh after it closes (a month
// with its last day). The next pass, a pause later, finds it finished or counts it by its rules.
// Until then its report is the one the reporter wrote from live counts while it was open.
func LiveAwaitsCheck(w reports.Window, covered bool, start time.Time, fresh time.Duration) bool {
	return covered && !w.Backfill && !w.To.After(start) && start.Sub(w.To) < 2*fresh
}
