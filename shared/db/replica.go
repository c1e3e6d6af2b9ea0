package db

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"gorm.io/gorm"
)

// Defaults of ReadsOptions.
const (
	DefaultSkipReplicaFor = 30 * time.Second
	DefaultPinAfterWrite  = 5 * time.Second
)

var (
	fallbacksOnce  sync.Once
	fallbacksTotal *prometheus.CounterVec
)

// fallbacks is db_replica_fallbacks_total, registered on first use: only a service with a
// replica exports it.
func fallbacks() *prometheus.CounterVec {
	fallbacksOnce.Do(func() {
		fallbacksTotal = promauto.NewCounterVec(prometheus.CounterOpts{
			Name: "db_replica_fallbacks_total",
			Help: "Reads sent to the primary because the read replica failed (the first failure of a skip period) or was being skipped.",
		}, []string{"service"})
	})
	return fallbacksTotal
}

// FallbacksCounter is db_replica_fallbacks_total of service (tests read it).
func FallbacksCounter(service string) prometheus.Counter {
	return fallbacks().WithLabelValues(service)
}

// ReadsOptions tune Reads; the zero value is the default.
type ReadsOptions struct {
	// Service labels db_replica_fallbacks_total.
	Service string
	// SkipFor is how long reads go to the primary after the replica failed to answer
	// (a connection error). 0: DefaultSkipReplicaFor.
	SkipFor time.Duration
	// PinFor is how long Pinned holds after Pin (a writer's reads stay on the primary, so that
	// the writer never sees its own write undone by replication lag). 0: DefaultPinAfterWrite.
	PinFor time.Duration
	Now    func() time.Time
	Logger *slog.Logger
}

// NoKey is the key of a read that no write pins: one that follows no user (an API key's lookup,
// a statistics answer), routed by the replica's health alone.
const NoKey int64 = 0

// Reads routes reads between the primary and an optional read replica: to the replica while it
// answers, to the primary for SkipFor after it failed (a connection error, never a query's own
// error), and always to the primary without a replica. A read that fails on the replica is run
// again on the primary, so a replica's failure never fails a request the primary can answer.
// Writes never go through it; a writer calls Pin with its key (a user id), and that key's reads
// stay on the primary for PinFor, so that replication lag never shows a user their own write
// undone.
//
// It is the one routing of both services, a small wrapper rather than GORM's dbresolver plugin:
// dbresolver picks a pool before the statement runs (its policy sees the pools, not the error
// nor the reader) and returns a replica's failure to the caller, so it has neither the re-run
// on the primary nor the skipping of a failed replica, and it would route by guessing from the
// statement's text (SELECT or not) instead of by the user who wrote; a read that runs on pgx
// itself (a service's hot path) bypasses its callbacks too. Reads hands the read the database
// to run on, whatever way the read reaches it.
type Reads struct {
	primary, replica *gorm.DB
	opts             ReadsOptions
	fallbacks        prometheus.Counter
	skipUntil        atomic.Int64 // unix nanoseconds

	mu      sync.Mutex
	pins    map[int64]time.Time
	sweepAt time.Time
}

// NewReads routes reads between primary and replica (nil: all to the primary), which must be
// the same kind of database.
func NewReads(primary, replica *gorm.DB, opts ReadsOptions) (*Reads, error) {
	if opts.SkipFor <= 0 {
		opts.SkipFor = DefaultSkipReplicaFor
	}
	if opts.PinFor <= 0 {
		opts.PinFor = DefaultPinAfterWrite
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if replica != nil && DialectOf(replica) != DialectOf(primary) {
		return nil, errors.New("the read replica must be the same kind of database as the primary")
	}
	r := &Reads{primary: primary, replica: replica, opts: opts, pins: map[int64]time.Time{}}
	if replica != nil {
		r.fallbacks = fallbacks().WithLabelValues(opts.Service)
	}
	return r, nil
}

// OpenReads opens the replica of readURL ("" = none) beside primary. The replica is not
// pinged: a replica that is down when the service starts is skipped like one that fails later.
func OpenReads(primary *gorm.DB, readURL string, opts ReadsOptions) (*Reads, error) {
	if readURL == "" {
		return NewReads(primary, nil, opts)
	}
	replica, err := open(context.Background(), readURL, opts.Logger, false)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_READ_URL: %w", err)
	}
	r, err := NewReads(primary, replica, opts)
	if err != nil {
		Close(replica)
		return nil, fmt.Errorf("DATABASE_READ_URL: %w", err)
	}
	return r, nil
}

