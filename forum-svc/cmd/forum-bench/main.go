// Command forum-bench measures forum-svc against the performance targets of issue 4:
//
//  1. In a conversation of 1,000,000 messages, the median latency of the last page is at most
//     1.5 × that of the first page.
//  2. Authenticated 20-message page requests per second are at least 50% of pgbench's
//     transactions per second running the same SQL statement against the same database.
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
	duration := flag.Duration("duration", 5*time.Second, "throughput run length (HTTP and pgbench each)")
	clients := flag.Int("clients", 16, "concurrent clients (HTTP and pgbench)")
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
	defer app.Close(gdb)
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
	svc, err := app.NewService(gdb, nil, ratelimit.Config{PerMinute: 1 << 30, Burst: 1 << 30}, quiet, app.Options{})
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

	// 2. Throughput: HTTP requests for random pages, then pgbench with the same statement and the
	// same random pages, on the same database, one after the other in this run.
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
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	var cpuBefore syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &cpuBefore)
	deadline := time.Now().Add(*duration)
	for i := range *clients {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, seed*7+1))
			lc := newLoadClient(ln.Addr().String(), path)
			defer lc.close()
			for time.Now().Before(deadline) {
				if err := lc.get(1 + rng.IntN(lastPage)); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				ok.Add(1)
			}
		}(uint64(i + 1))
	}
	wg.Wait()
	var cpuAfter syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &cpuAfter)
	if failed.Load() > 0 {
		return fmt.Errorf("%d HTTP requests failed during the throughput run, the first: %v", failed.Load(), firstErr.Load())
	}
	rps := float64(ok.Load()) / duration.Seconds()
	pprof.StopCPUProfile()
	if *memProfile != "" {
		if err := writeAllocProfile(*memProfile); err != nil {
			return err
		}
	}
	stopServer()

	tps, script, err := pgbench(dbURL, lastPage, *clients, *duration)
	if err != nil {
		return err
	}
	tpsRatio := rps / tps
	cpu := func(r syscall.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	cpuPerReq := (cpu(cpuAfter) - cpu(cpuBefore)) / time.Duration(max(ok.Load(), 1))

	fmt.Printf("\nmachine: %d CPUs, GOMAXPROCS %d; %d latency samples per page; %d clients for %s\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), *samples, *clients, *duration)
	fmt.Printf("latency, median: first page %s, last page (%d) %s: ratio %.2f (target <= 1.5)\n",
		round(mFirst), lastPage, round(mLast), latencyRatio)
	fmt.Printf("throughput: HTTP %.0f requests/s, pgbench %.0f transactions/s: ratio %.2f (target >= 0.50)\n",
		rps, tps, tpsRatio)
	fmt.Printf("CPU of this process (service and load generator) per request: %s\n", cpuPerReq.Round(100*time.Nanosecond))
	fmt.Printf("pgbench script (the statement each request runs):\n%s\n", indent(script))

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
		app.Close(admin)
		return "", nil, err
	}
	if err := exec(`CREATE DATABASE ` + database); err != nil {
		app.Close(admin)
		return "", nil, err
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		app.Close(admin)
		return "", nil, err
	}
	u.Path = "/" + database
	drop := func() {
		_ = exec(`DROP DATABASE IF EXISTS ` + database + ` WITH (FORCE)`)
		app.Close(admin)
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

// pgbench runs the service's page statement with the same parameters the HTTP run used: random
// pages of the conversation, for the reader, in the prepared protocol (as pgx uses it).
func pgbench(dbURL string, lastPage, clients int, d time.Duration) (float64, string, error) {
	// The service's statement text, its parameters as pgbench variables, passed as parameters of
	// the prepared statement exactly as pgx passes them.
	stmt := strings.TrimSpace(store.PageSQL)
	for _, v := range []string{":conv", ":page", ":page", ":conv", ":uid"} {
		stmt = strings.Replace(stmt, "?", v, 1)
	}
	script := fmt.Sprintf("\\set page random(1, %d)\n\\set conv %d\n\\set uid %d\n%s;\n",
		lastPage, convID, userID, strings.Join(strings.Fields(stmt), " "))
	dir, err := os.MkdirTemp("", "forum-bench")
	if err != nil {
		return 0, "", err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "page.sql")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		return 0, "", err
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		return 0, "", err
	}
	args := []string{"-n", "-M", "prepared", "-T", strconv.Itoa(int(d.Seconds())), "-c", strconv.Itoa(clients),
		"-j", strconv.Itoa(runtime.NumCPU()), "-f", path, "-h", u.Hostname(), "-p", portOr(u, "5432"), "-U", u.User.Username(),
		strings.TrimPrefix(u.Path, "/")}
	cmd := exec.Command("pgbench", args...)
	if pw, ok := u.User.Password(); ok {
		cmd.Env = append(os.Environ(), "PGPASSWORD="+pw)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, script, fmt.Errorf("pgbench: %w: %s", err, out)
	}
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		return 0, script, fmt.Errorf("pgbench: no tps in output: %s", out)
	}
	tps, err := strconv.ParseFloat(string(m[1]), 64)
	return tps, script, err
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
