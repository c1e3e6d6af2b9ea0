// Package auth authenticates API requests. It checks the key (Forum-Api-Key: present, known,
// active), the acting user (Forum-Api-User, as the key's type allows), the scope and the
// registered-user rule, in that order; the first failure answers.
//
// A request costs no database round trip for its key: key records (and, for super keys, the
// existence of the acting user) are cached in process for at most CacheTTL, so a key changed
// through the CLI takes effect within that time.
package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"forumstats.local/forum-svc/internal/decimal"
	"forumstats.local/shared/ratelimit"
)

// Header names.
const (
	HeaderAPIKey  = "Forum-Api-Key"
	HeaderAPIUser = "Forum-Api-User"
)

// Scopes.
const (
	ScopeConversationRead  = "conversation:read"
	ScopeConversationWrite = "conversation:write"
	// The attachments of conversation messages: read (list, show, download), write (keys,
	// uploads, deletion). The objects' can_upload_attachment reads attachment:write too.
	ScopeAttachmentRead  = "attachment:read"
	ScopeAttachmentWrite = "attachment:write"
)

// KnownScopes lists every scope a key may carry.
var KnownScopes = []string{ScopeConversationRead, ScopeConversationWrite, ScopeAttachmentRead, ScopeAttachmentWrite}

// Key types.
const (
	TypeUser  = "user"
	TypeSuper = "super"
	TypeGuest = "guest"
)

// KnownTypes lists every key type.
var KnownTypes = []string{TypeUser, TypeSuper, TypeGuest}

// Key length bounds. A presented key longer than MaxKeyLength cannot exist and is refused without
// a lookup.
const (
	MinKeyLength = 32
	MaxKeyLength = 256
)

// Errors of the check order, mapped to HTTP by the API layer.
var (
	ErrNoAPIKey         = errors.New("the Forum-Api-Key header is missing")
	ErrAPIKeyNotFound   = errors.New("the API key is not known")
	ErrAPIKeyInactive   = errors.New("the API key is inactive or expired")
	ErrUserIDNotValid   = errors.New("Forum-Api-User must name an existing user by a positive decimal integer")
	ErrUserIDNotAllowed = errors.New("this API key may not act as another user")
	ErrLoginRequired    = errors.New("this operation requires a registered user")
)

// MissingScopeError is a key without a scope the operation needs.
type MissingScopeError struct{ Scope string }

func (e *MissingScopeError) Error() string {
	return fmt.Sprintf("the API key lacks the scope %s", e.Scope)
}

// Hash is how keys are stored and looked up: the SHA-256 of the key, in hex. Keys are random and
// long, so a fast hash is enough; the plain key is never stored or compared.
func Hash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// Key is a stored API key.
type Key struct {
	Hash      string
	Type      string
	UserID    int64 // 0 unless Type is user
	Scopes    []string
	Active    bool
	ExpiresAt int64 // Unix seconds; 0 means never
}

// Usable tells whether the key is active and not past its expiry at now.
func (k Key) Usable(now time.Time) bool {
	return k.Active && (k.ExpiresAt == 0 || now.Unix() < k.ExpiresAt)
}

// HasScope tells whether the key carries scope.
func (k Key) HasScope(scope string) bool { return slices.Contains(k.Scopes, scope) }

// Store is where keys and users are looked up on a cache miss.
type Store interface {
	// LookupKey returns the key with this hash; found is false when there is none.
	LookupKey(ctx context.Context, hash string) (k Key, found bool, err error)
	UserExists(ctx context.Context, userID int64) (bool, error)
}

// ParseAPIKey reads the Forum-Api-Key header values: absent or empty is ErrNoAPIKey. A repeated
// header, or a value that no key can have (too long), is ErrAPIKeyNotFound.
func ParseAPIKey(values []string) (string, error) {
	switch {
	case len(values) == 0 || (len(values) == 1 && values[0] == ""):
		return "", ErrNoAPIKey
	case len(values) > 1, len(values[0]) > MaxKeyLength:
		return "", ErrAPIKeyNotFound
	}
	return values[0], nil
}

// ParseUser reads the Forum-Api-User header values. Absent or empty means no acting user
// (present false). Otherwise the single value must be a positive decimal integer
// (ASCII digits, leading zeros allowed, at most int64), else ErrUserIDNotValid.
func ParseUser(values []string) (userID int64, present bool, err error) {
	switch {
	case len(values) == 0 || (len(values) == 1 && values[0] == ""):
		return 0, false, nil
	case len(values) > 1:
		return 0, true, ErrUserIDNotValid
	}
	id, ok := decimal.ParseID(values[0])
	if !ok {
		return 0, true, ErrUserIDNotValid
	}
	return id, true, nil
}

// Options configures an Authenticator.
type Options struct {
	// CacheTTL is how long a found key (or an existing user) is trusted; at most 30 s.
	CacheTTL time.Duration
	// NegativeTTL is how long an unknown key (or user) is remembered as unknown.
	NegativeTTL time.Duration
	// MaxEntries bounds each cache: its found and its unknown entries, each.
	MaxEntries int
	// KeyLookupsPerSecond is the process's budget of key lookups, for the keys its cache does not
	// hold (found or unknown): at most this many a second, and as many at once. Past it, a key
	// not cached is refused with *BusyError instead of looked up, so a flood of random keys, from
	// however many addresses, costs the database at most this many queries a second.
	KeyLookupsPerSecond int
	Now                 func() time.Time
}

