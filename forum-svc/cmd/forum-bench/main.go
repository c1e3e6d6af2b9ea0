// Command forum-bench measures forum-svc against the performance targets of issue 4:
//
//  1. In a conversation of 1,000,000 messages, the median latency of the last page is at most
//     1.5 × that of the first page.
//  2. Authenticated 20-message page requests per second are at least 50% of pgbench's
//     transactions per second running the same SQL statement against the same database, measured
//     in alternating rounds.
//
// It creates (and drops at the end) a dedicated PostgreSQL database, fills it with
// INSERT ... SELECT generate_series, serves the real HTTP handler on loopback, measures, runs
// pgbench side by side, prints the figures and exits 1 if a target is missed.
//
//	go run ./cmd/forum-bench [-admin-url postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable]
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/app"
	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/forum-svc/internal/ratelimit"
	"forumstats.local/forum-svc/internal/store"
	"forumstats.local/shared/db"
	"forumstats.local/shared/server"
)

const (
	apiKey   = "bench-user-key-0123456789abcdef0123456789"
	convID   = 1
	userID   = 1
	t0       = 1_767_225_600
	perPage  = 20
	database = "forum_bench"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "forum-bench: "+err.Error())
		os.Exit(1)
	}
}

func run() error {
	adminURL := flag.String("admin-url", envOr("BENCH_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"), "PostgreSQL URL of a database from which to create the bench database")
	messages := flag.Int("messages", 1_000_000, "messages in the conversation")
	samples := flag.Int("samples", 2000, "latency samples per page")
	rounds := flag.Int("rounds", 5, "throughput rounds (each an HTTP run and a pgbench run), after one warm-up round")
	roundLength := flag.Duration("round", 2*time.Second, "length of each side of a throughput round (whole seconds)")
	clients := flag.Int("clients", 16, "concurrent clients (HTTP and pgbench)")
	pageConcurrency := flag.Int("page-concurrency", 0, "the service's PAGE_QUERY_CONCURRENCY (0: its default)")
	keep := flag.Bool("keep", false, "keep the bench database afterwards")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the HTTP throughput run to this file")
	memProfile := flag.String("memprofile", "", "write an allocation profile of the HTTP throughput run to this file")
	flag.Parse()
	ctx := context.Background()

	dbURL, drop, err := createDatabase(ctx, *adminURL)
	if err != nil {
		return err
	}
	if !*keep {
		defer drop()
	}
	start := time.Now()
	gdb, err := app.OpenDB(ctx, dbURL, nil)
	if err != nil {
		return err
	}
	defer db.Close(gdb)
	if err := fill(ctx, gdb, *messages); err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	if err := store.UpsertKey(ctx, gdb, store.NewKey{Hash: auth.Hash(apiKey), Type: auth.TypeUser, UserID: userID,
		Scopes: []string{auth.ScopeConversationRead}, Active: true}, time.Now()); err != nil {
		return err
	}
	lastPage := (*messages + perPage - 1) / perPage
	fmt.Printf("database %s: 1 conversation of %d messages (%d pages of %d), filled in %.1f s\n",
		database, *messages, lastPage, perPage, time.Since(start).Seconds())

	// The real service, on loopback. The rate limit is in the path but set high enough not to refuse.
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := app.NewService(gdb, nil, ratelimit.Config{PerMinute: 1 << 30, Burst: 1 << 30}, quiet,
		app.Options{Store: store.Options{PageQueryConcurrency: *pageConcurrency}})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srvCtx, stopServer := context.WithCancel(ctx)
	defer stopServer()
	go func() { _ = server.Serve(srvCtx, svc.Handler, ln, nil) }()
	path := "/api/conversations/" + strconv.Itoa(convID) + "/messages?page="
	base := "http://" + ln.Addr().String() + path
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *clients * 2, MaxConnsPerHost: *clients * 2}}

	// 1. First page vs last page, interleaved so that drift hits both alike.
	for range 200 {
		if _, err := get(client, base+"1"); err != nil {
			return err
		}
		if _, err := get(client, base+strconv.Itoa(lastPage)); err != nil {
			return err
		}
	}
	var first, last []time.Duration
	for range *samples {
		d, err := get(client, base+"1")
		if err != nil {
			return err
		}
		first = append(first, d)
		d, err = get(client, base+strconv.Itoa(lastPage))
		if err != nil {
			return err
		}
		last = append(last, d)
	}
	mFirst, mLast := median(first), median(last)
	latencyRatio := float64(mLast) / float64(mFirst)

	// 2. Throughput: HTTP requests for random pages and pgbench running the same statement with the
	// same random pages on the same database, in alternating rounds of equal length, so that a
	// drift in the machine's speed (shared hosts drift by 10-20% within a minute) falls on both
	// sides alike. After one warm-up round each, the ratio is of the mean rates.
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer f.Close()
	}
	if *memProfile != "" {
		runtime.MemProfileRate = 64 << 10
		runtime.GC()
		runtime.GC() // the profile counts from here (see writeAllocProfile)
		if err := writeAllocProfile(os.DevNull); err != nil {
			return err
		}
	}
	httpLoad := newLoad(ln.Addr().String(), path, lastPage, *clients)
	defer httpLoad.close()
	pg := pgbenchRunner{dbURL: dbURL, lastPage: lastPage, clients: *clients}
	if err := pg.prepare(); err != nil {
		return err
	}
	defer pg.cleanup()
	var rpsRounds, tpsRounds []float64
	var cpuPerReq time.Duration
	for i := 0; i <= *rounds; i++ {
		r, cpu, err := httpLoad.run(*roundLength)
		if err != nil {
			return err
		}
		t, err := pg.run(*roundLength)
		if err != nil {
			return err
		}
		if i == 0 {
			continue // warm-up
		}
		rpsRounds, tpsRounds = append(rpsRounds, r), append(tpsRounds, t)
		cpuPerReq += cpu / time.Duration(*rounds)
	}
	pprof.StopCPUProfile()
	if *memProfile != "" {
		if err := writeAllocProfile(*memProfile); err != nil {
			return err
		}
	}
	stopServer()
	rps, tps := mean(rpsRounds), mean(tpsRounds)
	tpsRatio := rps / tps

	fmt.Printf("\nmachine: %d CPUs, GOMAXPROCS %d; %d latency samples per page; %d clients, %d rounds of %s each side\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), *samples, *clients, *rounds, *roundLength)
	fmt.Printf("latency, median: first page %s, last page (%d) %s: ratio %.2f (target <= 1.5)\n",
		round(mFirst), lastPage, round(mLast), latencyRatio)
	for i := range rpsRounds {
		fmt.Printf("  round %d: HTTP %.0f requests/s, pgbench %.0f transactions/s: %.2f\n",
			i+1, rpsRounds[i], tpsRounds[i], rpsRounds[i]/tpsRounds[i])
	}
	fmt.Printf("throughput, mean of the rounds: HTTP %.0f requests/s, pgbench %.0f transactions/s: ratio %.2f (target >= 0.50)\n",
		rps, tps, tpsRatio)
	fmt.Printf("CPU of this process (service and load generator) per request: %s\n", cpuPerReq.Round(100*time.Nanosecond))
	if n, sum, err := histogramTotals("forum_page_query_batch_size"); err == nil && n > 0 {
		fmt.Printf("page queries per database round trip (whole run): mean %.2f over %d round trips\n", sum/float64(n), n)
	}
	fmt.Printf("pgbench script (the statement each request runs):\n%s\n", indent(pg.script))

	var missed []string
	if latencyRatio > 1.5 {
		missed = append(missed, fmt.Sprintf("last/first page latency %.2f > 1.5", latencyRatio))
	}
	if tpsRatio < 0.5 {
		missed = append(missed, fmt.Sprintf("HTTP/pgbench throughput %.2f < 0.5", tpsRatio))
	}
	if len(missed) > 0 {
		return errors.New("target missed: " + strings.Join(missed, "; "))
	}
	fmt.Println("both targets met")
	return nil
}

