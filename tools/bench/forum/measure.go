package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"forumstats.local/tools/stack"
)

// headerAPIKey is the header that carries forum-svc's API key.
const headerAPIKey = "Forum-Api-Key"

// results are the measured figures.
type results struct {
	lastPageNo  int
	runs        []*throughput // the bench's own build first, then the -compare binaries
	script      string        // the pgbench script of the page
	list        listResults
	replies     []*replyScenario
	replyScript string // the pgbench script of a reply (the last scenario's)
	// After the reply runs: the reply conversations and their messages, and the first that
	// breaks positions 1..N or its counters ("" when none).
	replyConvsChecked, replyMessages int64
	replyBroken                      string
	reactions                        *throughput
	reactScript                      string // the pgbench script of a reaction
	// After the reaction runs: the first reacted message whose reaction_score is not the number
	// of its Likes ("" when none).
	reactBroken string
	attach      attachResults
}

// throughput is one service's figures: its page latencies and its side of the throughput rounds.
type throughput struct {
	name                string
	svc                 *stack.Service
	firstPage, lastPage time.Duration // median latencies
	load                *load
	rps, tps            []float64     // per round, after the warm-up round; tps is the pgbench run after it
	serviceCPU          time.Duration // the service's CPU time per HTTP request
	loadCPU             time.Duration // the load generator's (this process's) CPU time per request
}

func (t *throughput) ratio() float64 { return mean(t.rps) / mean(t.tps) }

func measure(ctx context.Context, e *benchEnv, o options) (results, error) {
	r := results{lastPageNo: e.lastPage, replies: []*replyScenario{
		{name: "one conversation", convs: 1, min: minReplyOneRatio},
		{name: fmt.Sprintf("%d conversations", replyConvs), convs: replyConvs, min: minReplyManyRatio},
	}}
	var err error
	if r.list, err = measureList(ctx, e, o.samples); err != nil {
		return r, fmt.Errorf("conversation list: %w", err)
	}
	path := "/api/conversations/" + strconv.Itoa(convID) + "/messages?page="
	for i, svc := range append([]*stack.Service{e.svc}, e.others...) {
		name := "forum-svc"
		if i > 0 {
			name = o.compare[i-1]
		}
		t := &throughput{name: name, svc: svc, load: newLoad(svc.Addr, o.clients, pageRequests(svc.Addr, path, e.key, e.lastPage))}
		defer t.load.close()
		r.runs = append(r.runs, t)
	}
	if err := measureLatency(r.runs, path, e.key, e.lastPage, o.samples); err != nil {
		return r, err
	}
	stmt, err := pageStatement(ctx, e, path)
	if err != nil {
		return r, err
	}
	script, err := pageScript(stmt, e.lastPage)
	if err != nil {
		return r, err
	}
	pg, err := newPgbench(e.dbURL, script, o.clients)
	if err != nil {
		return r, err
	}
	defer pg.cleanup()
	r.script = pg.script
	if err := measureThroughput(r.runs, pg, o); err != nil {
		return r, err
	}
	if r.replyScript, err = measureReplies(ctx, e, o, r.replies); err != nil {
		return r, fmt.Errorf("replies: %w", err)
	}
	if r.replyConvsChecked, r.replyMessages, r.replyBroken, err = replyIntegrity(ctx, e); err != nil {
		return r, err
	}
	if r.reactions, r.reactScript, err = measureReactions(ctx, e, o); err != nil {
		return r, fmt.Errorf("reactions: %w", err)
	}
	if r.reactBroken, err = reactIntegrity(ctx, e); err != nil {
		return r, err
	}
	// Last: the attachment statements, left as their connections' last in pg_stat_activity, name
	// conversation_messages too, which pageStatement would take for pages.
	if r.attach, err = measureAttachments(ctx, e, o); err != nil {
		return r, fmt.Errorf("attachments: %w", err)
	}
	return r, nil
}

// measureLatency times the first and the last page of every build.
func measureLatency(runs []*throughput, path, key string, lastPage, samples int) error {
	var urls []string
	for _, t := range runs {
		urls = append(urls, t.svc.URL+path+"1", t.svc.URL+path+strconv.Itoa(lastPage))
	}
	ms, err := medians(key, urls, samples)
	if err != nil {
		return err
	}
	for j, t := range runs {
		t.firstPage, t.lastPage = ms[2*j], ms[2*j+1]
	}
	return nil
}

// medians requests the urls in turn, samples rounds after 200 warm-up rounds, so that drift hits
// them all alike, and returns each one's median latency.
func medians(key string, urls []string, samples int) ([]time.Duration, error) {
	client := &http.Client{}
	ds := make([][]time.Duration, len(urls))
	for i := -200; i < samples; i++ {
		for k, u := range urls {
			d, err := get(client, u, key)
			if err != nil {
				return nil, err
			}
			if i >= 0 {
				ds[k] = append(ds[k], d)
			}
		}
	}
	out := make([]time.Duration, len(urls))
	for k := range ds {
		out[k] = median(ds[k])
	}
	return out, nil
}

