package decimal

import (
	"math"
	"strconv"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		s            string
		n            int64
		overflow, ok bool
	}{
		{"0", 0, false, true},
		{"007", 7, false, true},
		{"9223372036854775807", math.MaxInt64, false, true},
		{"9223372036854775808", 0, true, true},
		{"99999999999999999999999999", 0, true, true},
		{"", 0, false, false},
		{"-1", 0, false, false},
		{"+1", 0, false, false},
		{"1.5", 0, false, false},
		{" 1", 0, false, false},
		{"1 ", 0, false, false},
		{"0x10", 0, false, false},
		{"١", 0, false, false}, // a non-ASCII digit
		{"99999999999999999999x", 0, false, false},
	}
	for _, tt := range tests {
		n, overflow, ok := Parse(tt.s)
		if ok != tt.ok || overflow != tt.overflow || (ok && !overflow && n != tt.n) {
			t.Errorf("Parse(%q) = %d, %v, %v; want %d, %v, %v", tt.s, n, overflow, ok, tt.n, tt.overflow, tt.ok)
		}
	}
}

func TestParseID(t *testing.T) {
	for s, want := range map[string]int64{"1": 1, "42": 42, "0042": 42, "9223372036854775807": math.MaxInt64} {
		if got, ok := ParseID(s); !ok || got != want {
			t.Errorf("ParseID(%q) = %d, %v; want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "0", "-1", "+1", "1.0", "abc", "9223372036854775808", " 1", "1a"} {
		if got, ok := ParseID(s); ok {
			t.Errorf("ParseID(%q) = %d, true; want refused", s, got)
		}
	}
}

// FuzzParse holds Parse to strconv.ParseInt on digit strings, and to refusal on anything else.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0", "42", "007", "9223372036854775807", "9223372036854775808", "", "-1", "+1", "1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, overflow, ok := Parse(s)
		digits := s != ""
		for i := 0; i < len(s); i++ {
			digits = digits && s[i] >= '0' && s[i] <= '9'
		}
		if ok != digits {
			t.Fatalf("Parse(%q): ok %v, but digits only: %v", s, ok, digits)
		}
		if !ok {
			return
		}
		want, err := strconv.ParseInt(s, 10, 64)
		if overflow != (err != nil) || (!overflow && n != want) {
			t.Fatalf("Parse(%q) = %d, overflow %v; strconv: %d, %v", s, n, overflow, want, err)
		}
	})
}
