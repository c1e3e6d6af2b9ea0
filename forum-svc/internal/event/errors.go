package event

import "errors"

// ErrInvalidLastEventID is a Last-Event-ID (or last_event_id) that is not a non-negative decimal
// integer within int64.
var ErrInvalidLastEventID = errors.New("last event id must be a non-negative integer")

var errInvalidLastEventID = ErrInvalidLastEventID

// ErrStreamClosed ends a stream the hub closed: the server is shutting down.
var ErrStreamClosed = errors.New("event hub closed")

// ErrSlowConsumer ends a stream whose client did not take an event within the write timeout.
var ErrSlowConsumer = errors.New("the client took too long to read its events")
