package auth

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forumstats.local/shared/testutil"
)

type fakeStore struct {
	mu       sync.Mutex
	keys     map[string]Key
	users    map[int64]bool
	keyCalls atomic.Int64
	userCall atomic.Int64
	fail     bool
}

func (f *fakeStore) LookupKey(_ context.Context, hash string) (Key, bool, error) {
	f.keyCalls.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return Key{}, false, errors.New("db down")
	}
	k, ok := f.keys[hash]
	return k, ok, nil
}

func (f *fakeStore) UserExists(_ context.Context, id int64) (bool, error) {
	f.userCall.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.users[id], nil
}

const (
	userKey  = "user-key-0123456789abcdef0123456789"
	superKey = "super-key-0123456789abcdef012345678"
	guestKey = "guest-key-0123456789abcdef012345678"
	readOnly = "read-only-0123456789abcdef012345678"
	inactive = "inactive-0123456789abcdef0123456789"
	expired  = "expired-0123456789abcdef01234567890"
)

func setup() (*Authenticator, *fakeStore, *testutil.Clock) {
	clk := testutil.NewClock(time.Unix(1_800_000_000, 0))
	both := []string{ScopeConversationRead, ScopeConversationWrite}
	st := &fakeStore{
		keys: map[string]Key{
			Hash(userKey):  {Hash: Hash(userKey), Type: TypeUser, UserID: 1, Scopes: both, Active: true},
			Hash(superKey): {Hash: Hash(superKey), Type: TypeSuper, Scopes: both, Active: true},
			Hash(guestKey): {Hash: Hash(guestKey), Type: TypeGuest, Scopes: both, Active: true},
			Hash(readOnly): {Hash: Hash(readOnly), Type: TypeUser, UserID: 1, Scopes: []string{ScopeConversationRead}, Active: true},
			Hash(inactive): {Hash: Hash(inactive), Type: TypeUser, UserID: 1, Scopes: both, Active: false},
			Hash(expired):  {Hash: Hash(expired), Type: TypeUser, UserID: 1, Scopes: both, Active: true, ExpiresAt: 1_800_000_000},
		},
		users: map[int64]bool{1: true, 2: true},
	}
	a := New(st, Options{CacheTTL: 30 * time.Second, NegativeTTL: 5 * time.Second, MaxEntries: 1000, Now: clk.Now})
	return a, st, clk
}

func hdr(v ...string) []string { return v }

func TestHash(t *testing.T) {
	h := Hash("abc")
	if h != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("Hash is not SHA-256 hex: %s", h)
	}
}

func TestKeyChecks(t *testing.T) {
	a, _, _ := setup()
	ctx := context.Background()
	cases := []struct {
		header []string
		want   error
	}{
		{nil, ErrNoAPIKey},
		{hdr(""), ErrNoAPIKey},
		{hdr("unknown-0123456789abcdef0123456789ab"), ErrAPIKeyNotFound},
		{hdr(strings.Repeat("x", MaxKeyLength+1)), ErrAPIKeyNotFound},
		{hdr(userKey, userKey), ErrAPIKeyNotFound},
		{hdr(inactive), ErrAPIKeyInactive},
		{hdr(expired), ErrAPIKeyInactive}, // expires_at == now: past its expiry
		{hdr(userKey), nil},
	}
	for _, c := range cases {
		_, err := a.Key(ctx, c.header)
		if !errors.Is(err, c.want) {
			t.Errorf("Key(%.20q) = %v; want %v", c.header, err, c.want)
		}
	}
}

