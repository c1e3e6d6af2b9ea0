package discord

import (
	"errors"
	"fmt"
)

// Sentinels for the answers the collection pass treats specially; every error
// the client returns for them also is an *APIError.
var (
	ErrUnauthorized = errors.New("discord: unauthorized") // 401: the pass stops
	ErrForbidden    = errors.New("discord: forbidden")    // 403: skip that channel
	ErrNotFound     = errors.New("discord: not found")    // 404
)

// APIError is an answer of Discord that is not a success: a 4xx, a 5xx still
// failing after the retries, a 429 or 202 still repeating after the retries,
// or a success whose body cannot be read.
type APIError struct {
	Status  int    // HTTP status
	Code    int    // Discord's JSON error code (0 when absent)
	Message string // Discord's message, or what went wrong reading the answer
	Route   string // templated route, e.g. /guilds/{id}/channels
}

func (e *APIError) Error() string {
	if e.Code != 0 {
		return fmt.Sprintf("discord: GET %s: HTTP %d: %s (code %d)", e.Route, e.Status, e.Message, e.Code)
	}
	return fmt.Sprintf("discord: GET %s: HTTP %d: %s", e.Route, e.Status, e.Message)
}

// Unwrap lets errors.Is match the sentinel of the status.
func (e *APIError) Unwrap() error {
	switch e.Status {
	case 401:
		return ErrUnauthorized
	case 403:
		return ErrForbidden
	case 404:
		return ErrNotFound
	}
	return nil
}
