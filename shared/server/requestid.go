package server

import (
	"crypto/rand"
	"encoding/hex"
)

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
