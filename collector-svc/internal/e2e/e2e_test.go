// Package e2e runs the built binaries together: fake-discord, collector-svc and stats-svc on a
// real PostgreSQL database, and checks what the public API answers against the fake's exact
// counts.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/collector-svc/internal/fakediscord"
	"forumstats.local/shared/reports"
	"forumstats.local/shared/testutil"
)

var collectorBin, statsBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "collector-e2e-")
	if err != nil {
		panic(err)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		if err := build(dir); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		return m.Run()
	}()
	testutil.CleanupContainers()
	os.Exit(code)
}

// build compiles both services. stats-svc is another module of the workspace, so the
// workspace (go.work) must be in use.
func build(dir string) error {
	out, err := exec.Command("go", "env", "GOWORK").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" || strings.TrimSpace(string(out)) == "off" {
		return fmt.Errorf("the e2e tests build stats-svc from the Go workspace; run them with go.work in use (GOWORK=%q)", strings.TrimSpace(string(out)))
	}
	collectorBin, statsBin = filepath.Join(dir, "collector-svc"), filepath.Join(dir, "stats-svc")
	for bin, pkg := range map[string]string{
		collectorBin: "forumstats.local/collector-svc/cmd/collector-svc",
		statsBin:     "forumstats.local/stats-svc/cmd/stats-svc",
	} {
		cmd := exec.Command("go", "build", "-o", bin, pkg)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	return nil
}

type proc struct {
	name string
	cmd  *exec.Cmd
	out  *testutil.Buffer
	done chan struct{}
}

// env is a clean environment: nothing of the developer's DATABASE_URL and the like leaks in.
func env(vars ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LOG_FORMAT=text", "LOG_LEVEL=info"}, vars...)
}

// start runs bin in the background; the test's end stops it and shows its output on failure.
func start(t *testing.T, name, bin string, vars []string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(bin, args...), out: &testutil.Buffer{}, done: make(chan struct{})}
	p.cmd.Env = vars
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("--- output of %s:\n%s", name, p.out.String())
		}
	})
	return p
}

func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// runCmd runs bin to completion.
func runCmd(t *testing.T, bin string, vars []string, args ...string) (stdout, stderr string, exit int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = vars
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return o.String(), e.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return o.String(), e.String(), 0
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitHTTP(t *testing.T, u string, p *proc) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return
			}
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited:\n%s", p.name, p.out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("%s did not answer %s:\n%s", p.name, u, p.out.String())
}

// The statistics answer, as much of it as the tests read.
type channel struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Messages int64  `json:"messages"`
}

type serverReport struct {
	Number        int       `json:"number"`
	GuildID       string    `json:"guildId"`
	IconURL       *string   `json:"iconUrl"`
	BannerURL     *string   `json:"bannerUrl"`
	TotalMessages *int64    `json:"totalMessages"`
	Channels      []channel `json:"channels"`
	GeneratedAt   *string   `json:"generatedAt"`
	Status        string    `json:"status"`
	Error         *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type answer struct {
	RefreshMinutes int            `json:"refreshMinutes"`
	Server         *serverReport  `json:"server"`
	Servers        []serverReport `json:"servers"`
	TotalServers   int            `json:"totalServers"`
	ReadyServers   int            `json:"readyServers"`
	TotalMessages  int64          `json:"totalMessages"`
	Complete       bool           `json:"complete"`
}

func getBody(t *testing.T, u string) []byte {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d: %s", u, resp.StatusCode, body)
	}
	return body
}

func getAnswer(t *testing.T, base, query string) answer {
	t.Helper()
	var a answer
	if err := json.Unmarshal(getBody(t, base+"/api/chat-statistics?"+query), &a); err != nil {
		t.Fatal(err)
	}
	return a
}

// truth is what the fake holds: the same dataset as the fake-discord process, computed here.
type truth struct {
	fake     *fakediscord.Server
	client   *discord.Client // to the fake-discord process, for channel lists and metadata
	channels map[string][]discord.Channel
	guilds   map[string]discord.Guild
}

func newTruth(t *testing.T, fakeURL string, frozen time.Time) *truth {
	t.Helper()
	tr := &truth{
		fake:     fakediscord.New(fakediscord.Options{Seed: 1, Guilds: 3, Clock: func() time.Time { return frozen }}),
		client:   discord.New(discord.Config{BaseURL: fakeURL}),
		channels: map[string][]discord.Channel{},
		guilds:   map[string]discord.Guild{},
	}
	for _, e := range tr.fake.Catalog() {
		g, err := tr.client.Guild(context.Background(), e.GuildID)
		if err != nil {
			t.Fatal(err)
		}
		chans, err := tr.client.Channels(context.Background(), e.GuildID)
		if err != nil {
			t.Fatal(err)
		}
		tr.guilds[e.GuildID] = g
		for _, c := range chans {
			if discord.MessageBearing(c.Type) {
				tr.channels[e.GuildID] = append(tr.channels[e.GuildID], c)
			}
		}
	}
	return tr
}

