// Package badinput generates deterministic corpora of malformed and hostile HTTP requests for
// the two public services, sends them over raw TCP connections (so that requests net/http's
// client would refuse to build can be sent too), and checks every answer against the services' documented answers:
// a documented 4xx status and code in the service's JSON error envelope, never a 5xx, and no
// body for HEAD.
//
// A request line or header block over the services' limits (shared/server) but within 1 MiB is
// answered by the service: 414 uri_too_long or 431 request_header_fields_too_large in its
// envelope. Requests that are malformed at the HTTP protocol level (a control character in a
// header, no Host) are answered by Go's net/http server before any handler runs: 400 Bad
// Request (431 Request Header Fields Too Large past 1 MiB), with a text/plain body
// and Connection: close. That is documented net/http behaviour, outside the services' code, and
// the corpus marks those cases with NetHTTP: for them net/http's own 400 or 431 passes, as does
// the service's documented answer should the request reach a handler. Every other case must be
// answered by the service itself.
package badinput

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"forumstats.local/shared/server"
)

// Envelope is the shape of a service's error body.
type Envelope int

const (
	// StatsEnvelope is {"error": CODE}.
	StatsEnvelope Envelope = iota
	// ForumEnvelope is {"errors": [{"code": C, "message": M, "params": {...}}]}.
	ForumEnvelope
)

// Outcome is one acceptable answer.
type Outcome struct {
	Status int
	Code   string
	// Params, for the forum envelope, must equal errors[0].params when not nil.
	Params map[string]any
}

func (o Outcome) String() string {
	if o.Params != nil {
		b, _ := json.Marshal(o.Params)
		return fmt.Sprintf("%d %s %s", o.Status, o.Code, b)
	}
	return fmt.Sprintf("%d %s", o.Status, o.Code)
}

// Case is one malformed request.
type Case struct {
	Name   string // category/variant, for the report
	Method string
	Target string      // the request-target exactly as sent
	Header [][2]string // in order; Host, Content-Length and Connection are added unless Raw
	Body   []byte
	// Raw, when set, is sent verbatim after replacing {HOST}: the whole request, for framing
	// that the fields above cannot express.
	Raw []byte
	// Want lists the acceptable answers (any one of them passes).
	Want []Outcome
	// Allow, for a 405, is the Allow header wanted: the same methods in any order ("" means
	// present and non-empty).
	Allow string
	// NetHTTP marks a request malformed at the protocol level: net/http's own 400 or 431
	// passes too (see the package documentation).
	NetHTTP bool
}

// overLimits makes every case whose request target passes shared/server's limit expect 414
// uri_too_long: the services refuse such a head before reading any parameter.
func overLimits(cs []Case) []Case {
	for i := range cs {
		if cs[i].Raw == nil && len(cs[i].Target) > server.MaxRequestTarget {
			cs[i].Want = []Outcome{uriTooLong}
		}
	}
	return cs
}

// Corpus is the cases of one service.
type Corpus struct {
	Service  string
	Envelope Envelope
	Cases    []Case
}

// Answer is what came back for a case.
type Answer struct {
	Status   int
	Header   http.Header
	Body     []byte
	Trailing int // bytes after the headers of a HEAD answer (must be 0)
	// Cut: the body, which the server ends by closing the connection, was cut by a reset (see
	// Send); Body holds what arrived before it.
	Cut bool
}

// Render returns the bytes of the request for host.
func (c Case) Render(host string) []byte {
	if c.Raw != nil {
		return bytes.ReplaceAll(c.Raw, []byte("{HOST}"), []byte(host))
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", c.Method, c.Target, host)
	for _, h := range c.Header {
		fmt.Fprintf(&b, "%s: %s\r\n", h[0], h[1])
	}
	if c.Body != nil {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(c.Body))
	}
	b.WriteString("Connection: close\r\n\r\n")
	b.Write(c.Body)
	return b.Bytes()
}

const maxAnswer = 1 << 20

