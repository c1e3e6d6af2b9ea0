package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
)

// Request smuggling: net/http reads a request that carries both Content-Length and
// Transfer-Encoding: chunked as chunked and keeps the connection open, and ignores
// Transfer-Encoding on HTTP/1.0; a proxy in front that frames the same bytes the other way would
// pass a second request hidden in the body. HTTP/1.1 (RFC 9112, section 6.1) asks a server to
// refuse such a request and close the connection. net/http deletes both fields from the header
// map before any handler runs, so the refusal is decided on the wire: every accepted connection
// is read through a framer that follows the requests as net/http does (each head parsed by
// net/http's own parser, then the body skipped by its Content-Length or by its chunk sizes) and
// queues one verdict per request; the handler takes the verdict of the request it serves, in
// order, and a refused one is answered 400 with Connection: close.
//
// The framer must agree with net/http on where every request that net/http accepts starts.
// Where net/http refuses (a malformed head or chunk), it answers and closes the connection, so
// what the framer concludes there does not matter. Where the framer cannot follow (a chunked
// body with trailer fields, or anything it does not parse), it is lost: it refuses every later
// request on the connection rather than guess where they start.

// ErrAmbiguousFraming is the cause of the 400 that refuses a request framed two ways (both
// Content-Length and Transfer-Encoding, or Transfer-Encoding on HTTP/1.0), or a later request on
// a connection whose framing could not be followed.
var ErrAmbiguousFraming = errors.New("request framing is ambiguous: Content-Length with Transfer-Encoding, Transfer-Encoding on HTTP/1.0, or a connection whose framing could not be followed")

const (
	// maxFramedHead bounds the head the framer keeps: above net/http's own refusal
	// (MaxHeaderBytes and its 4 KiB slack), so that a head net/http accepts always fits.
	maxFramedHead = maxReadHeaderBytes + 8<<10
	// maxChunkLine is net/http's limit of a chunk-size line (its read buffer), CRLF included.
	maxChunkLine = 4096
)

type frameState uint8

const (
	stHead      frameState = iota // reading a head, after skipping the CR/LF a POST may leave
	stBody                        // skipping a Content-Length body
	stChunkLine                   // reading a chunk-size line
	stChunkData                   // skipping a chunk's data
	stChunkEnd                    // the CRLF after a chunk's data
	stTrailer                     // after the last chunk: CRLF, or trailer fields (lost)
	stLost                        // cannot follow: every later request refused
)

// framer follows a stream of HTTP/1 requests. Feed it the bytes in order, in any pieces.
type framer struct {
	state    frameState
	buf      []byte // the head or chunk-size line being read
	scanned  int    // bytes of buf already searched for a line end
	lineAt   int    // where the current head line starts in buf
	remain   uint64 // bytes left of a body or chunk
	skipCRLF int    // CR/LF bytes net/http skips before the next head (after a POST)
	verdicts []bool // per request seen, in order: true = serve
}

// feed follows p.
func (f *framer) feed(p []byte) {
	for len(p) > 0 {
		switch f.state {
		case stLost:
			return
		case stHead:
			for f.skipCRLF > 0 && len(p) > 0 {
				if p[0] != '\r' && p[0] != '\n' {
					f.skipCRLF = 0
					break
				}
				p = p[1:]
				f.skipCRLF--
			}
			p = f.head(p)
		case stBody, stChunkData:
			n := uint64(len(p))
			if n > f.remain {
				n = f.remain
			}
			p = p[n:]
			f.remain -= n
			if f.remain == 0 {
				if f.state == stBody {
					f.state = stHead
				} else {
					f.state = stChunkEnd
				}
			}
		case stChunkLine:
			p = f.chunkLine(p)
		case stChunkEnd, stTrailer:
			// Both want exactly CRLF (a trailer field is where the framer gives up).
			need := 2 - len(f.buf)
			n := min(need, len(p))
			f.buf = append(f.buf, p[:n]...)
			p = p[n:]
			if len(f.buf) < 2 {
				return
			}
			ok := f.buf[0] == '\r' && f.buf[1] == '\n'
			f.buf = f.buf[:0]
			switch {
			case !ok:
				f.lose()
			case f.state == stChunkEnd:
				f.state = stChunkLine
			default:
				f.state = stHead
			}
		}
	}
}

func (f *framer) lose() {
	f.state = stLost
	f.buf = nil
}

