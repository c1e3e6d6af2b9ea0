package server

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"sync/atomic"
)

// Request IDs are a random per-process prefix and a counter: unique across replicas and restarts
// with overwhelming probability, and without a random read (a system call) on every request.
var (
	requestIDPrefix  = newRequestIDPrefix()
	requestIDCounter atomic.Uint64
)

func newRequestIDPrefix() [8]byte {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return b
}

func newRequestID() string {
	var b [16]byte
	copy(b[:8], requestIDPrefix[:])
	binary.BigEndian.PutUint64(b[8:], requestIDCounter.Add(1))
	return hex.EncodeToString(b[:])
}