// check compares one server report with the fake's exact counts for [from, to).
func (tr *truth) check(t *testing.T, what string, r serverReport, from, to time.Time) {
	t.Helper()
	if r.Status != "ok" || r.Error != nil || r.TotalMessages == nil {
		t.Fatalf("%s: status %s error %v total %v", what, r.Status, r.Error, r.TotalMessages)
	}
	if want := tr.fake.Count(r.GuildID, "", from, to); *r.TotalMessages != want {
		t.Errorf("%s: totalMessages %d, want %d", what, *r.TotalMessages, want)
	}
	want := map[string]int64{}
	for _, c := range tr.channels[r.GuildID] {
		id, _ := strconv.ParseUint(c.ID, 10, 64)
		if discord.SnowflakeTime(id).Before(to) {
			want[c.ID] = tr.fake.Count(r.GuildID, c.ID, from, to)
		}
	}
	if len(r.Channels) != len(want) {
		t.Errorf("%s: %d channels, want %d", what, len(r.Channels), len(want))
	}
	for _, c := range r.Channels {
		if n, ok := want[c.ID]; !ok || n != c.Messages {
			t.Errorf("%s: channel %s (%s) = %d, want %d (known %v)", what, c.ID, c.Name, c.Messages, n, ok)
		}
	}
}

