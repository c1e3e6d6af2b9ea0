// Package config reads service configuration from the environment.
//
// Every service takes its settings from environment variables (contract section 2). The helpers
// here fail loudly on a malformed value instead of silently falling back to the default, so a
// typo in a manifest shows at start rather than as odd behaviour in production.
package config

import (
	"fmt"
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
	v := String(key, "")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not an integer", key, v)
	}
	return n, nil
}

// Bool returns key parsed with strconv.ParseBool, or def when unset.
func Bool(key string, def bool) (bool, error) {
	v := String(key, "")
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s: %q is not a boolean", key, v)
	}
	return b, nil
}

// Duration returns key parsed with time.ParseDuration, or def when unset.
func Duration(key string, def time.Duration) (time.Duration, error) {
	v := String(key, "")
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a duration", key, v)
	}
	return d, nil
}

// Common holds the settings every service reads.
type Common struct {
	HTTPAddr       string
	DatabaseURL    string
	RedisURL       string
	LogLevel       string
	LogFormat      string
	MigrateOnStart bool
}

// LoadCommon reads HTTP_ADDR, DATABASE_URL, REDIS_URL, LOG_LEVEL, LOG_FORMAT and MIGRATE_ON_START.
func LoadCommon(defaultAddr, defaultDatabaseURL string) (Common, error) {
	migrateOnStart, err := Bool("MIGRATE_ON_START", true)
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
	}
	return c, nil
}