// measureThroughput runs HTTP requests for random pages and pgbench running the same statement
// with the same random pages on the same database, in alternating rounds of equal length, so that
// a drift in the machine's speed (shared hosts drift by 10-40% within a minute) falls on both
// sides alike. With -compare, every service takes its turn in every round, each followed by its
// own pgbench run, in an order that rotates from round to round. The first round is a warm-up.
func measureThroughput(runs []*throughput, pg *pgbench, o options) error {
	requests := make([]int64, len(runs))
	for i := 0; i <= o.rounds; i++ {
		// Each round starts with the next service, so that none always goes first.
		for k := range runs {
			j := (i + k) % len(runs)
			t := runs[j]
			n, rps, cpu, loadCPU, err := t.round(o.round)
			if err != nil {
				return err
			}
			tps, err := pg.run(o.round)
			if err != nil {
				return err
			}
			if i == 0 {
				continue
			}
			t.rps, t.tps = append(t.rps, rps), append(t.tps, tps)
			requests[j] += n
			t.serviceCPU += cpu
			t.loadCPU += loadCPU
		}
	}
	for j, t := range runs {
		t.serviceCPU /= time.Duration(max(requests[j], 1))
		t.loadCPU /= time.Duration(max(requests[j], 1))
	}
	return nil
}

// round runs t's HTTP load for d and returns the requests served, their rate and the CPU time
// the service and the load generator spent meanwhile.
func (t *throughput) round(d time.Duration) (requests int64, rps float64, serviceCPU, loadCPU time.Duration, err error) {
	svcBefore, err := processCPU(t.svc.Pid())
	if err != nil {
		return 0, 0, 0, 0, err
	}
	selfBefore := selfCPU()
	if requests, rps, err = t.load.run(d); err != nil {
		return 0, 0, 0, 0, err
	}
	svcAfter, err := processCPU(t.svc.Pid())
	if err != nil {
		return 0, 0, 0, 0, err
	}
	return requests, rps, svcAfter - svcBefore, selfCPU() - selfBefore, nil
}