// DefaultOptions are the production settings.
var DefaultOptions = Options{CacheTTL: 30 * time.Second, NegativeTTL: 5 * time.Second, MaxEntries: 100_000,
	KeyLookupsPerSecond: DefaultKeyLookupsPerSecond}

// DefaultKeyLookupsPerSecond is the lookup budget's default: far above what the keys of a forum
// need (each key costs one lookup every CacheTTL per process), far below what the database takes.
const DefaultKeyLookupsPerSecond = 100

// BusyError is a key that is not cached while the process's lookup budget is spent: it is
// neither known nor unknown yet, and the client should retry after RetryAfter.
type BusyError struct{ RetryAfter time.Duration }

func (e *BusyError) Error() string { return "too many API keys to look up at the moment" }

// RetryAfterSeconds is the Retry-After header value: whole seconds, rounded up, at least 1.
func (e *BusyError) RetryAfterSeconds() int64 {
	return ratelimit.Decision{RetryAfter: e.RetryAfter}.RetryAfterSeconds()
}

// Authenticator runs the checks that concern the caller: the key, the acting user, the scope and
// the registered-user rule.
type Authenticator struct {
	store   Store
	keys    *ttlCache[string, Key]
	users   *ttlCache[int64, struct{}]
	lookups *ratelimit.Local // the key lookup budget: one process-wide bucket
	now     func() time.Time
}

// New returns an Authenticator over store.
func New(store Store, opts Options) *Authenticator {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.CacheTTL <= 0 || opts.CacheTTL > 30*time.Second {
		opts.CacheTTL = DefaultOptions.CacheTTL
	}
	if opts.NegativeTTL <= 0 {
		opts.NegativeTTL = DefaultOptions.NegativeTTL
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultOptions.MaxEntries
	}
	if opts.KeyLookupsPerSecond <= 0 {
		opts.KeyLookupsPerSecond = DefaultOptions.KeyLookupsPerSecond
	}
	budget := ratelimit.Config{PerMinute: opts.KeyLookupsPerSecond * 60, Burst: opts.KeyLookupsPerSecond}
	return &Authenticator{
		store:   store,
		keys:    newTTLCache[string, Key](opts.CacheTTL, opts.NegativeTTL, opts.MaxEntries, opts.Now),
		users:   newTTLCache[int64, struct{}](opts.CacheTTL, opts.NegativeTTL, opts.MaxEntries, opts.Now),
		lookups: ratelimit.NewLocal(budget, opts.Now),
		now:     opts.Now,
	}
}

// Key runs the first checks: a key is present (ErrNoAPIKey), known (ErrAPIKeyNotFound), active
// and not expired (ErrAPIKeyInactive). A key the cache does not hold is looked up only within
// the lookup budget, else *BusyError. The rate limit of the key comes next, then Principal.
func (a *Authenticator) Key(ctx context.Context, keyHeader []string) (Key, error) {
	plain, err := ParseAPIKey(keyHeader)
	if err != nil {
		return Key{}, err
	}
	return a.KeyByHash(ctx, Hash(plain))
}

// KeyByHash runs Key's checks after the header's: the key of this hash is known
// (ErrAPIKeyNotFound) and usable (ErrAPIKeyInactive), through the same cache. A long-lived
// stream checks its key so, and so stops within the cache's 30 s of the key's deactivation.
func (a *Authenticator) KeyByHash(ctx context.Context, hash string) (Key, error) {
	k, found, err := a.keys.get(hash, func() (Key, bool, error) {
		if d := a.lookups.Allow(ctx, ""); !d.Allowed {
			return Key{}, false, &BusyError{RetryAfter: d.RetryAfter}
		}
		return a.store.LookupKey(ctx, hash)
	})
	if err != nil {
		return Key{}, fmt.Errorf("look up API key: %w", err)
	}
	if !found {
		return Key{}, ErrAPIKeyNotFound
	}
	if !k.Usable(a.now()) {
		return Key{}, ErrAPIKeyInactive
	}
	return k, nil
}

// Principal runs the remaining checks for an operation that needs scope and a registered user:
// the acting user (ErrUserIDNotValid, ErrUserIDNotAllowed), the scope (*MissingScopeError) and
// the registered-user rule (ErrLoginRequired). It returns the current user's id.
func (a *Authenticator) Principal(ctx context.Context, k Key, userHeader []string, scope string) (int64, error) {
	actingID, named, err := ParseUser(userHeader)
	if err != nil {
		return 0, err
	}
	userID := k.UserID
	switch k.Type {
	case TypeSuper:
		if named {
			ok, err := a.userExists(ctx, actingID)
			if err != nil {
				return 0, err
			}
			if !ok {
				return 0, ErrUserIDNotValid
			}
			userID = actingID
		}
	default: // user and guest keys act only as their own user (a guest has none)
		if named && actingID != k.UserID {
			return 0, ErrUserIDNotAllowed
		}
	}
	if scope != "" && !k.HasScope(scope) { // "": an operation that needs no particular scope
		return 0, &MissingScopeError{Scope: scope}
	}
	if userID == 0 {
		return 0, ErrLoginRequired
	}
	return userID, nil
}

func (a *Authenticator) userExists(ctx context.Context, id int64) (bool, error) {
	_, found, err := a.users.get(id, func() (struct{}, bool, error) {
		ok, err := a.store.UserExists(ctx, id)
		return struct{}{}, ok, err
	})
	if err != nil {
		return false, fmt.Errorf("look up acting user: %w", err)
	}
	return found, nil
}