// head takes bytes of a head until its empty line, then judges it; it returns the bytes left.
func (f *framer) head(p []byte) []byte {
	if len(p) == 0 {
		return p
	}
	f.buf = append(f.buf, p...)
	for {
		i := bytes.IndexByte(f.buf[f.scanned:], '\n')
		if i < 0 {
			f.scanned = len(f.buf)
			if len(f.buf) > maxFramedHead {
				f.lose()
			}
			return nil
		}
		end := f.scanned + i + 1
		line := f.buf[f.lineAt:end]
		requestLine := f.lineAt == 0
		f.scanned, f.lineAt = end, end
		// The head ends at the first empty line after the request line: nothing but LF or CRLF
		// (textproto strips one CR before the LF).
		empty := len(line) == 1 || (len(line) == 2 && line[0] == '\r')
		if !empty || requestLine {
			continue
		}
		rest := p[len(p)-(len(f.buf)-end):]
		if end > maxFramedHead {
			f.lose()
			return nil
		}
		f.judge(f.buf[:end])
		f.buf, f.scanned, f.lineAt = f.buf[:0], 0, 0
		return rest
	}
}

// judge reads a complete head as net/http does and queues its verdict.
func (f *framer) judge(head []byte) {
	req, err := http.ReadRequest(bufio.NewReaderSize(bytes.NewReader(head), len(head)+16))
	if err != nil {
		f.lose() // net/http refuses it too and closes the connection
		return
	}
	hasCL, hasTE := false, false
	for _, line := range bytes.Split(head, []byte("\n"))[1:] {
		name, _, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		hasCL = hasCL || bytes.EqualFold(name, []byte("Content-Length"))
		hasTE = hasTE || bytes.EqualFold(name, []byte("Transfer-Encoding"))
	}
	f.verdicts = append(f.verdicts, !hasTE || (!hasCL && req.ProtoAtLeast(1, 1)))
	if req.Method == http.MethodPost {
		f.skipCRLF = 4
	}
	switch {
	case len(req.TransferEncoding) > 0: // net/http accepts "chunked" alone
		f.state = stChunkLine
	case req.ContentLength > 0:
		f.state, f.remain = stBody, uint64(req.ContentLength)
	}
}

// chunkLine takes a chunk-size line as net/http's chunked reader does; it returns the bytes left.
func (f *framer) chunkLine(p []byte) []byte {
	i := bytes.IndexByte(p, '\n')
	if i < 0 {
		f.buf = append(f.buf, p...)
		if len(f.buf) >= maxChunkLine {
			f.lose()
		}
		return nil
	}
	f.buf = append(f.buf, p[:i+1]...)
	p = p[i+1:]
	line := f.buf
	f.buf = f.buf[:0]
	if len(line) > maxChunkLine || len(line) < 2 || bytes.IndexByte(line, '\r') != len(line)-2 {
		f.lose()
		return nil
	}
	line = bytes.TrimRight(line[:len(line)-2], " \t")
	line, _, _ = bytes.Cut(line, []byte(";"))
	n, ok := parseChunkSize(line)
	switch {
	case !ok:
		f.lose()
	case n == 0:
		f.state = stTrailer
	default:
		f.state, f.remain = stChunkData, n
	}
	return p
}

// parseChunkSize is net/http's: 1 to 16 hexadecimal digits.
func parseChunkSize(v []byte) (uint64, bool) {
	if len(v) == 0 || len(v) > 16 {
		return 0, false
	}
	var n uint64
	for _, b := range v {
		switch {
		case '0' <= b && b <= '9':
			b -= '0'
		case 'a' <= b && b <= 'f':
			b = b - 'a' + 10
		case 'A' <= b && b <= 'F':
			b = b - 'A' + 10
		default:
			return 0, false
		}
		n = n<<4 | uint64(b)
	}
	return n, true
}

// next pops the verdict of the next request on the connection: false refuses it. With none
// queued (the framer lost its way before that head) it refuses.
func (f *framer) next() bool {
	if len(f.verdicts) == 0 {
		return false
	}
	v := f.verdicts[0]
	f.verdicts = f.verdicts[1:]
	return v
}

// framedConn is an accepted connection read through a framer.
type framedConn struct {
	net.Conn
	mu sync.Mutex // net/http reads in the background while a handler takes its verdict
	f  framer
}

func (c *framedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.f.feed(p[:n])
		c.mu.Unlock()
	}
	return n, err
}

func (c *framedConn) next() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.f.next()
}

type framingListener struct{ net.Listener }

func (l framingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &framedConn{Conn: c}, nil
}

type framedConnKey struct{}
type refusedKey struct{}

// connContext remembers the framed connection in every request's context.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if fc, ok := c.(*framedConn); ok {
		return context.WithValue(ctx, framedConnKey{}, fc)
	}
	return ctx
}

// judgeFraming takes each request's verdict, in the order net/http serves them, and marks a
// refused one for refuseAmbiguous; its connection closes after the answer.
func judgeFraming(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fc, ok := r.Context().Value(framedConnKey{}).(*framedConn); ok && !fc.next() {
			w.Header().Set("Connection", "close")
			r = r.WithContext(context.WithValue(r.Context(), refusedKey{}, true))
		}
		h.ServeHTTP(w, r)
	})
}

// framingRefused reports whether r was judged ambiguous by its connection's framer.
func framingRefused(r *http.Request) bool {
	v, _ := r.Context().Value(refusedKey{}).(bool)
	return v
}
