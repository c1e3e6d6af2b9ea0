//go:build faults

package systest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"forumstats.local/shared/reports"
	"forumstats.local/tools/stack"
)

// collectorRig is a reports database, the Discord fake (with a token) behind a FaultProxy, and
// the environment of collector-svc pointing at them.
type collectorRig struct {
	t      *testing.T
	pg     *stack.Postgres
	dbURL  string
	proxy  *stack.FaultProxy
	env    []string
	token  string
	guilds []string
}

func newCollectorRig(t *testing.T, pg *stack.Postgres, guilds int) *collectorRig {
	t.Helper()
	ctx := context.Background()
	dir := tempDir(t)
	url, err := pg.CreateDatabase(ctx, dbName("reports"))
	if err != nil {
		t.Fatal(err)
	}
	addr, err := stack.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	token := "reliab-discord-token-" + dbName("t")
	catalog := filepath.Join(dir, "catalog.json")
	fake, err := stack.StartProc("fake-discord", bin(t, stack.Collector), []string{"LOG_FORMAT=json"},
		"fake-discord", "--addr", addr, "--guilds", fmt.Sprint(guilds), "--catalog", catalog, "--token", token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Stop(5 * time.Second) })
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fake-discord did not listen on %s:\n%s", addr, fake.Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	proxy, err := stack.NewFaultProxy("http://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	data, err := os.ReadFile(catalog)
	if err != nil {
		t.Fatalf("fake-discord --catalog: %v", err)
	}
	var entries []struct {
		GuildID string `json:"guildId"`
	}
	if err := json.Unmarshal(data, &entries); err != nil || len(entries) != guilds {
		t.Fatalf("catalog %s: %v %s", catalog, err, data)
	}
	r := &collectorRig{t: t, pg: pg, dbURL: url, proxy: proxy, token: token}
	for _, e := range entries {
		r.guilds = append(r.guilds, e.GuildID)
	}
	r.env = []string{"DATABASE_URL=" + url, "DISCORD_API_BASE=" + proxy.URL() + "/api/v10", "CATALOG_FILE=" + catalog,
		"DISCORD_TOKEN=" + token, "LOG_LEVEL=debug", "LOG_FORMAT=json",
		// The fault tests are of the REST search: no live counting beside it.
		"DISCORD_GATEWAY=off"}
	return r
}

// runOnce starts `collector-svc run-once`.
func (r *collectorRig) runOnce() *stack.Proc {
	r.t.Helper()
	p, err := stack.StartProc("collector run-once", bin(r.t, stack.Collector), r.env, "run-once")
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { p.Kill() })
	return p
}

// pass runs one pass to its end within limit and returns its exit error and duration.
func (r *collectorRig) pass(limit time.Duration) (error, time.Duration, string) {
	r.t.Helper()
	start := time.Now()
	p := r.runOnce()
	err, ok := p.Wait(limit)
	if !ok {
		p.Kill()
		r.t.Fatalf("run-once still running after %v (it hangs):\n%s", limit, tailLines(p.Output(), 30))
	}
	return err, time.Since(start), p.Output()
}

// report is one stored report and its channel rows.
type storedReport struct {
	Kind, Guild, Period, Status string
	Total                       int64
	ErrorCode                   *string
	Channels                    string // "id:messages,…" sorted
}

func (r *collectorRig) reports() map[string]storedReport {
	r.t.Helper()
	out, err := r.readReports()
	if err != nil {
		r.t.Fatal(err)
	}
	return out
}

