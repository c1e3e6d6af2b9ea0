// Package decimal reads the non-negative decimal integers of the API's inputs (path ids, the
// Forum-Api-User header, `page`, the mark-read `date`): ASCII digits only, no sign, no space,
// leading zeros allowed. It is shared by conversation (page, date), auth (the user header) and
// httpapi (path ids) so that the three read numbers alike.
package decimal

import "math"

// Parse reads a non-empty string of ASCII digits. overflow reports a value beyond int64 (n is
// then meaningless); ok is false for anything that is not only digits.
func Parse(s string) (n int64, overflow, ok bool) {
	if s == "" {
		return 0, false, false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false, false
		}
		d := int64(c - '0')
		if overflow || n > (math.MaxInt64-d)/10 {
			overflow = true
			continue
		}
		n = n*10 + d
	}
	return n, overflow, true
}

// ParseID reads an identifier: at least 1 and at most math.MaxInt64.
func ParseID(s string) (int64, bool) {
	n, overflow, ok := Parse(s)
	if !ok || overflow || n < 1 {
		return 0, false
	}
	return n, true
}
