package server

import (
	"net"
	"net/netip"

	"github.com/labstack/echo/v4"
)

// ipExtractor is how c.RealIP() finds the client's address. Without trusted proxies it is the
// connection's peer: X-Forwarded-For is anyone's to write, so believing it would let a client
// choose the address its requests are counted and limited under. When the peer is one of
// trusted, X-Forwarded-For is read from its right end and the first hop that is not trusted is
// the client (the hops to its left were written by that client and prove nothing). Loopback,
// link-local and private addresses are trusted only when listed.
func ipExtractor(trusted []netip.Prefix) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, p := range trusted {
		opts = append(opts, echo.TrustIPRange(&net.IPNet{
			IP:   net.IP(p.Addr().AsSlice()),
			Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen()),
		}))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}