// readReports reads every stored report with its channel rows.
func (r *collectorRig) readReports() (map[string]storedReport, error) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, r.dbURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	out := map[string]storedReport{}
	for _, k := range []struct{ kind, table, col, chTable string }{
		{"daily", "daily_reports", "day", "daily_channel_counts"},
		{"monthly", "monthly_reports", "month", "monthly_channel_counts"},
	} {
		q := fmt.Sprintf(`SELECT r.guild_id, r.%[1]s, r.status, r.total_messages, r.error_code,
			COALESCE((SELECT string_agg(c.channel_id || ':' || c.messages, ',' ORDER BY c.channel_id)
			          FROM %[3]s c WHERE c.guild_id = r.guild_id AND c.%[1]s = r.%[1]s), '')
			FROM %[2]s r`, k.col, k.table, k.chTable)
		rows, err := conn.Query(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", k.table, err)
		}
		for rows.Next() {
			s := storedReport{Kind: k.kind}
			if err := rows.Scan(&s.Guild, &s.Period, &s.Status, &s.Total, &s.ErrorCode, &s.Channels); err != nil {
				rows.Close()
				return nil, err
			}
			out[k.kind+" "+s.Guild+" "+s.Period] = s
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func keysOf(m map[string]storedReport) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// finished tells whether a report's period is over (its counts can no longer change).
func finished(s storedReport, now time.Time) bool {
	today := now.In(reports.Moscow)
	if s.Kind == "daily" {
		return s.Period < today.Format("2006-01-02")
	}
	return s.Period < today.Format("2006-01")
}

// TestFaultCollectorKilledMidPass kills run-once (SIGKILL) once it has written some reports but
// not all: every report visible then must be whole (equal to what a complete pass writes), and
// the next pass must take the lock and complete.
func TestFaultCollectorKilledMidPass(t *testing.T) {
	pg := postgres(t)
	r := newCollectorRig(t, pg, 4)
	r.proxy.Set(stack.Faults{Latency: 40 * time.Millisecond}) // a pass of a few seconds: room to land the kill
	p := r.runOnce()
	start := time.Now()
	var afterKill map[string]storedReport
	for {
		select {
		case <-p.Done():
			t.Fatalf("the pass ended (%v) before any report was seen: nothing to kill mid-pass:\n%s", p.ExitCode(), tailLines(p.Output(), 20))
		default:
		}
		if time.Since(start) > 2*time.Minute {
			t.Fatal("no report written in 2 minutes")
		}
		// Before the collector's migrations the tables do not exist: that reads as no report.
		// A quarter of the 40 reports of a first pass over 4 guilds: past days among them.
		if got, err := r.readReports(); err == nil && len(got) >= 10 {
			_ = p.Signal(syscall.SIGKILL)
			<-p.Done()
			afterKill = r.reports() // what a reader sees once the writer is gone
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	killedAt := time.Since(start)
	r.proxy.Set(stack.Faults{})
	err, took, out := r.pass(3 * time.Minute)
	if err != nil {
		t.Fatalf("the pass after the kill failed: %v\n%s", err, tailLines(out, 30))
	}
	final := r.reports()
	now := time.Now()
	whole, live := 0, 0
	for _, k := range keysOf(afterKill) {
		a, f := afterKill[k], final[k]
		if a.Channels == "" {
			t.Errorf("%s: visible after the kill with no channel rows", k)
		}
		if finished(a, now) {
			// A finished period's counts are fixed: anything else than the complete pass's
			// report is a partial one.
			if a.Total != f.Total || a.Channels != f.Channels {
				t.Errorf("%s after the kill: total %d channels %s; after a complete pass: total %d channels %s", k, a.Total, a.Channels, f.Total, f.Channels)
			}
			whole++
		} else {
			// Today and this month grow; the channel set must still be the complete one.
			if ids(a.Channels) != ids(f.Channels) {
				t.Errorf("%s after the kill has channels %s, a complete pass %s", k, ids(a.Channels), ids(f.Channels))
			}
			live++
		}
	}
	today := now.In(reports.Moscow)
	yesterday := today.AddDate(0, 0, -1)
	var missing []string
	for _, g := range r.guilds {
		for _, k := range []string{"daily " + g + " " + today.Format("2006-01-02"), "daily " + g + " " + yesterday.Format("2006-01-02"),
			"monthly " + g + " " + today.Format("2006-01"), "monthly " + g + " " + time.Date(today.Year(), today.Month()-1, 1, 0, 0, 0, 0, reports.Moscow).Format("2006-01")} {
			if s, ok := final[k]; !ok || s.Status != "ok" {
				missing = append(missing, fmt.Sprintf("%s (%+v)", k, s))
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("after the next pass, not ok: %s", strings.Join(missing, "; "))
	}
	report(t, "killed %.2fs into the pass with %d of %d reports visible (%d of finished periods, all equal to the complete pass's; %d current, complete channel sets); next pass exit 0 in %.1fs, %d reports",
		killedAt.Seconds(), len(afterKill), len(final), whole, live, took.Seconds(), len(final))
}

func ids(channels string) string {
	var out []string
	for _, c := range strings.Split(channels, ",") {
		id, _, _ := strings.Cut(c, ":")
		out = append(out, id)
	}
	return strings.Join(out, ",")
}

// TestFaultDiscordSlow runs a pass against a Discord that takes 300 ms to answer every request:
// the pass must finish, correctly (every report ok), in bounded time. It also checks that the
// bot token, which the fake requires, never appears in the collector's debug logs.
func TestFaultDiscordSlow(t *testing.T) {
	r := newCollectorRig(t, postgres(t), 3)
	r.proxy.Set(stack.Faults{Latency: 300 * time.Millisecond})
	err, took, out := r.pass(4 * time.Minute)
	n, _, _ := r.proxy.Counts()
	if err != nil {
		t.Fatalf("pass against a slow Discord: %v\n%s", err, tailLines(out, 30))
	}
	notOK := 0
	for _, s := range r.reports() {
		if s.Status != "ok" {
			notOK++
		}
	}
	if notOK > 0 {
		t.Errorf("%d reports not ok after a successful pass", notOK)
	}
	if ls := stack.Grep(out, r.token); len(ls) > 0 {
		t.Errorf("the Discord token is in the collector's output:\n%s", strings.Join(ls, "\n"))
	}
	report(t, "300 ms per Discord answer: pass exit 0 in %.1fs, %d Discord requests; token in %d log lines (LOG_LEVEL=debug, %d lines)",
		took.Seconds(), n, len(stack.Grep(out, r.token)), strings.Count(out, "\n"))
}

// TestFaultDiscordHang makes one Discord request never answer: the client's per-request
// timeout and retry must carry the pass through to a complete end.
func TestFaultDiscordHang(t *testing.T) {
	r := newCollectorRig(t, postgres(t), 2)
	r.proxy.Set(stack.Faults{HangNth: 5})
	err, took, out := r.pass(3 * time.Minute)
	n, _, hung := r.proxy.Counts()
	if hung != 1 {
		t.Errorf("%d requests hung, want 1", hung)
	}
	if err != nil {
		t.Fatalf("pass with one hung request: %v\n%s", err, tailLines(out, 30))
	}
	report(t, "one Discord request never answered: pass exit 0 in %.1fs (%d requests)", took.Seconds(), n)
}

// TestFaultDiscord5xxBursts collects once, then answers 3 requests out of every 10 with 503.
// The client retries 5xx with backoff, so the pass must end in bounded time, and every report
// must then be either refreshed (ok) or, when a call ran out of retries, kept with its earlier
// counts and marked stale with an error: never half-written, never hanging.
func TestFaultDiscord5xxBursts(t *testing.T) {
	r := newCollectorRig(t, postgres(t), 3)
	if err, _, out := r.pass(3 * time.Minute); err != nil {
		t.Fatalf("first pass: %v\n%s", err, tailLines(out, 30))
	}
	before := r.reports()
	n0, _, _ := r.proxy.Counts()
	r.proxy.Set(stack.Faults{BurstEvery: 10, BurstLen: 3, BurstStatus: http.StatusServiceUnavailable})
	err, took, out := r.pass(4 * time.Minute)
	n, injected, _ := r.proxy.Counts()
	after := r.reports()
	ok, stale := 0, 0
	for _, k := range keysOf(after) {
		a, b := after[k], before[k]
		switch a.Status {
		case "ok":
			ok++
		case "stale":
			stale++
			if a.ErrorCode == nil || a.Total != b.Total || a.Channels != b.Channels {
				t.Errorf("%s: stale without an error or with changed counts: %+v (before %+v)", k, a, b)
			}
		default:
			t.Errorf("%s: status %q", k, a.Status)
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d reports after the pass, %d before", len(after), len(before))
	}
	switch {
	case err == nil && stale > 0:
		t.Errorf("run-once exited 0 but left %d reports stale", stale)
	case err != nil && stale == 0:
		t.Errorf("run-once failed (%v) but marked nothing stale:\n%s", err, tailLines(out, 20))
	}
	outcome := "exit 0, every report refreshed"
	if err != nil {
		outcome = fmt.Sprintf("exit non-zero (%v): %d reports ran out of retries and were marked stale", err, stale)
	}
	report(t, "bursts of 3×503 in every 10 requests: pass ended in %.1fs, %s; %d ok; %d requests, %d answered 503",
		took.Seconds(), outcome, ok, n-n0, injected)
}

// TestFaultDiscordDown collects once, then makes Discord answer 503 to everything: the next
// pass must end (non-zero) in bounded time, mark the refreshed reports stale with an error, and
// stats-svc must show them stale.
func TestFaultDiscordDown(t *testing.T) {
	pg := postgres(t)
	r := newCollectorRig(t, pg, 2)
	if err, _, out := r.pass(3 * time.Minute); err != nil {
		t.Fatalf("first pass: %v\n%s", err, tailLines(out, 30))
	}
	before := r.reports()
	r.proxy.Set(stack.Faults{Down: true})
	err, took, out := r.pass(4 * time.Minute)
	n, injected, _ := r.proxy.Counts()
	if err == nil {
		t.Fatalf("run-once exited 0 with Discord down:\n%s", tailLines(out, 20))
	}
	after := r.reports()
	stale, kept := 0, 0
	for _, k := range keysOf(after) {
		a, b := after[k], before[k]
		switch {
		case a.Status == "stale":
			stale++
			if a.ErrorCode == nil || *a.ErrorCode == "" {
				t.Errorf("%s: stale without an error code", k)
			}
			if a.Total != b.Total || a.Channels != b.Channels {
				t.Errorf("%s: marked stale but its counts changed", k)
			}
		case sameReport(a, b):
			kept++
		default:
			t.Errorf("%s changed with Discord down: %+v -> %+v", k, b, a)
		}
	}
	if stale == 0 {
		t.Error("no report marked stale")
	}
	// What clients see.
	stats := service(t, stack.Stats, "DATABASE_URL="+r.dbURL)
	_, _, body := doReq(t, "GET", stats.URL+"/api/chat-statistics?period=day", nil, "")
	var ans struct {
		Servers []struct {
			Status string          `json:"status"`
			Error  json.RawMessage `json:"error"`
		} `json:"servers"`
		Complete bool `json:"complete"`
	}
	if err := json.Unmarshal([]byte(body), &ans); err != nil {
		t.Fatalf("stats-svc: %v: %s", err, body)
	}
	for _, s := range ans.Servers {
		if s.Status != "stale" || len(s.Error) == 0 || string(s.Error) == "null" {
			t.Errorf("stats-svc shows a server %s with error %s, want stale with an error", s.Status, s.Error)
		}
	}
	if ans.Complete {
		t.Error("stats-svc says complete with Discord down")
	}
	firstLine := ""
	if ls := stack.Grep(out, "collector-svc:"); len(ls) > 0 {
		firstLine = strings.TrimSpace(ls[0])
	}
	report(t, "Discord answering 503 to all: run-once exit %v after %.1fs (%d requests, %d injected); %d reports marked stale with an error, %d older ones kept; stats-svc: today's reports stale, complete=false; stderr: %s",
		err, took.Seconds(), n, injected, stale, kept, short(firstLine, 200))
}

func sameReport(a, b storedReport) bool {
	deref := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	return a.Kind == b.Kind && a.Guild == b.Guild && a.Period == b.Period && a.Status == b.Status &&
		a.Total == b.Total && a.Channels == b.Channels && deref(a.ErrorCode) == deref(b.ErrorCode)
}
