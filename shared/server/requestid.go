package server

import (
	"crypto/rand"
	"encoding/hex"
)

// maxRequestIDLen bounds an X-Request-ID taken from a caller.
const maxRequestIDLen = 64

// newRequestID returns 128 random bits in hex. They come from crypto/rand, not from a counter, so
// that the ids handed out reveal nothing of the traffic (a counter tells a client how many
// requests were served between two of its own); BenchmarkNewRequestID measures the cost.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the program instead)
	return hex.EncodeToString(b[:])
}

// validRequestID reports whether a caller's X-Request-ID is kept: 1 to 64 characters of
// [A-Za-z0-9._-], which a log line or a header can carry as is. Anything else is replaced.
func validRequestID(id string) bool {
	if len(id) == 0 || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
