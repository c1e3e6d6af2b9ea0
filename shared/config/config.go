// Package config reads service configuration from the environment.
//
// Every service takes its settings from environment variables (README.md, Configuration). The helpers
// here fail loudly on a malformed value instead of silently falling back to the default, so a
// typo in a manifest shows at start rather than as odd behaviour in production.
package config

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"
)

// String returns the value of key, or def when the variable is unset or empty.
func String(key, def string) string {
	if v, ok := os.LookupEnv(key); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	return def
}

// Int returns key parsed as a decimal integer, or def when unset.
func Int(key string, def int) (int, error) {
	return parsed(key, def, strconv.Atoi, "an integer")
}

// Bool returns key parsed with strconv.ParseBool, or def when unset.
func Bool(key string, def bool) (bool, error) {
	return parsed(key, def, strconv.ParseBool, "a boolean")
}

// Duration returns key parsed with time.ParseDuration, or def when unset.
func Duration(key string, def time.Duration) (time.Duration, error) {
	return parsed(key, def, time.ParseDuration, "a duration")
}

// parsed returns key read by parse, or def when unset; a malformed value is an error that names
// the variable, its value and what was expected.
func parsed[T any](key string, def T, parse func(string) (T, error), what string) (T, error) {
	v := String(key, "")
	if v == "" {
		return def, nil
	}
	x, err := parse(v)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("%s: %q is not %s", key, v, what)
	}
	return x, nil
}

// Common holds the settings every service reads.
type Common struct {
	HTTPAddr       string
	DatabaseURL    string
	RedisURL       string
	LogLevel       string
	LogFormat      string
	MigrateOnStart bool
	// HTTP is what shared/server needs beyond the address: it is handed to server.New as is.
	HTTP HTTP
}

// HTTP holds the settings of the HTTP server every service runs.
type HTTP struct {
	// ReadTimeout bounds the reading of one request, head and body (HTTP_READ_TIMEOUT); 0 means
	// shared/server's default.
	ReadTimeout time.Duration
	// TrustedProxies are the peers whose X-Forwarded-For is believed (TRUSTED_PROXIES); none
	// by default, so that a client cannot choose the address its requests are counted under.
	TrustedProxies []netip.Prefix
}

// DefaultReadTimeout is HTTP_READ_TIMEOUT's default.
const DefaultReadTimeout = 30 * time.Second

// Prefixes returns key parsed as a comma-separated list of IP addresses and CIDR prefixes (an
// address alone is a prefix of its full length), or nil when unset.
func Prefixes(key string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(String(key, ""), ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil || a.Zone() != "" {
				return nil, fmt.Errorf("%s: %q is not an IP address or CIDR prefix", key, f)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Logging is the level and format of the service's log (LOG_LEVEL, LOG_FORMAT).
func (c Common) Logging() (level, format string) { return c.LogLevel, c.LogFormat }

// LoadCommon reads HTTP_ADDR, DATABASE_URL, REDIS_URL, LOG_LEVEL, LOG_FORMAT, MIGRATE_ON_START,
// HTTP_READ_TIMEOUT and TRUSTED_PROXIES.
func LoadCommon(defaultAddr, defaultDatabaseURL string) (Common, error) {
	migrateOnStart, err := Bool("MIGRATE_ON_START", true)
	if err != nil {
		return Common{}, err
	}
	readTimeout, err := Duration("HTTP_READ_TIMEOUT", DefaultReadTimeout)
	if err != nil {
		return Common{}, err
	}
	// Under 100 ms no client could send a form; past 10 minutes a slow sender holds a connection
	// (and its memory) for too long.
	if readTimeout < 100*time.Millisecond || readTimeout > 10*time.Minute {
		return Common{}, fmt.Errorf("HTTP_READ_TIMEOUT must be from 100ms to 10m, not %v", readTimeout)
	}
	proxies, err := Prefixes("TRUSTED_PROXIES")
	if err != nil {
		return Common{}, err
	}
	c := Common{
		HTTPAddr:       String("HTTP_ADDR", defaultAddr),
		DatabaseURL:    String("DATABASE_URL", defaultDatabaseURL),
		RedisURL:       String("REDIS_URL", ""),
		LogLevel:       String("LOG_LEVEL", "info"),
		LogFormat:      String("LOG_FORMAT", "json"),
		MigrateOnStart: migrateOnStart,
		HTTP:           HTTP{ReadTimeout: readTimeout, TrustedProxies: proxies},
	}
	return c, nil
}