// Send sends c to addr (host:port) over a fresh connection and reads the answer.
func Send(ctx context.Context, addr string, c Case) (Answer, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Answer{}, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(15 * time.Second))
	// Write in the background: the server may answer (431) and close before reading it all.
	werr := make(chan error, 1)
	go func() {
		_, err := conn.Write(c.Render(addr))
		werr <- err
	}()
	br := bufio.NewReader(conn)
	method := c.Method
	if c.Raw != nil {
		method, _, _ = strings.Cut(string(c.Raw), " ")
	}
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		if we := <-werr; we != nil {
			return Answer{}, fmt.Errorf("write: %v; read: %w", we, err)
		}
		return Answer{}, fmt.Errorf("read answer: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	cut := false
	if err != nil {
		// net/http refuses a head over its limit with a body it ends by closing the connection,
		// unread bytes still coming in: the close then reaches this side as a reset, which can
		// cut the body. The status and headers stand; what arrived of the body is kept.
		if resp.ContentLength >= 0 || !resp.Close || !errors.Is(err, syscall.ECONNRESET) {
			return Answer{}, fmt.Errorf("read body: %w", err)
		}
		cut = true
	}
	a := Answer{Status: resp.StatusCode, Header: resp.Header, Body: body, Cut: cut}
	if method == http.MethodHead {
		// The request said Connection: close, so whatever follows the headers is a body that
		// HEAD must not have.
		rest, _ := io.ReadAll(io.LimitReader(br, maxAnswer))
		a.Trailing = len(rest)
	}
	return a, nil
}

// netHTTPAnswer tells whether a is Go's net/http server refusing the request before any handler:
// a text/plain 400 or 431 whose body repeats the status (after a HEAD, the body is not read as
// one; the services never answer text/plain).
func netHTTPAnswer(a Answer, head bool) bool {
	if a.Status != http.StatusBadRequest && a.Status != http.StatusRequestHeaderFieldsTooLarge {
		return false
	}
	if !strings.HasPrefix(a.Header.Get("Content-Type"), "text/plain") {
		return false
	}
	text := []byte(strconv.Itoa(a.Status) + " " + http.StatusText(a.Status))
	if a.Cut {
		return bytes.HasPrefix(text, a.Body) // what arrived before the reset
	}
	return bytes.HasPrefix(a.Body, []byte(strconv.Itoa(a.Status)+" ")) || head && len(a.Body) == 0
}

// Verdict is the outcome of checking one answer.
type Verdict struct {
	ByNetHTTP bool   // accepted as net/http's own refusal
	Err       error  // nil: the answer is acceptable
	Got       string // status and code seen
}

// Check judges answer a to case c.
func Check(env Envelope, c Case, a Answer) Verdict {
	v := Verdict{Got: strconv.Itoa(a.Status)}
	fail := func(format string, args ...any) Verdict {
		v.Err = fmt.Errorf(format, args...)
		return v
	}
	if a.Status >= 500 {
		return fail("server error %d: %.200s", a.Status, a.Body)
	}
	if c.NetHTTP && netHTTPAnswer(a, c.method() == http.MethodHead) {
		v.ByNetHTTP = true
		return v
	}
	if a.Status < 400 {
		return fail("status %d, want a 4xx (%s): %.200s", a.Status, wantList(c.Want), a.Body)
	}
	var candidates []Outcome
	for _, o := range c.Want {
		if o.Status == a.Status {
			candidates = append(candidates, o)
		}
	}
	if len(candidates) == 0 {
		return fail("status %d, want %s: %.200s", a.Status, wantList(c.Want), a.Body)
	}
	if a.Status == http.StatusMethodNotAllowed {
		allow := a.Header.Get("Allow")
		if allow == "" || (c.Allow != "" && !sameMethods(allow, c.Allow)) {
			return fail("405 with Allow %q, want %q", allow, c.Allow)
		}
	}
	if c.method() == http.MethodHead {
		if len(a.Body) != 0 || a.Trailing != 0 {
			return fail("HEAD answered with a body (%d+%d bytes)", len(a.Body), a.Trailing)
		}
		return v
	}
	if mt, _, err := mime.ParseMediaType(a.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return fail("Content-Type %q, want application/json: %.200s", a.Header.Get("Content-Type"), a.Body)
	}
	code, params, err := ParseEnvelope(env, a.Body)
	if err != nil {
		return fail("%v: %.300s", err, a.Body)
	}
	v.Got += " " + code
	for _, o := range candidates {
		if o.Code != code {
			continue
		}
		if o.Params != nil && !reflect.DeepEqual(normalize(o.Params), params) {
			return fail("params %v, want %v", params, o.Params)
		}
		return v
	}
	return fail("code %q, want %s", code, wantList(c.Want))
}

