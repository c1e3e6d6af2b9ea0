//go:build faults

package systest

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"forumstats.local/tools/stack"
)

// The attacks on shared/server, which all three services share, against the real binaries.

// attackServices starts forum-svc, stats-svc and collector-svc (the collector against a Discord
// that never answers: only its HTTP side matters here), each with extra env.
func attackServices(t *testing.T, extra ...string) (forum, stats, collector *stack.Service, fx stack.ForumFixture) {
	t.Helper()
	pg := postgres(t)
	fx = stack.NewForumFixture(5, 3)
	forum = service(t, stack.Forum, forumEnv(t, pg, fx, extra...)...)
	stats = service(t, stack.Stats, statsEnv(t, pg, statsFixture(), extra...)...)
	collector = service(t, stack.Collector, append([]string{
		"DATABASE_URL=sqlite:" + filepath.Join(tempDir(t), "stats.db"),
		"DISCORD_API_BASE=http://127.0.0.1:1", "REFRESH_INTERVAL=1h", "DISCORD_GATEWAY=off",
	}, extra...)...)
	return forum, stats, collector, fx
}

// rawAnswer writes raw on a new connection and reads the answers until the server closes it
// or 3 s pass: "status body" each, and whether the server closed.
func rawAnswer(t *testing.T, addr, raw string) (answers []string, closed bool) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Error(err) // may run on another goroutine than the test's
		return nil, false
	}
	defer conn.Close()
	go io.WriteString(conn, raw)
	conn.SetReadDeadline(time.Now().Add(3 * time.Second))
	br := bufio.NewReader(conn)
	for {
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			ne, ok := err.(net.Error)
			return answers, !(ok && ne.Timeout())
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		answers = append(answers, fmt.Sprintf("%d %s", res.StatusCode, b))
	}
}

// emptyLines is a header block of n distinct empty fields.
func emptyLines(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "X-%d:\r\n", i)
	}
	return b.String()
}

// 20 concurrent 1.15 MB header blocks (115,000 distinct empty fields each) raise no service's
// peak resident set by 64 MB; a head just under net/http's cap still gets the service's 431.
func TestAttackServerHeaderMemory(t *testing.T) {
	forum, stats, collector, fx := attackServices(t)
	block := emptyLines(115000)
	for _, s := range []*stack.Service{forum, stats, collector} {
		if err := s.ResetPeak(); err != nil {
			t.Fatal(err)
		}
		before, err := s.Memory()
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		statuses := make(chan string, 20)
		for range 20 {
			wg.Go(func() {
				answers, _ := rawAnswer(t, s.Addr, "GET /api/me HTTP/1.1\r\nHost: a\r\nForum-Api-Key: "+fx.UserKey+"\r\n"+block+"\r\n")
				statuses <- strings.Join(answers, "|")
			})
		}
		wg.Wait()
		close(statuses)
		seen := map[string]int{}
		for st := range statuses {
			seen[strings.SplitN(st, " ", 2)[0]]++
		}
		after, err := s.Memory()
		if err != nil {
			t.Fatal(err)
		}
		rise := after.Peak - before.RSS
		report(t, "%s: 20 x 1.15 MB header blocks: RSS %s before, peak %s (+%s); answers %v",
			s.Name, stack.MiB(before.RSS), stack.MiB(after.Peak), stack.MiB(rise), seen)
		if rise >= 64<<20 {
			t.Errorf("%s: peak RSS rose by %s", s.Name, stack.MiB(rise))
		}
		// Just under the cap: the service's own answer, in JSON.
		for _, c := range []struct{ name, target, head string }{
			{"60 KiB header block", "/healthz", emptyLines(60 << 10 / 9)},
			{"60 KiB request target", "/healthz?x=" + strings.Repeat("a", 60<<10), ""},
		} {
			answers, _ := rawAnswer(t, s.Addr, "GET "+c.target+" HTTP/1.1\r\nHost: a\r\n"+c.head+"Connection: close\r\n\r\n")
			if len(answers) != 1 || !(strings.HasPrefix(answers[0], "431 {") || strings.HasPrefix(answers[0], "414 {")) {
				t.Errorf("%s: %s: %q, want the service's JSON 431/414", s.Name, c.name, answers)
			}
		}
	}
}