func TestPrincipalOrderAndRules(t *testing.T) {
	a, _, _ := setup()
	ctx := context.Background()
	type principalCase struct {
		name   string
		key    string
		user   []string
		scope  string
		wantID int64
		want   error
	}
	cases := []principalCase{
		{"user key acts as its user", userKey, nil, ScopeConversationRead, 1, nil},
		{"user key naming itself", userKey, hdr("1"), ScopeConversationRead, 1, nil},
		{"user key naming itself with zeros", userKey, hdr("001"), ScopeConversationRead, 1, nil},
		{"user key naming another", userKey, hdr("2"), ScopeConversationRead, 0, ErrUserIDNotAllowed},
		{"user key malformed user", userKey, hdr("x"), ScopeConversationRead, 0, ErrUserIDNotValid},
		{"super key with user", superKey, hdr("2"), ScopeConversationRead, 2, nil},
		{"super key without user", superKey, nil, ScopeConversationRead, 0, ErrLoginRequired},
		{"super key empty user", superKey, hdr(""), ScopeConversationRead, 0, ErrLoginRequired},
		{"guest key", guestKey, nil, ScopeConversationRead, 0, ErrLoginRequired},
		{"guest key naming a user", guestKey, hdr("1"), ScopeConversationRead, 0, ErrUserIDNotAllowed},
		{"missing scope", readOnly, nil, ScopeConversationWrite, 0, &MissingScopeError{}},
		// Order: the acting user is checked before the scope, the scope before login.
		{"user before scope", readOnly, hdr("2"), ScopeConversationWrite, 0, ErrUserIDNotAllowed},
		{"guest with scope needs login", guestKey, nil, ScopeConversationWrite, 0, ErrLoginRequired},
	}
	// A super key naming no valid user: unknown, zero, negative, text, beyond int64, repeated.
	for _, user := range [][]string{hdr("9"), hdr("0"), hdr("-2"), hdr("bob"), hdr("99999999999999999999"), hdr("2", "2")} {
		cases = append(cases, principalCase{fmt.Sprintf("super key user %q", user), superKey, user, ScopeConversationRead, 0, ErrUserIDNotValid})
	}
	for _, c := range cases {
		k, err := a.Key(ctx, hdr(c.key))
		if err != nil {
			t.Fatalf("%s: Key: %v", c.name, err)
		}
		id, err := a.Principal(ctx, k, c.user, c.scope)
		var scopeErr *MissingScopeError
		switch {
		case errors.As(c.want, &scopeErr):
			if !errors.As(err, &scopeErr) || scopeErr.Scope != c.scope {
				t.Errorf("%s: err = %v; want missing scope %s", c.name, err, c.scope)
			}
		case !errors.Is(err, c.want) || id != c.wantID:
			t.Errorf("%s: = %d, %v; want %d, %v", c.name, id, err, c.wantID, c.want)
		}
	}
	// A guest key without the scope: the scope is refused before the registered-user rule.
	g := Key{Type: TypeGuest, Active: true}
	if _, err := a.Principal(ctx, g, nil, ScopeConversationRead); !errors.As(err, new(*MissingScopeError)) {
		t.Errorf("guest without scope: %v; want missing_scope first", err)
	}
}

