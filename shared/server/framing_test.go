package server

import (
	"bufio"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// feedAll feeds stream to a new framer in pieces of step bytes and returns its verdicts and
// whether it lost its way.
func feedAll(stream string, step int) (verdicts []bool, lost bool) {
	var f framer
	for i := 0; i < len(stream); i += step {
		f.feed([]byte(stream[i:min(i+step, len(stream))]))
	}
	return f.verdicts, f.state == stLost
}

func TestFramer(t *testing.T) {
	const get = "GET / HTTP/1.1\r\nHost: a\r\n\r\n"
	tests := []struct {
		name     string
		stream   string
		verdicts []bool
		lost     bool
	}{
		{"one GET", get, []bool{true}, false},
		{"pipelined GETs, bare LF lines", get + "GET /x HTTP/1.1\nHost: a\n\n" + get, []bool{true, true, true}, false},
		{"Content-Length body holding a head", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 27\r\n\r\n" + get + get, []bool{true, true}, false},
		{"chunked body holding a head", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1b;ext=1 \r\n" + get + "\r\n0\r\n\r\n" + get, []bool{true, true}, false},
		{"CR/LF after a POST skipped", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\nx\r\n" + get, []bool{true, true}, false},
		{"Content-Length and chunked: refused", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + get, []bool{false, true}, false},
		{"names in any case", "POST / HTTP/1.1\r\nHost: a\r\ncontent-length: 4\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n", []bool{false}, false},
		{"chunked on HTTP/1.0: refused, framed by Content-Length", "POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + get, []bool{false, true}, false},
		{"chunked on HTTP/1.0 without length: no body", "POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + get, []bool{false, true}, false},
		{"folded field is not a name", "GET / HTTP/1.1\r\nHost: a\r\nX: y\r\n Transfer-Encoding: chunked\r\n\r\n" + get, []bool{true, true}, false},
		{"chunk size of 17 digits: lost", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFFFFFFFFFFF1\r\n", []bool{true}, true},
		{"chunk line with bare LF: lost", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\nx\r\n0\r\n\r\n", []bool{true}, true},
		{"no CRLF after chunk data: lost", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nxy\r\n0\r\n\r\n", []bool{true}, true},
		{"trailer fields: lost", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: y\r\n\r\n" + get, []bool{true}, true},
		{"unsupported encoding: lost", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n" + get, nil, true},
		{"malformed request line: lost", "GARBAGE\r\n\r\n" + get, nil, true},
		{"head over the cap: lost", "GET / HTTP/1.1\r\nX: " + strings.Repeat("a", maxFramedHead) + "\r\n\r\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, step := range []int{1, 3, 7, len(tt.stream)} {
				v, lost := feedAll(tt.stream, step)
				if !slices.Equal(v, tt.verdicts) || lost != tt.lost {
					t.Fatalf("in pieces of %d: verdicts %v lost %v, want %v %v", step, v, lost, tt.verdicts, tt.lost)
				}
			}
		})
	}
}

// netHTTPHeads reads stream as net/http's server does, and returns the head of every request
// it would serve before its first refusal, as sent, and whether it read the stream to its end
// without a refusal. A request with trailer fields ends the list, as the framer stops there.
func netHTTPHeads(stream string) (heads []string, clean bool) {
	sr := strings.NewReader(stream)
	br := bufio.NewReader(sr)
	at := func() int { return len(stream) - sr.Len() - br.Buffered() }
	last := ""
	for {
		if last == http.MethodPost {
			peek, _ := br.Peek(4)
			n := 0
			for _, b := range peek {
				if b != '\r' && b != '\n' {
					break
				}
				n++
			}
			_, _ = br.Discard(n)
		}
		if _, err := br.Peek(1); err == io.EOF {
			return heads, true
		}
		start := at()
		req, err := http.ReadRequest(br)
		if err != nil {
			return heads, false
		}
		heads = append(heads, stream[start:at()])
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return heads, false
		}
		if len(req.Trailer) > 0 {
			return heads, false
		}
		last = req.Method
	}
}

// FuzzFramer holds the framer to net/http: on any stream of pipelined requests, every request
// net/http would serve (before a refusal, which closes the connection) has a verdict, in order,
// fed in any pieces, and the verdict refuses exactly the heads with both Content-Length and
// Transfer-Encoding or with Transfer-Encoding on HTTP/1.0.
func FuzzFramer(f *testing.F) {
	f.Add("GET / HTTP/1.1\r\nHost: a\r\n\r\nPOST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc", uint8(5))
	f.Add("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3;x\r\nabc\r\n0\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", uint8(2))
	f.Add("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", uint8(9))
	f.Add("POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\nx\nGET / HTTP/1.1\nHost: a\n\n", uint8(1))
	f.Add("GET / HTTP/1.1\r\nHost: a\r\nX: y\r\n\tTransfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n", uint8(4))
	f.Fuzz(func(t *testing.T, stream string, step uint8) {
		want, clean := netHTTPHeads(stream)
		v, lost := feedAll(stream, int(step)+1)
		if len(v) < len(want) {
			t.Fatalf("net/http serves %d requests %q, the framer judged %d", len(want), want, len(v))
		}
		if clean && (lost || len(v) != len(want)) {
			t.Fatalf("net/http reads the stream cleanly (%d requests), the framer: %d verdicts, lost %v", len(want), len(v), lost)
		}
		// Each verdict against the head as sent and as net/http parses it.
		for i, raw := range want {
			lower := strings.ToLower(raw)
			cl := strings.Contains(lower, "\ncontent-length:")
			te := strings.Contains(lower, "\ntransfer-encoding:")
			req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
			if err != nil {
				t.Fatalf("head %d %q: %v", i, raw, err)
			}
			if wantOK := !te || (!cl && req.ProtoAtLeast(1, 1)); v[i] != wantOK {
				t.Fatalf("head %d %q: verdict %v, want %v", i, raw, v[i], wantOK)
			}
		}
	})
}

// BenchmarkFramer is the framer's cost per keep-alive request (a GET and a form POST), against
// nothing; BenchmarkKeepAlive measures it within a served request.
func BenchmarkFramer(b *testing.B) {
	stream := []byte("GET /api/conversations/1/messages?page=2 HTTP/1.1\r\nHost: 127.0.0.1:8081\r\nUser-Agent: Go-http-client/1.1\r\nForum-Api-Key: demo-alice-user-key-0123456789abcdef\r\nAccept-Encoding: gzip\r\n\r\n" +
		"POST /api/conversations/10/mark-read HTTP/1.1\r\nHost: 127.0.0.1:8081\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 15\r\n\r\ndate=1767225600")
	var f framer
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		f.feed(stream)
		f.next()
		f.next()
	}
}
