package config

import (
	"net/netip"
	"slices"
	"testing"
	"time"
)

// TRUSTED_PROXIES takes addresses and CIDR prefixes, comma-separated; anything else stops the
// service at start. HTTP_READ_TIMEOUT is a Go duration from 100ms to 10m.
func TestLoadCommonHTTP(t *testing.T) {
	tests := []struct {
		name, proxies, timeout string
		want                   []netip.Prefix
		wantTimeout            time.Duration
		fails                  bool
	}{
		{"unset", "", "", nil, DefaultReadTimeout, false},
		{"address and prefixes", " 10.0.0.1, 192.168.0.0/16 ,2001:db8::/32,::ffff:10.0.0.2", "5s",
			[]netip.Prefix{netip.MustParsePrefix("10.0.0.1/32"), netip.MustParsePrefix("192.168.0.0/16"),
				netip.MustParsePrefix("2001:db8::/32"), netip.MustParsePrefix("10.0.0.2/32")}, 5 * time.Second, false},
		{"prefix with host bits masked", "10.1.2.3/8", "", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, DefaultReadTimeout, false},
		{"host name", "proxy.local", "", nil, 0, true},
		{"bad prefix length", "10.0.0.0/33", "", nil, 0, true},
		{"timeout too short", "", "10ms", nil, 0, true},
		{"timeout not a duration", "", "30", nil, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("TRUSTED_PROXIES", tt.proxies)
			t.Setenv("HTTP_READ_TIMEOUT", tt.timeout)
			c, err := LoadCommon(":1", "sqlite:x")
			if (err != nil) != tt.fails {
				t.Fatalf("err %v, want failure %v", err, tt.fails)
			}
			if err == nil && (!slices.Equal(c.HTTP.TrustedProxies, tt.want) || c.HTTP.ReadTimeout != tt.wantTimeout) {
				t.Fatalf("%v %v, want %v %v", c.HTTP.TrustedProxies, c.HTTP.ReadTimeout, tt.want, tt.wantTimeout)
			}
		})
	}
}
