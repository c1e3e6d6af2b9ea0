package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// The HTTP client of deliveries. Where a target may point is checked on the address actually
// dialled, after resolution (the dialer's Control hook sees the IP the socket connects to), so
// that a name that resolves to a public address when checked and to a private one when used (DNS
// rebinding) is refused too. No proxy is used (it would dial in our place), redirects are not
// followed (a 3xx is a failed attempt: a redirect could lead inside), and every phase of an
// attempt is bounded by the attempt's timeout.

// ErrPrivateAddress is the dial error of a refused address.
var ErrPrivateAddress = errors.New("target address is private, loopback, link-local or otherwise not public")

// refused are the ranges a delivery never dials unless private targets are allowed: besides what
// netip classifies (loopback, private, link-local, multicast, unspecified), shared address space
// (carrier-grade NAT), "this network", benchmarking, documentation and reserved ranges, and
// NAT64 and 6to4 prefixes that embed an IPv4 address.
var refused = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("100::/64"),
}

// PublicAddress tells whether a may be dialled by a delivery.
func PublicAddress(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range refused {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// maxAnswer is how much of a receiver's answer body is read (and thrown away, never logged) so
// that the connection can be reused.
const maxAnswer = 4 << 10

// NewClient returns the deliveries' client: each attempt bounded by timeout, private targets
// refused unless allowPrivate.
func NewClient(timeout time.Duration, allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.Control = func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("dial %s: %w", address, err)
			}
			if !PublicAddress(ap.Addr()) {
				return fmt.Errorf("dial %s: %w", address, ErrPrivateAddress)
			}
			return nil
		}
	}
	transport := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   timeout,
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Transport: transport,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