func TestKeyCache(t *testing.T) {
	a, st, clk := setup()
	ctx := context.Background()
	for range 100 {
		if _, err := a.Key(ctx, hdr(userKey)); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.keyCalls.Load(); n != 1 {
		t.Fatalf("100 requests with one key cost %d lookups; want 1", n)
	}
	// The key is deactivated in the database: trusted until the TTL ends, refused after.
	st.mu.Lock()
	k := st.keys[Hash(userKey)]
	k.Active = false
	st.keys[Hash(userKey)] = k
	st.mu.Unlock()
	clk.Add(29 * time.Second)
	if _, err := a.Key(ctx, hdr(userKey)); err != nil {
		t.Fatalf("within the TTL: %v", err)
	}
	clk.Add(1 * time.Second)
	if _, err := a.Key(ctx, hdr(userKey)); !errors.Is(err, ErrAPIKeyInactive) {
		t.Fatalf("after 30 s: %v; want inactive", err)
	}

	// Unknown keys are remembered briefly, so they cannot hammer the database.
	unknown := "unknown-0123456789abcdef0123456789ab"
	before := st.keyCalls.Load()
	for range 50 {
		_, _ = a.Key(ctx, hdr(unknown))
	}
	if n := st.keyCalls.Load() - before; n != 1 {
		t.Fatalf("50 requests with an unknown key cost %d lookups; want 1", n)
	}
	// A key created meanwhile is found once the negative entry expires.
	st.mu.Lock()
	st.keys[Hash(unknown)] = Key{Hash: Hash(unknown), Type: TypeGuest, Active: true}
	st.mu.Unlock()
	clk.Add(5 * time.Second)
	if _, err := a.Key(ctx, hdr(unknown)); err != nil {
		t.Fatalf("new key after the negative TTL: %v", err)
	}

	// Errors are not cached.
	st.mu.Lock()
	st.fail = true
	st.mu.Unlock()
	clk.Add(time.Minute)
	if _, err := a.Key(ctx, hdr(superKey)); err == nil || errors.Is(err, ErrAPIKeyNotFound) {
		t.Fatalf("store failure: %v; want an unexpected error", err)
	}
	st.mu.Lock()
	st.fail = false
	st.mu.Unlock()
	if _, err := a.Key(ctx, hdr(superKey)); err != nil {
		t.Fatalf("after the store recovers: %v", err)
	}

	// The acting user of super keys is cached too.
	k2, _ := a.Key(ctx, hdr(superKey))
	for range 20 {
		if _, err := a.Principal(ctx, k2, hdr("2"), ScopeConversationRead); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.userCall.Load(); n != 1 {
		t.Fatalf("20 super-key requests cost %d user lookups; want 1", n)
	}
}

func TestCacheBounded(t *testing.T) {
	clk := testutil.NewClock(time.Unix(0, 0))
	c := newTTLCache[int, int](time.Minute, time.Second, 10, clk.Now)
	for i := range 1000 {
		_, _, _ = c.get(i, func() (int, bool, error) { return i, true, nil })
	}
	if n := len(c.found); n > 10 {
		t.Fatalf("cache holds %d entries; bound is 10", n)
	}
}

// A flood of unknown keys churns only the unknown side of the cache: the known keys stay cached
// and cost no lookup, and the unknown side stays within its bound.
func TestUnknownKeysNeverEvictKnownOnes(t *testing.T) {
	_, st, clk := setup()
	a := New(st, Options{MaxEntries: 1000, KeyLookupsPerSecond: 100_000, Now: clk.Now})
	ctx := context.Background()
	known := []string{userKey, superKey, guestKey, readOnly}
	for _, k := range known {
		if _, err := a.Key(ctx, hdr(k)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5000 {
		if _, err := a.Key(ctx, hdr(fmt.Sprintf("flood-%d-0123456789abcdef0123456789", i))); !errors.Is(err, ErrAPIKeyNotFound) {
			t.Fatalf("unknown key %d: %v", i, err)
		}
	}
	before := st.keyCalls.Load()
	for _, k := range known {
		if _, err := a.Key(ctx, hdr(k)); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.keyCalls.Load() - before; n != 0 {
		t.Fatalf("after a flood of unknown keys, %d known keys were looked up again; want 0", n)
	}
	if n := len(a.keys.missing); n > 1000 {
		t.Fatalf("%d unknown keys cached; bound is 1000", n)
	}
}

// Keys the cache does not hold are looked up within the process's budget: past it they are
// *BusyError (no lookup) until the budget refills; cached keys are never refused.
func TestKeyLookupBudget(t *testing.T) {
	clk := testutil.NewClock(time.Unix(1_800_000_000, 0))
	st := &fakeStore{keys: map[string]Key{Hash(userKey): {Hash: Hash(userKey), Type: TypeUser, UserID: 1, Active: true}}}
	a := New(st, Options{KeyLookupsPerSecond: 10, Now: clk.Now})
	ctx := context.Background()
	if _, err := a.Key(ctx, hdr(userKey)); err != nil {
		t.Fatal(err)
	}
	unknown := func(i int) []string { return hdr(fmt.Sprintf("random-%d-0123456789abcdef0123456789", i)) }
	busy := 0
	for i := range 600 {
		_, err := a.Key(ctx, unknown(i))
		var be *BusyError
		switch {
		case errors.As(err, &be):
			busy++
			if be.RetryAfterSeconds() < 1 {
				t.Fatalf("Retry-After %d", be.RetryAfterSeconds())
			}
		case !errors.Is(err, ErrAPIKeyNotFound):
			t.Fatalf("key %d: %v", i, err)
		}
	}
	if n := st.keyCalls.Load(); n != 10 {
		t.Fatalf("600 new keys in an instant cost %d lookups; the budget is 10 (+1 for the known key)", n-1)
	}
	if busy != 591 {
		t.Fatalf("%d refused; want 591", busy)
	}
	// The known key is cached: the spent budget does not touch it.
	if _, err := a.Key(ctx, hdr(userKey)); err != nil {
		t.Fatalf("known key while the budget is spent: %v", err)
	}
	clk.Add(time.Second)
	if _, err := a.Key(ctx, unknown(10_000)); !errors.Is(err, ErrAPIKeyNotFound) {
		t.Fatalf("after a second: %v; want the lookup again", err)
	}
}

func TestConcurrentMissesShareOneLookup(t *testing.T) {
	a, st, _ := setup()
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = a.Key(context.Background(), hdr(userKey))
		}()
	}
	wg.Wait()
	if n := st.keyCalls.Load(); n > 4 {
		t.Fatalf("64 concurrent first requests cost %d lookups", n)
	}
}

// FuzzHeaders: the header parsers never panic, accept only what the README's header rules allow, and agree
// with strconv on valid user ids.
func FuzzHeaders(f *testing.F) {
	for _, s := range []string{"", "1", "0", "-1", "abc", userKey, "99999999999999999999", " 1", "1\x00"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, key, user string) {
		k, err := ParseAPIKey([]string{key})
		switch {
		case key == "":
			if !errors.Is(err, ErrNoAPIKey) {
				t.Fatalf("empty key: %v", err)
			}
		case len(key) > MaxKeyLength:
			if !errors.Is(err, ErrAPIKeyNotFound) {
				t.Fatalf("long key: %v", err)
			}
		default:
			if err != nil || k != key {
				t.Fatalf("ParseAPIKey(%q) = %q, %v", key, k, err)
			}
		}
		id, present, err := ParseUser([]string{user})
		if user == "" {
			if present || err != nil {
				t.Fatalf("empty user: present=%v err=%v", present, err)
			}
			return
		}
		if !present {
			t.Fatalf("ParseUser(%q): not present", user)
		}
		if err != nil {
			if !errors.Is(err, ErrUserIDNotValid) {
				t.Fatalf("ParseUser(%q): %v", user, err)
			}
			return
		}
		v, perr := strconv.ParseInt(user, 10, 64)
		if perr != nil || v != id || id < 1 || strings.ContainsAny(user, "+- ") {
			t.Fatalf("ParseUser(%q) = %d accepted", user, id)
		}
	})
}