// createDatabase (re)creates the bench database and returns its URL and a function that drops it.
func createDatabase(ctx context.Context, adminURL string) (string, func(), error) {
	admin, err := db.Open(ctx, adminURL, nil)
	if err != nil {
		return "", nil, fmt.Errorf("admin database: %w", err)
	}
	exec := func(q string) error { return admin.Exec(q).Error }
	if err := exec(`DROP DATABASE IF EXISTS ` + database + ` WITH (FORCE)`); err != nil {
		db.Close(admin)
		return "", nil, err
	}
	if err := exec(`CREATE DATABASE ` + database); err != nil {
		db.Close(admin)
		return "", nil, err
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		db.Close(admin)
		return "", nil, err
	}
	u.Path = "/" + database
	drop := func() {
		_ = exec(`DROP DATABASE IF EXISTS ` + database + ` WITH (FORCE)`)
		db.Close(admin)
	}
	return u.String(), drop, nil
}

// fill writes two users, the conversation, its participants and n messages in set-based
// statements. Dates advance every third message, so ties on message_date are common; positions
// follow (message_date, message_id) order, which here is message_id order.
func fill(ctx context.Context, gdb *gorm.DB, n int) error {
	for _, q := range []string{
		`INSERT INTO users (user_id, username) VALUES (1, 'alice'), (2, 'bob')`,
		`INSERT INTO conversations (conversation_id, title, user_id) VALUES (1, 'A long conversation', 1)`,
		`INSERT INTO conversation_participants (conversation_id, user_id, last_read_date) VALUES (1, 1, 0), (1, 2, 0)`,
		fmt.Sprintf(`INSERT INTO conversation_messages (message_id, conversation_id, user_id, message, message_date, position)
		 SELECT g, 1, 1 + g %% 2, 'Message number ' || g || ' of the long conversation, with some text to carry.',
		        %d + g / 3, g
		 FROM generate_series(1, %d) AS g`, t0, n),
		`UPDATE conversations SET message_count = (SELECT COUNT(*) FROM conversation_messages WHERE conversation_id = 1),
		   first_message_id = 1, start_date = (SELECT message_date FROM conversation_messages WHERE message_id = 1),
		   last_message_id = (SELECT MAX(message_id) FROM conversation_messages),
		   last_message_date = (SELECT MAX(message_date) FROM conversation_messages)`,
		`ANALYZE`,
	} {
		if err := gdb.WithContext(ctx).Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

// get requests u with the key and returns the latency; the body must be a full page. (The
// throughput run uses loadClient.)
func get(c *http.Client, u string) (time.Duration, error) {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set(auth.HeaderAPIKey, apiKey)
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"shown":20`) {
		return 0, fmt.Errorf("GET %s: %d %.200s", u, resp.StatusCode, body)
	}
	return d, nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func round(d time.Duration) time.Duration { return d.Round(time.Microsecond) }

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n    ")
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

var tpsLine = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// pgbenchRunner runs the service's page statement with the same parameters the HTTP run uses:
// random pages of the conversation, for the reader, in the prepared protocol (as pgx uses it).
type pgbenchRunner struct {
	dbURL             string
	lastPage, clients int
	script, dir       string
}

func (p *pgbenchRunner) prepare() error {
	// The service's statement text, its parameters as pgbench variables, passed as parameters of
	// the prepared statement exactly as pgx passes them.
	stmt := strings.TrimSpace(store.PageSQL)
	for _, v := range []string{":conv", ":page", ":page", ":conv", ":uid"} {
		stmt = strings.Replace(stmt, "?", v, 1)
	}
	p.script = fmt.Sprintf("\\set page random(1, %d)\n\\set conv %d\n\\set uid %d\n%s;\n",
		p.lastPage, convID, userID, strings.Join(strings.Fields(stmt), " "))
	dir, err := os.MkdirTemp("", "forum-bench")
	if err != nil {
		return err
	}
	p.dir = dir
	return os.WriteFile(filepath.Join(dir, "page.sql"), []byte(p.script), 0o644)
}

func (p *pgbenchRunner) cleanup() { _ = os.RemoveAll(p.dir) }

// run runs pgbench for d and returns its transactions per second (without connection time).
func (p *pgbenchRunner) run(d time.Duration) (float64, error) {
	u, err := url.Parse(p.dbURL)
	if err != nil {
		return 0, err
	}
	args := []string{"-n", "-M", "prepared", "-T", strconv.Itoa(max(int(d.Seconds()), 1)), "-c", strconv.Itoa(p.clients),
		"-j", strconv.Itoa(runtime.NumCPU()), "-f", filepath.Join(p.dir, "page.sql"), "-h", u.Hostname(), "-p", portOr(u, "5432"),
		"-U", u.User.Username(), strings.TrimPrefix(u.Path, "/")}
	cmd := exec.Command("pgbench", args...)
	if pw, ok := u.User.Password(); ok {
		cmd.Env = append(os.Environ(), "PGPASSWORD="+pw)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("pgbench: %w: %s", err, out)
	}
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("pgbench: no tps in output: %s", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

func mean(xs []float64) float64 {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// load is the HTTP side of the throughput run: one loadClient per concurrent client, each
// requesting random pages, connections kept across rounds.
type load struct {
	clients  []*loadClient
	rngs     []*rand.Rand
	lastPage int
}

func newLoad(addr, path string, lastPage, n int) *load {
	l := &load{lastPage: lastPage}
	for i := range n {
		l.clients = append(l.clients, newLoadClient(addr, path))
		seed := uint64(i + 1)
		l.rngs = append(l.rngs, rand.New(rand.NewPCG(seed, seed*7+1)))
	}
	return l
}

func (l *load) close() {
	for _, c := range l.clients {
		c.close()
	}
}

// run requests pages from every client for d and returns the requests per second and this
// process's CPU time per request. Any failed request fails the run.
func (l *load) run(d time.Duration) (float64, time.Duration, error) {
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	deadline := start.Add(d)
	for i, c := range l.clients {
		wg.Add(1)
		go func(c *loadClient, rng *rand.Rand) {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if err := c.get(1 + rng.IntN(l.lastPage)); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				ok.Add(1)
			}
		}(c, l.rngs[i])
	}
	wg.Wait()
	elapsed := time.Since(start)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	if failed.Load() > 0 {
		return 0, 0, fmt.Errorf("%d HTTP requests failed during the throughput run, the first: %v", failed.Load(), firstErr.Load())
	}
	cpu := func(r syscall.Rusage) time.Duration { return time.Duration(r.Utime.Nano() + r.Stime.Nano()) }
	return float64(ok.Load()) / elapsed.Seconds(), (cpu(after) - cpu(before)) / time.Duration(max(ok.Load(), 1)), nil
}

func portOr(u *url.URL, def string) string {
	if p := u.Port(); p != "" {
		return p
	}
	return def
}

// loadClient is the throughput run's HTTP/1.1 client: one keep-alive connection, a request
// written from a reused buffer, the response read with one reused bufio.Reader. Like pgbench's
// client it does the least it can, so that the comparison measures the service, not the
// load generator (net/http's client adds two goroutines and a dozen allocations a request). It
// checks the status and reads the whole body (Content-Length); anything else is an error.
type loadClient struct {
	addr, path string
	conn       net.Conn
	br         *bufio.Reader
	req        []byte
}

func newLoadClient(addr, path string) *loadClient {
	return &loadClient{addr: addr, path: path, req: make([]byte, 0, 256)}
}

func (c *loadClient) close() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
}

func (c *loadClient) get(page int) error {
	if c.conn == nil {
		conn, err := net.Dial("tcp", c.addr)
		if err != nil {
			return err
		}
		c.conn = conn
		if c.br == nil {
			c.br = bufio.NewReaderSize(conn, 16<<10)
		} else {
			c.br.Reset(conn)
		}
	}
	b := append(c.req[:0], "GET "...)
	b = append(b, c.path...)
	b = strconv.AppendInt(b, int64(page), 10)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, c.addr...)
	b = append(b, "\r\n"+auth.HeaderAPIKey+": "+apiKey+"\r\n\r\n"...)
	c.req = b
	if _, err := c.conn.Write(b); err != nil {
		c.close()
		return err
	}
	if err := c.readResponse(); err != nil {
		c.close()
		return fmt.Errorf("GET %s%d: %w", c.path, page, err)
	}
	return nil
}

func (c *loadClient) readResponse() error {
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(line, []byte("HTTP/1.1 200 ")) {
		return fmt.Errorf("status line %q", bytes.TrimSpace(line))
	}
	length := -1
	for {
		line, err = c.br.ReadSlice('\n')
		if err != nil {
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, found := bytes.Cut(line, []byte(":"))
		if !found {
			return fmt.Errorf("header line %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, err := strconv.Atoi(string(value))
			if err != nil || n < 0 {
				return fmt.Errorf("Content-Length %q", value)
			}
			length = n
		case bytes.EqualFold(name, []byte("Transfer-Encoding")),
			bytes.EqualFold(name, []byte("Connection")) && bytes.EqualFold(value, []byte("close")):
			return fmt.Errorf("unsupported header %q", line)
		}
	}
	if length < 0 {
		return errors.New("no Content-Length")
	}
	_, err = c.br.Discard(length)
	return err
}

// histogramTotals returns the sample count and sum of a histogram of the default registry.
func histogramTotals(name string) (uint64, float64, error) {
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		return 0, 0, err
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 && f.GetMetric()[0].GetHistogram() != nil {
			h := f.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum(), nil
		}
	}
	return 0, 0, fmt.Errorf("no histogram %s", name)
}

// writeAllocProfile writes the allocations since the program started (pprof -sample_index
// alloc_space; subtract the profile taken before the run with -base for the run alone).
func writeAllocProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.Lookup("allocs").WriteTo(f, 0)
}