// get requests u with the key and returns the latency; the body must be a full page. (The
// throughput run uses loadClient.)
func get(c *http.Client, u, key string) (time.Duration, error) {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set(headerAPIKey, key)
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
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"shown":20`)) {
		return 0, fmt.Errorf("GET %s: %d %.200s", u, resp.StatusCode, body)
	}
	return d, nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func mean(xs []float64) float64 {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// selfCPU is this process's CPU time so far (the load generator; pgbench is a child, not counted).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clockTick is Linux's USER_HZ, the unit of /proc/PID/stat's times (100 on every architecture Go
// runs on).
const clockTick = 10 * time.Millisecond

// processCPU is the CPU time (user and system) of process pid so far, from /proc/PID/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name (which may hold spaces) start with the state, field 3;
	// utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(b, ')')
	fields := strings.Fields(string(b[i+1:]))
	if i < 0 || len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, b)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(utime+stime) * clockTick, nil
}

var tpsLine = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// pageParams names the page statement's parameters $1..$6 (user, conversation, page, page,
// conversation, user, as forum-svc's store documents them) as pgbench variables.
var pageParams = []string{":uid", ":conv", ":page", ":page", ":conv", ":uid"}

var placeholder = regexp.MustCompile(`\$([0-9]+)`)

// pgbench runs a script of the service's statements with -M prepared (as pgx runs them).
type pgbench struct {
	dbURL   string
	clients int
	script  string
	dir     string
}

// pageScript is the service's page statement with the same parameters the HTTP run uses: random
// pages of the conversation, for the reader.
func pageScript(statement string, lastPage int) (string, error) {
	stmt, err := bindParams(statement, pageParams)
	if err != nil {
		return "", fmt.Errorf("page statement: %w", err)
	}
	return fmt.Sprintf("\\set page random(1, %d)\n\\set conv %d\n\\set uid %d\n%s;\n", lastPage, convID, userID, stmt), nil
}

// bindParams replaces the statement's $1..$n by params (pgbench variables or literals), on one
// line. Every parameter must be named: a statement of the service with more or fewer parameters
// than the bench knows is a change the bench has to follow.
func bindParams(statement string, params []string) (string, error) {
	var bad error
	seen := 0
	stmt := placeholder.ReplaceAllStringFunc(statement, func(p string) string {
		n, _ := strconv.Atoi(p[1:])
		if n < 1 || n > len(params) {
			bad = fmt.Errorf("parameter %s; the bench knows $1..$%d", p, len(params))
			return p
		}
		seen = max(seen, n)
		return params[n-1]
	})
	if bad == nil && seen != len(params) {
		bad = fmt.Errorf("%d parameters; the bench knows %d", seen, len(params))
	}
	return strings.Join(strings.Fields(stmt), " "), bad
}

func newPgbench(dbURL, script string, clients int) (*pgbench, error) {
	p := &pgbench{dbURL: dbURL, clients: clients, script: script}
	dir, err := os.MkdirTemp("", "forum-bench-pgbench")
	if err != nil {
		return nil, err
	}
	p.dir = dir
	return p, os.WriteFile(filepath.Join(dir, "script.sql"), []byte(script), 0o644)
}

func (p *pgbench) cleanup() { _ = os.RemoveAll(p.dir) }

// run runs pgbench for d and returns its transactions per second (without connection time).
func (p *pgbench) run(d time.Duration) (float64, error) {
	u, err := url.Parse(p.dbURL)
	if err != nil {
		return 0, err
	}
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	args := []string{"-n", "-M", "prepared", "-T", strconv.Itoa(max(int(d.Seconds()), 1)), "-c", strconv.Itoa(p.clients),
		"-j", strconv.Itoa(runtime.NumCPU()), "-f", filepath.Join(p.dir, "script.sql"), "-h", u.Hostname(), "-p", port,
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

// load is the HTTP side of a throughput run: one loadClient per concurrent client, each writing
// the requests its request function builds, connections kept across rounds.
type load struct {
	clients []*loadClient
	rngs    []*rand.Rand
	request requestFunc
}

// requestFunc appends client i's next request (a whole HTTP/1.1 request) to b; rng is the client's.
type requestFunc func(b []byte, i int, rng *rand.Rand) []byte

func newLoad(addr string, n int, request requestFunc) *load {
	l := &load{request: request}
	for i := range n {
		l.clients = append(l.clients, &loadClient{addr: addr, req: make([]byte, 0, 512)})
		seed := uint64(i + 1)
		l.rngs = append(l.rngs, rand.New(rand.NewPCG(seed, seed*7+1)))
	}
	return l
}

// pageRequests asks for random pages of 1..lastPage of path (which ends in "?page=") with key.
func pageRequests(addr, path, key string, lastPage int) requestFunc {
	return func(b []byte, _ int, rng *rand.Rand) []byte {
		b = append(b, "GET "...)
		b = append(b, path...)
		b = strconv.AppendInt(b, int64(1+rng.IntN(lastPage)), 10)
		b = append(b, " HTTP/1.1\r\nHost: "...)
		b = append(b, addr...)
		b = append(b, "\r\n"+headerAPIKey+": "...)
		b = append(b, key...)
		return append(b, "\r\n\r\n"...)
	}
}

// postForm is a POST of an urlencoded form to path with key.
func postForm(b []byte, addr, path, key, form string) []byte {
	b = append(b, "POST "...)
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, addr...)
	b = append(b, "\r\n"+headerAPIKey+": "...)
	b = append(b, key...)
	b = append(b, "\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(form)), 10)
	b = append(b, "\r\n\r\n"...)
	return append(b, form...)
}

func (l *load) close() {
	for _, c := range l.clients {
		c.close()
	}
}

// run sends requests from every client for d and returns the number of requests and their rate
// per second. Any failed request fails the run.
func (l *load) run(d time.Duration) (int64, float64, error) {
	var ok, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for i, c := range l.clients {
		wg.Add(1)
		go func(i int, c *loadClient, rng *rand.Rand) {
			defer wg.Done()
			for time.Now().Before(deadline) {
				c.req = l.request(c.req[:0], i, rng)
				if err := c.do(); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				ok.Add(1)
			}
		}(i, c, l.rngs[i])
	}
	wg.Wait()
	elapsed := time.Since(start)
	if failed.Load() > 0 {
		return 0, 0, fmt.Errorf("%d HTTP requests failed during the throughput run, the first: %v", failed.Load(), firstErr.Load())
	}
	return ok.Load(), float64(ok.Load()) / elapsed.Seconds(), nil
}

// loadClient is the throughput run's HTTP/1.1 client: one keep-alive connection, a request
// written from a reused buffer, the response read with one reused bufio.Reader. Like pgbench's
// client it does the least it can, so that the comparison measures the service, not the load
// generator (net/http's client adds two goroutines and a dozen allocations a request). It checks
// the status and reads the whole body (Content-Length); anything else is an error.
type loadClient struct {
	addr string
	conn net.Conn
	br   *bufio.Reader
	req  []byte
}

func (c *loadClient) close() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
}

// do sends c.req and reads the answer.
func (c *loadClient) do() error {
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
	if _, err := c.conn.Write(c.req); err != nil {
		c.close()
		return err
	}
	if err := c.readResponse(); err != nil {
		c.close()
		line, _, _ := bytes.Cut(c.req, []byte("\r\n"))
		return fmt.Errorf("%s: %w", line, err)
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