// TestRunOnceThenStats: fake-discord → run-once → stats-svc answers equal the fake's exact
// counts; export → import into an empty database reproduces every answer; a pass refused by
// Discord (401) exits non-zero and leaves the earlier counts, stale with the error.
func TestRunOnceThenStats(t *testing.T) {
	dbURL := testutil.NewDatabase(t)
	dir := t.TempDir()
	catalogFile := filepath.Join(dir, "catalog.json")
	// Messages after this instant do not exist, so that today's counts are exact too.
	frozen := time.Now().UTC().Truncate(time.Millisecond)
	fakeAddr := freeAddr(t)
	fake := start(t, "fake-discord", collectorBin, env(), "fake-discord", "--addr", fakeAddr,
		"--catalog", catalogFile, "--frozen-at", frozen.Format(time.RFC3339Nano))
	waitHTTP(t, "http://"+fakeAddr+"/guilds/0", fake)

	// Search only: the stored reports are the REST pass's.
	collectorEnv := env("DATABASE_URL="+dbURL, "DISCORD_API_BASE=http://"+fakeAddr+"/api/v10", "CATALOG_FILE="+catalogFile, "REFRESH_MINUTES=7",
		"DISCORD_GATEWAY=off")
	began := time.Now()
	out, errOut, code := runCmd(t, collectorBin, collectorEnv, "run-once")
	if code != 0 {
		t.Fatalf("run-once exited %d:\n%s\n%s", code, out, errOut)
	}
	t.Logf("run-once (first collection, 3 servers) took %s: %s", time.Since(began).Round(time.Millisecond), strings.TrimSpace(out))

	gdb := testutil.OpenDB(t, dbURL)
	var st reports.CollectorState
	if err := gdb.First(&st).Error; err != nil {
		t.Fatal(err)
	}
	if st.PassStartedAt == nil || st.LastGoodPassAt == nil || st.RefreshMinutes != 7 || st.LastError != nil {
		t.Fatalf("collector state %+v", st)
	}
	windows := reports.ForPass(*st.PassStartedAt)

	statsAddr := freeAddr(t)
	stats := start(t, "stats-svc", statsBin, env("DATABASE_URL="+dbURL, "HTTP_ADDR="+statsAddr))
	base := "http://" + statsAddr
	waitHTTP(t, base+"/readyz", stats)

	tr := newTruth(t, "http://"+fakeAddr, frozen)
	cat := tr.fake.Catalog()
	for _, e := range cat {
		for _, w := range windows {
			q := "period=day&date=" + w.Label
			if w.Kind == reports.KindMonth {
				q = "period=month&month=" + w.Label
			}
			// Alternate the two ways of naming a server.
			server := e.GuildID
			if w.Kind == reports.KindDay {
				server = fmt.Sprintf("%02d", e.Number)
			}
			a := getAnswer(t, base, q+"&server="+server)
			if a.Server == nil || a.Server.GuildID != e.GuildID || a.RefreshMinutes != 7 {
				t.Fatalf("%s %s: answer %+v", e.GuildID, q, a)
			}
			tr.check(t, e.GuildID+" "+w.Label, *a.Server, w.From, w.To)
		}
		// A week ending today: today, yesterday and five of the first collection's days.
		today := windows[0]
		a := getAnswer(t, base, "period=week&date="+today.Label+"&server="+e.GuildID)
		tr.check(t, e.GuildID+" week", *a.Server, today.To.Add(-7*24*time.Hour), today.To)
	}

	// All servers: complete, and the total sums the servers.
	yesterday := windows[1]
	all := getAnswer(t, base, "period=day&date="+yesterday.Label)
	var sum int64
	for _, e := range cat {
		sum += tr.fake.Count(e.GuildID, "", yesterday.From, yesterday.To)
	}
	if !all.Complete || all.TotalServers != 3 || all.ReadyServers != 3 || all.TotalMessages != sum {
		t.Fatalf("all servers: %+v, want total %d", all, sum)
	}

	// Icons come from the guild metadata the pass stored.
	var icons struct {
		Servers []struct {
			GuildID   string  `json:"guildId"`
			IconURL   *string `json:"iconUrl"`
			BannerURL *string `json:"bannerUrl"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(getBody(t, base+"/api/chat-icons"), &icons); err != nil {
		t.Fatal(err)
	}
	for _, s := range icons.Servers {
		g := tr.guilds[s.GuildID]
		if (g.Icon == nil) != (s.IconURL == nil) || (g.Icon != nil && !strings.Contains(*s.IconURL, *g.Icon)) {
			t.Errorf("%s: iconUrl %v for icon %v", s.GuildID, s.IconURL, g.Icon)
		}
		if (g.Banner == nil) != (s.BannerURL == nil) || (g.Banner != nil && !strings.Contains(*s.BannerURL, *g.Banner)) {
			t.Errorf("%s: bannerUrl %v for banner %v", s.GuildID, s.BannerURL, g.Banner)
		}
	}

	queries := []string{"", "period=week", "period=day&date=" + yesterday.Label, "period=month&month=" + windows[3].Label,
		"period=range&from=" + windows[9].Label + "&to=" + windows[0].Label, "period=week&server=2", "period=day&server=1&date=2020-01-01"}
	t.Run("export then import reproduces every answer", func(t *testing.T) {
		exportFile := filepath.Join(dir, "export.json")
		if out, errOut, code := runCmd(t, collectorBin, env("DATABASE_URL="+dbURL), "export", "--file", exportFile); code != 0 {
			t.Fatalf("export exited %d: %s %s", code, out, errOut)
		}
		otherURL := testutil.NewDatabase(t)
		if out, errOut, code := runCmd(t, collectorBin, env("DATABASE_URL="+otherURL), "import", "--file", exportFile); code != 0 {
			t.Fatalf("import exited %d: %s %s", code, out, errOut)
		}
		otherAddr := freeAddr(t)
		other := start(t, "stats-svc on the imported copy", statsBin, env("DATABASE_URL="+otherURL, "HTTP_ADDR="+otherAddr))
		waitHTTP(t, "http://"+otherAddr+"/readyz", other)
		for _, q := range append(queries, "icons") {
			path := "/api/chat-statistics?" + q
			if q == "icons" {
				path = "/api/chat-icons"
			}
			a, b := getBody(t, base+path), getBody(t, "http://"+otherAddr+path)
			if !bytes.Equal(a, b) {
				t.Errorf("%s differs after export and import:\n%s\n%s", path, a, b)
			}
		}
	})

	t.Run("a refused refresh keeps the earlier counts, stale with the error", func(t *testing.T) {
		before := getAnswer(t, base, "period=day&date="+yesterday.Label+"&server=1")
		// The same dataset behind a token the collector does not have: every request gets 401.
		lockedAddr := freeAddr(t)
		locked := start(t, "fake-discord with a token", collectorBin, env(), "fake-discord", "--addr", lockedAddr,
			"--frozen-at", frozen.Format(time.RFC3339Nano), "--token", "secret")
		waitHTTP(t, "http://"+lockedAddr+"/guilds/0", locked)
		lockedEnv := env("DATABASE_URL="+dbURL, "DISCORD_API_BASE=http://"+lockedAddr, "CATALOG_FILE="+catalogFile, "DISCORD_GATEWAY=off",
			"REFRESH_MINUTES=7", "DISCORD_TOKEN=wrong")
		out, errOut, code := runCmd(t, collectorBin, lockedEnv, "run-once")
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code == 0 || !strings.Contains(lines[len(lines)-1], "401") || !strings.HasPrefix(lines[len(lines)-1], "collector-svc: ") {
			t.Fatalf("run-once against a refusing Discord exited %d, last line %q\n%s", code, lines[len(lines)-1], out)
		}
		// stats-svc notices the new generation within its poll interval.
		var after answer
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			after = getAnswer(t, base, "period=day&date="+yesterday.Label+"&server=1")
			if after.Server.Status == "stale" {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		s := after.Server
		if s.Status != "stale" || s.Error == nil || s.Error.Code != "unauthorized" || s.Error.Message == "" {
			t.Fatalf("after a 401: status %s error %+v", s.Status, s.Error)
		}
		if *s.TotalMessages != *before.Server.TotalMessages || *s.GeneratedAt != *before.Server.GeneratedAt ||
			fmt.Sprint(s.Channels) != fmt.Sprint(before.Server.Channels) {
			t.Fatalf("the earlier counts were not kept:\n%+v\n%+v", *s, *before.Server)
		}
		all := getAnswer(t, base, "period=day&date="+yesterday.Label)
		if all.Complete || all.ReadyServers != 0 || all.TotalMessages != 0 {
			t.Fatalf("all servers after a refused refresh: %+v", all)
		}
		// A backfill day was not to be refreshed by that pass: still ok.
		if a := getAnswer(t, base, "period=day&date="+windows[9].Label+"&server=1"); a.Server.Status != "ok" {
			t.Fatalf("backfill day: %+v", a.Server)
		}
	})
}

var metricLine = regexp.MustCompile(`(?m)^(collector_lock_held|collector_passes_total\{result="ok"\}|collector_live_shards_held) (\S+)$`)

// metrics reads the lock and pass metrics of a serving collector (nil when it does not answer).
func metrics(addr string) map[string]float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	out := map[string]float64{}
	for _, m := range metricLine.FindAllStringSubmatch(string(body), -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		out[strings.TrimSuffix(m[1], `{result="ok"}`)] = v
	}
	return out
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStandbyTakesOver: two serving collectors on one database: one holds the lock and writes,
// the other waits; when the writer is killed, the standby takes over within one interval.
func TestStandbyTakesOver(t *testing.T) {
	const interval = 2 * time.Second
	dbURL := testutil.NewDatabase(t)
	dir := t.TempDir()
	catalogFile := filepath.Join(dir, "catalog.json")
	fakeAddr := freeAddr(t)
	fake := start(t, "fake-discord", collectorBin, env(), "fake-discord", "--addr", fakeAddr, "--catalog", catalogFile, "--guilds", "2")
	waitHTTP(t, "http://"+fakeAddr+"/guilds/0", fake)
	serveEnv := func(addr string) []string {
		return env("DATABASE_URL="+dbURL, "DISCORD_API_BASE=http://"+fakeAddr, "CATALOG_FILE="+catalogFile, "DISCORD_GATEWAY=off",
			"REFRESH_MINUTES=1", "REFRESH_INTERVAL="+interval.String(), "HTTP_ADDR="+addr)
	}
	addrA, addrB := freeAddr(t), freeAddr(t)
	a := start(t, "collector A", collectorBin, serveEnv(addrA))
	waitHTTP(t, "http://"+addrA+"/readyz", a)
	waitFor(t, "A's first pass", 30*time.Second, func() bool { return metrics(addrA)["collector_passes_total"] >= 1 })
	b := start(t, "collector B", collectorBin, serveEnv(addrB))
	waitHTTP(t, "http://"+addrB+"/readyz", b)

	// While A lives, A keeps collecting and B only waits.
	passesA := metrics(addrA)["collector_passes_total"]
	waitFor(t, "A's next pass", 3*interval+10*time.Second, func() bool { return metrics(addrA)["collector_passes_total"] > passesA })
	mb := metrics(addrB)
	if mb["collector_lock_held"] != 0 || mb["collector_passes_total"] != 0 || metrics(addrA)["collector_lock_held"] != 1 {
		t.Fatalf("two writers? A %v, B %v", metrics(addrA), mb)
	}

	gdb := testutil.OpenDB(t, dbURL)
	if err := a.cmd.Process.Kill(); err != nil { // SIGKILL: no chance to release anything
		t.Fatal(err)
	}
	killed := time.Now()
	<-a.done
	waitFor(t, "B to take over and finish a pass", 30*time.Second, func() bool { return metrics(addrB)["collector_passes_total"] >= 1 })
	var st reports.CollectorState
	if err := gdb.First(&st).Error; err != nil {
		t.Fatal(err)
	}
	tookOver := st.PassStartedAt.Sub(killed)
	t.Logf("B started its first pass %s after A was killed (interval %s)", tookOver.Round(time.Millisecond), interval)
	if tookOver > interval+time.Second {
		t.Fatalf("B's first pass started %s after the kill; want within one interval (%s)", tookOver, interval)
	}
	if st.LastError != nil || metrics(addrB)["collector_lock_held"] != 1 {
		t.Fatalf("after takeover: state %+v, B %v", st, metrics(addrB))
	}
	var n int64
	gdb.Model(&reports.DailyReport{}).Where("generated_at > ?", killed).Count(&n)
	if n == 0 {
		t.Fatal("B wrote no report")
	}
}
