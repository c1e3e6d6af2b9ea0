package webhook

import (
	"io"
	"net/http"
	"time"
)

// maxReceived bounds a body the Receiver reads.
const maxReceived = 1 << 20

// Receiver is a webhook target (`forum-svc webhook receive`, for local runs): it verifies each
// POST against key, calls seen with its webhook-id, body and the verification's error, and
// answers 204 when the signature holds, 401 when not (the sender then retries), 405 to another
// method and 413 to a body over 1 MiB.
func Receiver(key []byte, now func() time.Time, seen func(id string, body []byte, err error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReceived))
		if err != nil {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			return
		}
		err = Verify(key, r.Header, body, now())
		seen(r.Header.Get(HeaderID), body, err)
		if err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