// Invented method names add no series and no /metrics bytes beyond one "other" label; a long
// method and path give a bounded log line.
func TestAttackServerMetricsLabels(t *testing.T) {
	forum, stats, collector, _ := attackServices(t)
	for _, s := range []*stack.Service{forum, stats, collector} {
		size := func() int {
			res, err := http.Get(s.URL + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			return len(b)
		}
		client := &http.Client{Timeout: 5 * time.Second}
		send := func(method string) {
			req, _ := http.NewRequest(method, s.URL+"/healthz", nil)
			if res, err := client.Do(req); err == nil {
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		}
		send("WARMUP")
		size()
		before := size()
		for range 5000 {
			send(fmt.Sprintf("M%x", rand.Uint64()))
		}
		after := size()
		// A 60 KB method and a 3 KB path: under the head cap, so they reach the log.
		rawAnswer(t, s.Addr, strings.Repeat("M", 60000)+" /"+strings.Repeat("p", 3000)+" HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
		time.Sleep(200 * time.Millisecond)
		longest := 0
		for _, l := range strings.Split(s.Output(), "\n") {
			longest = max(longest, len(l))
		}
		report(t, "%s: 5,000 random methods: /metrics %d -> %d bytes; longest log line %d bytes", s.Name, before, after, longest)
		if after-before > 4<<10 {
			t.Errorf("%s: /metrics grew by %d bytes", s.Name, after-before)
		}
		if longest > 4<<10 {
			t.Errorf("%s: a log line of %d bytes", s.Name, longest)
		}
	}
}

// A client's body mistakes are 4xx in the envelope, logged at info: a chunk size past 64 bits,
// a body trickled past the read timeout (HTTP_READ_TIMEOUT=1s here), a hang-up mid-body.
func TestAttackServerBodyErrors(t *testing.T) {
	pg := postgres(t)
	fx := stack.NewForumFixture(5, 3)
	forum := service(t, stack.Forum, forumEnv(t, pg, fx, "HTTP_READ_TIMEOUT=1s")...)
	head := fmt.Sprintf("POST /api/conversations/%d/mark-read HTTP/1.1\r\nHost: a\r\nForum-Api-Key: %s\r\nContent-Type: application/x-www-form-urlencoded\r\n", fx.Own, fx.UserKey)
	for _, c := range []struct {
		name, raw string
		trickle   bool
		want      string
	}{
		{"chunk size FFFFFFFFFFFFFFFFF1", head + "Transfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFF1\r\nx\r\n", false, `400 {"errors":[{"code":"malformed_body"`},
		{"trickled past the read timeout", head + "Content-Length: 100\r\n\r\ndate=1", true, `408 {"errors":[{"code":"request_timeout"`},
	} {
		conn, err := net.Dial("tcp", forum.Addr)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		io.WriteString(conn, c.raw)
		if c.trickle {
			go func() {
				for range 30 {
					time.Sleep(300 * time.Millisecond)
					if _, err := conn.Write([]byte("1")); err != nil {
						return
					}
				}
			}()
		}
		conn.SetReadDeadline(time.Now().Add(15 * time.Second))
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		got := ""
		if err == nil {
			b, _ := io.ReadAll(res.Body)
			got = fmt.Sprintf("%d %s", res.StatusCode, b)
		}
		conn.Close()
		report(t, "forum-svc: %s: %.60q after %v", c.name, got, time.Since(start).Round(10*time.Millisecond))
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want %s…", c.name, got, c.want)
		}
	}
	// Hang-up mid-body: no answer to read; the access line says 400 at info.
	conn, err := net.Dial("tcp", forum.Addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(conn, head+"X-Request-ID: hangup-mid-body\r\nContent-Length: 100\r\n\r\ndate=1")
	conn.(*net.TCPConn).CloseWrite()
	time.Sleep(500 * time.Millisecond)
	conn.Close()
	line := ""
	for _, l := range strings.Split(forum.Output(), "\n") {
		if strings.Contains(l, `"hangup-mid-body"`) && strings.Contains(l, `"msg":"request"`) {
			line = l
		}
	}
	report(t, "forum-svc: hang-up mid-body: %s", line)
	if !strings.Contains(line, `"status":400`) || !strings.Contains(line, `"level":"INFO"`) {
		t.Errorf("hang-up: access line %q, want status 400 at INFO", line)
	}
	if strings.Contains(forum.Output(), `"level":"ERROR"`) {
		t.Errorf("an ERROR was logged:\n%s", tailLines(forum.Output(), 10))
	}
}

// A request with both Content-Length and Transfer-Encoding (or Transfer-Encoding on HTTP/1.0)
// is refused 400 and its connection closed: the request hidden in its body is never answered.
func TestAttackServerSmuggling(t *testing.T) {
	forum, stats, collector, _ := attackServices(t)
	const hidden = "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"
	chunk := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(hidden), hidden)
	for _, s := range []*stack.Service{forum, stats, collector} {
		for _, c := range []struct{ name, raw string }{
			{"Content-Length and chunked", "POST /healthz HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + hidden},
			{"chunked on HTTP/1.0", "POST /healthz HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk},
		} {
			answers, closed := rawAnswer(t, s.Addr, c.raw)
			report(t, "%s: %s: %d answers %.80q, closed %v", s.Name, c.name, len(answers), answers, closed)
			if len(answers) != 1 || !strings.HasPrefix(answers[0], "400 {") || !closed {
				t.Errorf("%s: %s: %q closed %v, want one JSON 400 and the connection closed", s.Name, c.name, answers, closed)
			}
		}
	}
}