// sameMethods tells whether two Allow headers list the same methods.
func sameMethods(a, b string) bool {
	split := func(s string) []string {
		var ms []string
		for _, m := range strings.Split(s, ",") {
			ms = append(ms, strings.TrimSpace(m))
		}
		slices.Sort(ms)
		return ms
	}
	return slices.Equal(split(a), split(b))
}

func (c Case) method() string {
	if c.Raw != nil {
		m, _, _ := strings.Cut(string(c.Raw), " ")
		return m
	}
	return c.Method
}

func wantList(ws []Outcome) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.String()
	}
	return strings.Join(parts, " | ")
}

// normalize round-trips through JSON so that numbers compare as decoded ones.
func normalize(m map[string]any) map[string]any {
	b, _ := json.Marshal(m)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// ParseEnvelope decodes an error body in envelope env strictly and returns its code (for the
// forum, the first error's code and params): no key beside the envelope's, a non-empty code and
// message, params an object.
func ParseEnvelope(env Envelope, body []byte) (string, map[string]any, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return "", nil, fmt.Errorf("body is not a JSON object: %v", err)
	}
	switch env {
	case StatsEnvelope:
		var code string
		if len(top) != 1 || json.Unmarshal(top["error"], &code) != nil || code == "" {
			return "", nil, fmt.Errorf(`body is not {"error": CODE}`)
		}
		return code, nil, nil
	default:
		var errs []map[string]json.RawMessage
		if len(top) != 1 || json.Unmarshal(top["errors"], &errs) != nil || len(errs) == 0 {
			return "", nil, fmt.Errorf(`body is not {"errors": [...]}`)
		}
		var (
			code, msg string
			params    map[string]any
		)
		e := errs[0]
		if json.Unmarshal(e["code"], &code) != nil || code == "" {
			return "", nil, fmt.Errorf("errors[0].code is not a non-empty string")
		}
		if json.Unmarshal(e["message"], &msg) != nil || msg == "" {
			return "", nil, fmt.Errorf("errors[0].message is not a non-empty string")
		}
		if json.Unmarshal(e["params"], &params) != nil || params == nil {
			return "", nil, fmt.Errorf("errors[0].params is not an object")
		}
		return code, params, nil
	}
}

// Result is one case's run.
type Result struct {
	Case    Case
	Answer  Answer
	Verdict Verdict
}

// Run sends every case of corp to addr with a few connections in parallel and judges each.
func Run(ctx context.Context, addr string, corp Corpus, parallel int) []Result {
	out := make([]Result, len(corp.Cases))
	idx := make(chan int)
	var wg sync.WaitGroup
	for range max(1, parallel) {
		wg.Go(func() {
			for i := range idx {
				c := corp.Cases[i]
				a, err := Send(ctx, addr, c)
				r := Result{Case: c, Answer: a}
				if err != nil {
					r.Verdict = Verdict{Err: fmt.Errorf("no answer: %w", err)}
				} else {
					r.Verdict = Check(corp.Envelope, c, a)
				}
				out[i] = r
			}
		})
	}
	for i := range corp.Cases {
		idx <- i
	}
	close(idx)
	wg.Wait()
	return out
}

// Summary counts results by category (the part of the name before the first '/').
type Summary struct {
	Total, Passed, ByNetHTTP int
	Statuses                 map[int]int
	Failures                 []Result
}

// Summarize sums up results.
func Summarize(rs []Result) Summary {
	s := Summary{Statuses: map[int]int{}}
	for _, r := range rs {
		s.Total++
		s.Statuses[r.Answer.Status]++
		if r.Verdict.Err != nil {
			s.Failures = append(s.Failures, r)
			continue
		}
		s.Passed++
		if r.Verdict.ByNetHTTP {
			s.ByNetHTTP++
		}
	}
	return s
}

// String is a one-paragraph summary.
func (s Summary) String() string {
	codes := make([]int, 0, len(s.Statuses))
	for c := range s.Statuses {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d×%d", s.Statuses[c], c))
	}
	return fmt.Sprintf("%d cases, %d passed (%d refused by net/http itself), %d failed; statuses: %s",
		s.Total, s.Passed, s.ByNetHTTP, len(s.Failures), strings.Join(parts, " "))
}
