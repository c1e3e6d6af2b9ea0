package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Signing, as the Standard Webhooks specification has it: the secret is "whsec_" and the base64
// of the key; a delivery carries webhook-id (the same on every attempt), webhook-timestamp (the
// attempt's Unix seconds) and webhook-signature, "v1," and the base64 of the HMAC-SHA256, keyed by
// the key, of "id.timestamp.body". Any receiver library of the specification verifies it.

// SecretPrefix starts every secret.
const SecretPrefix = "whsec_"

// Header names of a delivery.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// secretBytes is the length of a generated key: 24 bytes, 32 base64 characters, as the
// specification's examples.
const secretBytes = 24

// NewSecret returns a random secret.
func NewSecret() (string, error) {
	var b [secretBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b[:]), nil
}

// ParseSecret returns the key of a secret: the base64 (standard alphabet, padded) after
// "whsec_", of 24 to 64 bytes (the specification asks for at least 24).
func ParseSecret(secret string) ([]byte, error) {
	s, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("a secret starts with %q", SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("a secret is whsec_ and standard base64")
	}
	if len(key) < 24 || len(key) > 64 {
		return nil, fmt.Errorf("a secret's key has 24 to 64 bytes, not %d", len(key))
	}
	return key, nil
}

// Sign returns the webhook-signature value of one attempt.
func Sign(key []byte, id string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write(strconv.AppendInt(nil, timestamp, 10))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// SetHeaders sets the three headers of an attempt at time at.
func SetHeaders(h http.Header, key []byte, id string, at time.Time, body []byte) {
	ts := at.Unix()
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	h.Set(HeaderSignature, Sign(key, id, ts, body))
}

// Tolerance is how far a delivery's timestamp may be from the receiver's clock in Verify.
const Tolerance = 5 * time.Minute

// Verify checks a delivery as a receiver does: a timestamp within Tolerance of now and, among
// the space-separated signatures, one "v1," signature of the body by key.
func Verify(key []byte, h http.Header, body []byte, now time.Time) error {
	id, tsText, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if id == "" || tsText == "" || sigs == "" {
		return errors.New("missing webhook-id, webhook-timestamp or webhook-signature")
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return errors.New("webhook-timestamp is not an integer")
	}
	if d := now.Sub(time.Unix(ts, 0)); d > Tolerance || d < -Tolerance {
		return errors.New("webhook-timestamp is too far from now")
	}
	want := Sign(key, id, ts, body)
	for _, s := range strings.Fields(sigs) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return errors.New("no signature matches")
}
