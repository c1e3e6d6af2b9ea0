package httpapi_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"forumstats.local/shared/ratelimit"
)

// from sends a GET from a client address (the connection's, as c.RealIP reads it without a proxy).
func (e *env) from(addr, target string, headers ...string) response {
	r := request("GET", target, "", "", headers...)
	r.RemoteAddr = addr + ":40000"
	return e.serve(r)
}

func wantRetryAfter(t *testing.T, r response, min, max int) {
	t.Helper()
	wantError(t, r, 429, "too_many_requests", nil)
	if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < min || ra > max {
		t.Fatalf("Retry-After %q; want %d..%d", r.header.Get("Retry-After"), min, max)
	}
}

// Failed authentication is limited per client address: every kind of failure counts, the address
// that has used its failures is refused before its key is read (a valid key too), other addresses
// are not touched, and the address gets a failure back as its bucket refills.
func TestAuthFailureThrottle(t *testing.T) {
	e := newEnv(t, envOptions{authFailures: ratelimit.Config{PerMinute: 6, Burst: 4}}) // a token every 10 s
	const attacker, other = "198.51.100.7", "203.0.113.9"
	unknown := func(i int) string { return key(fmt.Sprintf("guess-%d-0123456789abcdef0123456789", i)) }
	// Each kind of failure takes a token: an unknown key, an inactive one, an acting user that
	// does not exist (super key) or is not the key's own.
	for _, tt := range []struct {
		headers []string
		status  int
		code    string
	}{
		{[]string{unknown(1)}, 401, "api_key_not_found"},
		{[]string{key(keyInactive)}, 403, "api_key_inactive"},
		{[]string{key(keySuper), user("999")}, 403, "user_id_not_valid"},
		{[]string{key(keyAlice), user("2")}, 403, "user_id_not_allowed"},
	} {
		wantError(t, e.from(attacker, "/api/conversations/10", tt.headers...), tt.status, tt.code, nil)
	}
	// Requests that fail nothing take none: a valid key, a missing key, a missing scope.
	if r := e.from(attacker, "/api/conversations/10", key(keyAlice)); r.status != 200 {
		t.Fatalf("valid key within the budget: %d %s", r.status, r.body)
	}
	wantError(t, e.from(attacker, "/api/conversations/10"), 400, "no_api_key_in_request", nil)
	// The fifth failure finds the bucket empty: 429 instead of 401, Retry-After the refill.
	wantRetryAfter(t, e.from(attacker, "/api/conversations/10", unknown(2)), 1, 10)
	// From now on the address is refused whatever it sends, before its key is read.
	for _, h := range [][]string{{unknown(3)}, {key(keyAlice)}, nil} {
		wantRetryAfter(t, e.from(attacker, "/api/conversations/10", h...), 1, 10)
	}
	// Another address keeps its own bucket: its valid key works and its failures are its own.
	if r := e.from(other, "/api/conversations/10", key(keyAlice)); r.status != 200 {
		t.Fatalf("another address: %d %s", r.status, r.body)
	}
	wantError(t, e.from(other, "/api/conversations/10", unknown(4)), 401, "api_key_not_found", nil)
	// A token later the address is served again, and one more failure empties it again.
	e.clock.Add(10 * time.Second)
	if r := e.from(attacker, "/api/conversations/10", key(keyAlice)); r.status != 200 {
		t.Fatalf("after the refill: %d %s", r.status, r.body)
	}
	wantError(t, e.from(attacker, "/api/conversations/10", unknown(5)), 401, "api_key_not_found", nil)
	wantRetryAfter(t, e.from(attacker, "/api/conversations/10", unknown(6)), 1, 10)
}

// Keys the process has not cached are looked up within its budget (AUTH_KEY_LOOKUPS_PER_SECOND),
// whatever the addresses: past it 429 with Retry-After, while cached keys keep working.
func TestKeyLookupBudgetAnswers429(t *testing.T) {
	e := newEnv(t, envOptions{keyLookups: 5})
	if r := e.from("192.0.2.50", "/api/conversations/10", key(keyAlice)); r.status != 200 { // cached from now on
		t.Fatalf("%d %s", r.status, r.body)
	}
	statuses := map[int]int{}
	for i := range 50 {
		r := e.from(fmt.Sprintf("10.0.%d.%d", i/250, i%250), "/api/conversations/10", key(fmt.Sprintf("rnd-%d-0123456789abcdef0123456789", i)))
		statuses[r.status]++
		if r.status == 429 {
			wantRetryAfter(t, r, 1, 1)
		}
	}
	// The budget's burst is 5 a second, one spent on alice's key.
	if statuses[401] != 4 || statuses[429] != 46 {
		t.Fatalf("statuses %v; want 4 × 401 (the budget) and 46 × 429", statuses)
	}
	if r := e.from("192.0.2.51", "/api/conversations/10", key(keyAlice)); r.status != 200 {
		t.Fatalf("a cached key while the budget is spent: %d %s", r.status, r.body)
	}
}
