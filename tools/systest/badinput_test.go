//go:build faults

package systest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"forumstats.local/tools/badinput"
	"forumstats.local/tools/stack"
)

// corpusSeed fixes the corpora; BADINPUT_SEED explores others.
func corpusSeed(t *testing.T) uint64 {
	if s := os.Getenv("BADINPUT_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("BADINPUT_SEED: %v", err)
		}
		return n
	}
	return 1
}

func TestBadInputStats(t *testing.T) {
	pg := postgres(t)
	rd := redis(t)
	svc := service(t, stack.Stats, statsEnv(t, pg, statsFixture(), "REDIS_URL="+rd.URL())...)
	runCorpus(t, svc, badinput.StatsCorpus(corpusSeed(t)))
}

func TestBadInputForum(t *testing.T) {
	pg := postgres(t)
	rd := redis(t)
	fx := stack.NewForumFixture(95, 20)
	svc := service(t, stack.Forum, forumEnv(t, pg, fx, "REDIS_URL="+rd.URL())...)
	runCorpus(t, svc, badinput.ForumCorpus(corpusSeed(t), conversationData(t, svc, fx)))
}

// TestBadInputForumSQLite runs the forum corpus on the embedded SQLite database, from which
// forum-svc serves the same API as from PostgreSQL.
func TestBadInputForumSQLite(t *testing.T) {
	fx := stack.NewForumFixture(95, 20)
	svc := service(t, stack.Forum, forumSQLiteEnv(t, fx)...)
	runCorpus(t, svc, badinput.ForumCorpus(corpusSeed(t), conversationData(t, svc, fx)))
}

func runCorpus(t *testing.T, svc *stack.Service, corp badinput.Corpus) {
	results := badinput.Run(context.Background(), svc.Addr, corp, 8)
	sum := badinput.Summarize(results)
	report(t, "%s: %s", corp.Service, sum)
	for i, f := range sum.Failures {
		if i == 40 {
			t.Errorf("… and %d more failures", len(sum.Failures)-40)
			break
		}
		req := string(f.Case.Render(svc.Addr))
		t.Errorf("%s: %v\n    request: %s", f.Case.Name, f.Verdict.Err, short(req, 300))
	}
	// The service must still be healthy after the corpus.
	if resp, err := http.Get(svc.URL + "/readyz"); err != nil {
		t.Errorf("after the corpus: %v", err)
	} else if resp.Body.Close(); resp.StatusCode != http.StatusOK {
		t.Errorf("after the corpus: /readyz answers %s", resp.Status)
	}
	select {
	case <-svc.Done():
		t.Errorf("%s exited during the corpus", corp.Service)
	default:
	}
	if out := svc.Output(); strings.Contains(out, "panic") {
		t.Errorf("%s logged a panic:\n%s", corp.Service, strings.Join(stack.Grep(out, "panic"), "\n"))
	}
}

func short(s string, n int) string {
	s = strings.ReplaceAll(s, "\r\n", `\r\n`)
	if len(s) > n {
		return fmt.Sprintf("%s… (%d bytes)", s[:n], len(s))
	}
	return s
}
