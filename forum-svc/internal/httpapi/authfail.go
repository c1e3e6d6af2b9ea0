package httpapi

import (
	"context"
	"errors"
	"sync"
	"time"

	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/shared/ratelimit"
)

// failedAuth throttles failed authentication per client address. Each failure (an unknown key,
// an inactive or expired one, an acting user that is not valid or not allowed) takes a token from
// the address's bucket (limiter: shared through Redis by the replicas, in process without it).
// The failure that finds the bucket empty is answered 429 instead, and the address is refused
// for as long as the bucket needs to refill a token: in this process, before its key is even
// read, so a throttled address costs no lookup at all (another replica learns it from the shared
// bucket at its next failure from there).
type failedAuth struct {
	limiter Limiter
	now     func() time.Time

	mu      sync.Mutex
	blocked map[string]time.Time // address -> refused until
}

// maxBlocked bounds the addresses held as refused; past it, the expired ones are swept, and if
// that frees nothing an arbitrary one is forgotten (its next failure finds the bucket empty again).
const maxBlocked = 100_000

func newFailedAuth(limiter Limiter, now func() time.Time) *failedAuth {
	if now == nil {
		now = time.Now
	}
	return &failedAuth{limiter: limiter, now: now, blocked: map[string]time.Time{}}
}

// refused tells whether addr is refused now, and for how long.
func (f *failedAuth) refused(addr string) (*rateLimitedError, bool) {
	now := f.now()
	f.mu.Lock()
	until, ok := f.blocked[addr]
	if ok && !now.Before(until) {
		delete(f.blocked, addr)
		ok = false
	}
	f.mu.Unlock()
	if !ok {
		return nil, false
	}
	return &rateLimitedError{retryAfter: ratelimit.Decision{RetryAfter: until.Sub(now)}.RetryAfterSeconds(), byAddress: true}, true
}

// failed counts err against addr when it is a failed authentication: it returns err, or the
// 429 that replaces it once the address has used its failures.
func (f *failedAuth) failed(ctx context.Context, addr string, err error) error {
	if !isAuthFailure(err) {
		return err
	}
	d := f.limiter.Allow(ctx, addr)
	if d.Allowed {
		return err
	}
	now := f.now()
	f.mu.Lock()
	if len(f.blocked) >= maxBlocked {
		for a, until := range f.blocked {
			if !now.Before(until) {
				delete(f.blocked, a)
			}
		}
		for a := range f.blocked {
			if len(f.blocked) < maxBlocked {
				break
			}
			delete(f.blocked, a)
		}
	}
	f.blocked[addr] = now.Add(d.RetryAfter)
	f.mu.Unlock()
	return &rateLimitedError{retryAfter: d.RetryAfterSeconds(), byAddress: true}
}

// isAuthFailure tells the errors that say a caller is not who it claims: a missing key is none
// (it costs nothing and names no one), nor is a busy lookup budget (the key was not judged).
func isAuthFailure(err error) bool {
	for _, e := range []error{auth.ErrAPIKeyNotFound, auth.ErrAPIKeyInactive, auth.ErrUserIDNotValid, auth.ErrUserIDNotAllowed} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