// Close closes the replica's pool (the primary belongs to the caller).
func (r *Reads) Close() {
	if r.replica != nil {
		Close(r.replica)
	}
}

// Replica reports whether a replica is configured (false on a nil Reads).
func (r *Reads) Replica() bool { return r != nil && r.replica != nil }

// Read runs fn on the replica, or on the primary when there is none, it is being skipped, key
// wrote within PinFor (Pin; NoKey: no such check), or it failed during fn (fn then runs again on
// the primary: it must only read).
func (r *Reads) Read(ctx context.Context, key int64, fn func(*gorm.DB) error) error {
	if r.Pinned(key) || !r.useReplica() {
		return fn(r.primary)
	}
	err := fn(r.replica)
	if err == nil || !r.failed(ctx, err) {
		return err
	}
	return fn(r.primary)
}

// ReadOn is r.Read, or fn on primary when r is nil: for a reader whose reads are routed only
// once it is given the service's Reads (tests build it without).
func ReadOn(ctx context.Context, r *Reads, primary *gorm.DB, key int64, fn func(*gorm.DB) error) error {
	if r == nil {
		return fn(primary)
	}
	return r.Read(ctx, key, fn)
}

// ReadValue is ReadOn for a read with one result: the result of the run that answered.
func ReadValue[T any](ctx context.Context, r *Reads, primary *gorm.DB, key int64, fn func(*gorm.DB) (T, error)) (T, error) {
	var out T
	err := ReadOn(ctx, r, primary, key, func(gdb *gorm.DB) (err error) {
		out, err = fn(gdb)
		return err
	})
	return out, err
}

func (r *Reads) useReplica() bool {
	if r.replica == nil {
		return false
	}
	if r.opts.Now().UnixNano() < r.skipUntil.Load() {
		r.fallbacks.Inc()
		return false
	}
	return true
}

// failed reports whether err means the replica failed (and then skips it for SkipFor), rather
// than the read itself: a caller that gave up is no replica failure.
func (r *Reads) failed(ctx context.Context, err error) bool {
	if ctx.Err() != nil || !IsConnectionError(err) {
		return false
	}
	r.skipUntil.Store(r.opts.Now().Add(r.opts.SkipFor).UnixNano())
	r.fallbacks.Inc()
	if r.opts.Logger != nil {
		r.opts.Logger.Warn("read replica failed: reading from the primary", "for", r.opts.SkipFor, "err", err)
	}
	return true
}

// Pin keeps key's reads (Pinned) on the primary for PinFor from now. Without a replica (or a
// Reads), or for NoKey, it does nothing.
func (r *Reads) Pin(key int64) {
	if !r.Replica() || key == NoKey {
		return
	}
	now := r.opts.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pins[key] = now.Add(r.opts.PinFor)
	if now.After(r.sweepAt) { // forget expired pins now and then, so the map stays small
		for k, until := range r.pins {
			if !now.Before(until) {
				delete(r.pins, k)
			}
		}
		r.sweepAt = now.Add(r.opts.PinFor)
	}
}

// Pinned reports whether key wrote within PinFor.
func (r *Reads) Pinned(key int64) bool {
	if !r.Replica() || key == NoKey {
		return false
	}
	r.mu.Lock()
	until, ok := r.pins[key]
	r.mu.Unlock()
	return ok && r.opts.Now().Before(until)
}

// IsConnectionError reports whether err means the database could not be reached or dropped the
// connection (as opposed to an error of the statement): a refused or broken connection, a
// connection-exception SQLSTATE (class 08), the server shutting down, too many connections, or
// a database that does not exist.
func IsConnectionError(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case len(pgErr.Code) == 5 && pgErr.Code[:2] == "08":
			return true
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03", // shutdown, crash, cannot connect now
			pgErr.Code == "53300", pgErr.Code == "3D000": // too many connections, no such database
			return true
		}
		return false
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	return errors.As(err, &connErr) || errors.As(err, &netErr) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err) || errors.Is(err, net.ErrClosed)
}
