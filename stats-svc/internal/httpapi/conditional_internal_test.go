package httpapi

import (
	"testing"
	"time"
)

func TestNoneMatch(t *testing.T) {
	const tag = `"abc"`
	tests := []struct {
		fields []string
		want   bool
	}{
		{nil, false},
		{[]string{`"abc"`}, true},
		{[]string{`W/"abc"`}, true}, // weak comparison
		{[]string{`*`}, true},
		{[]string{`"x", "abc"`}, true},
		{[]string{`"x",W/"abc"`}, true},
		{[]string{`"x"`, `"abc"`}, true}, // several fields
		{[]string{`"x", "y"`}, false},
		{[]string{`abc`}, false},
		{[]string{`"ab`}, false},
		{[]string{`"abc`}, false},
		{[]string{`"abcd"`}, false},
		{[]string{`"a,bc", "abc"`}, true}, // a comma inside a tag is not a separator
		{[]string{``}, false},
		{[]string{` , ,`}, false},
	}
	for _, tt := range tests {
		if got := noneMatch(tt.fields, tag); got != tt.want {
			t.Errorf("noneMatch(%q) = %v, want %v", tt.fields, got, tt.want)
		}
	}
}

func FuzzNoneMatch(f *testing.F) {
	for _, s := range []string{`"abc"`, `W/"abc", *`, `"a,b"`, `,,W/`, `"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, field string) {
		// A malformed element stops the parse (RFC 9110 gives it no meaning),
		// so only after a well-formed list must the tag still be found.
		got := noneMatch([]string{field + `, "abc"`}, `"abc"`)
		if wellFormed(field) && !got {
			t.Fatalf("%q followed by the tag does not match", field)
		}
	})
}

// wellFormed is an independent reading of an If-None-Match list.
func wellFormed(field string) bool {
	f := field
	for {
		for f != "" && (f[0] == ' ' || f[0] == '\t' || f[0] == ',') {
			f = f[1:]
		}
		if f == "" {
			return true
		}
		if f[0] == '*' {
			return true
		}
		if len(f) >= 2 && f[:2] == "W/" {
			f = f[2:]
		}
		if f == "" || f[0] != '"' {
			return false
		}
		i := 1
		for i < len(f) && f[i] != '"' {
			i++
		}
		if i == len(f) {
			return false
		}
		f = f[i+1:]
	}
}

func TestMaxAgeSeconds(t *testing.T) {
	now := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		until time.Time
		want  int
	}{
		{time.Time{}, 60},
		{now.Add(time.Hour), 60},
		{now.Add(61 * time.Second), 60},
		{now.Add(59*time.Second + 999*time.Millisecond), 59}, // rounded down: never past the change
		{now.Add(time.Nanosecond), 0},
		{now, 0},
		{now.Add(-time.Second), 0},
	}
	for _, tt := range tests {
		if got := maxAgeSeconds(tt.until, now); got != tt.want {
			t.Errorf("maxAgeSeconds(%v) = %d, want %d", tt.until.Sub(now), got, tt.want)
		}
	}
}
