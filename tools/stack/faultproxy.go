package stack

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// Faults are what FaultProxy does to the requests it forwards. The zero value forwards
// everything untouched.
type Faults struct {
	Latency time.Duration // added before forwarding
	// HangEvery makes every Nth request hang until the client gives up (0: never); HangNth
	// makes only the Nth request (counted from the proxy's start) hang.
	HangEvery int
	HangNth   int64
	// BurstEvery and BurstLen answer BurstLen consecutive requests out of every BurstEvery with
	// BurstStatus (default 503) instead of forwarding them.
	BurstEvery, BurstLen int
	BurstStatus          int
	// Down answers every request with BurstStatus (default 503).
	Down bool
}

// FaultProxy is an HTTP reverse proxy in front of the Discord fake that injects latency, hangs
// and bursts of 5xx answers, so that the collector meets a misbehaving Discord.
type FaultProxy struct {
	srv    *http.Server
	ln     net.Listener
	proxy  *httputil.ReverseProxy
	faults atomic.Pointer[Faults]

	n, injected, hung atomic.Int64
	closing           chan struct{}
	once              sync.Once
}

// NewFaultProxy listens on a free port and forwards to target (http://host:port).
func NewFaultProxy(target string) (*FaultProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &FaultProxy{ln: ln, proxy: httputil.NewSingleHostReverseProxy(u), closing: make(chan struct{})}
	// A client giving up on a slow answer is what the faults are for: not worth a log line.
	p.proxy.ErrorLog = log.New(io.Discard, "", 0)
	p.faults.Store(&Faults{})
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// URL is the proxy's base URL.
func (p *FaultProxy) URL() string { return "http://" + p.ln.Addr().String() }

// Set replaces the faults.
func (p *FaultProxy) Set(f Faults) { p.faults.Store(&f) }

// Counts returns requests seen, answers injected (5xx) and requests hung.
func (p *FaultProxy) Counts() (requests, injected, hung int64) {
	return p.n.Load(), p.injected.Load(), p.hung.Load()
}

func (p *FaultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := p.n.Add(1)
	f := p.faults.Load()
	if f.Latency > 0 {
		select {
		case <-time.After(f.Latency):
		case <-r.Context().Done():
			return
		case <-p.closing:
			return
		}
	}
	if (f.HangEvery > 0 && n%int64(f.HangEvery) == 0) || n == f.HangNth {
		p.hung.Add(1)
		select {
		case <-r.Context().Done():
		case <-p.closing:
		}
		return
	}
	status := f.BurstStatus
	if status == 0 {
		status = http.StatusServiceUnavailable
	}
	if f.Down || (f.BurstEvery > 0 && (n-1)%int64(f.BurstEvery) < int64(f.BurstLen)) {
		p.injected.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"message": "upstream connect error (injected)", "code": 0}`))
		return
	}
	p.proxy.ServeHTTP(w, r)
}

// Close stops the proxy and releases hung requests.
func (p *FaultProxy) Close() {
	p.once.Do(func() { close(p.closing) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = p.srv.Shutdown(ctx)
}
