package loadgen

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// ParseTargets reads a targets file. Each target is a line "[METHOD] URL", followed by any
// number of "Name: value" header lines, an optional "@expect 200,404" line and an optional
// "@body TEXT" line; a blank line or the next target line ends it. Lines starting with # are
// comments.
//
//	GET http://127.0.0.1:8082/api/chat-icons
//
//	POST http://127.0.0.1:8081/api/conversations/10/mark-unread
//	Forum-Api-Key: <KEY>
//	Content-Type: application/x-www-form-urlencoded
//	@expect 200
func ParseTargets(r io.Reader) ([]Target, error) {
	var (
		out []Target
		cur *Target
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
			cur = nil
		case strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "@"):
			if cur == nil {
				return nil, fmt.Errorf("line %d: %q before any target", n, line)
			}
			if err := directive(cur, line); err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
		case cur != nil && !looksLikeTarget(line):
			name, value, ok := strings.Cut(line, ":")
			name = strings.TrimSpace(name)
			if !ok || name == "" || strings.ContainsAny(name, " \t") {
				return nil, fmt.Errorf("line %d: want a \"Name: value\" header, got %q", n, line)
			}
			cur.Header.Add(name, strings.TrimSpace(value))
		default:
			t, err := ParseTarget(line)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			out = append(out, t)
			cur = &out[len(out)-1]
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no targets")
	}
	return out, nil
}

func directive(t *Target, line string) error {
	name, arg, _ := strings.Cut(line, " ")
	switch name {
	case "@expect":
		codes, err := ParseStatuses(arg)
		if err != nil {
			return err
		}
		t.Expect = codes
	case "@body":
		t.Body = []byte(strings.TrimSpace(arg))
	default:
		return fmt.Errorf("unknown directive %q", name)
	}
	return nil
}

// looksLikeTarget tells a target line from a header line: a header's first word ends with a colon
// or holds one outside a "scheme://".
func looksLikeTarget(line string) bool {
	first, _, _ := strings.Cut(line, " ")
	if strings.HasSuffix(first, ":") {
		return false
	}
	return !strings.Contains(first, ":") || strings.Contains(first, "://")
}

// ParseTarget reads "[METHOD] URL".
func ParseTarget(s string) (Target, error) {
	fields := strings.Fields(s)
	method, raw := http.MethodGet, ""
	switch len(fields) {
	case 1:
		raw = fields[0]
	case 2:
		method, raw = fields[0], fields[1]
	default:
		return Target{}, fmt.Errorf("want \"[METHOD] URL\", got %q", s)
	}
	if !validMethod(method) {
		return Target{}, fmt.Errorf("bad method %q", method)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Target{}, fmt.Errorf("want an absolute http(s) URL, got %q", raw)
	}
	return Target{Method: method, URL: raw, Header: http.Header{}}, nil
}

func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for _, c := range m {
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return true
}

// ParseStatuses reads "200,404".
func ParseStatuses(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 100 || n > 599 {
			return nil, fmt.Errorf("bad status %q", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no status in %q", s)
	}
	return out, nil
}

// ParseHeader reads "Name: value".
func ParseHeader(s string) (string, string, error) {
	name, value, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.ContainsAny(name, " \t") {
		return "", "", fmt.Errorf("want \"Name: value\", got %q", s)
	}
	return http.CanonicalHeaderKey(name), strings.TrimSpace(value), nil
}
