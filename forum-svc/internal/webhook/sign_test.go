package webhook_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"forumstats.local/forum-svc/internal/webhook"
)

// The Standard Webhooks specification's published example: a receiver library accepts what
// Sign makes only if this holds.
func TestSignatureVector(t *testing.T) {
	key, err := webhook.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got := webhook.Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("signature %q; want %q", got, want)
	}
	h := http.Header{}
	h.Set(webhook.HeaderID, "msg_p5jXN8AQM9LWM0D4loKWxJek")
	h.Set(webhook.HeaderTimestamp, "1614265330")
	h.Set(webhook.HeaderSignature, "v1,bm9wZQ== "+got)
	if err := webhook.Verify(key, h, []byte(`{"test": 2432232314}`), time.Unix(1614265330, 0)); err != nil {
		t.Fatalf("Verify of the vector among two signatures: %v", err)
	}
	if err := webhook.Verify(key, h, []byte(`{"test": 2432232314}`), time.Unix(1614265330, 0).Add(6*time.Minute)); err == nil {
		t.Fatal("Verify accepted a timestamp six minutes old")
	}
}

func TestParseSecret(t *testing.T) {
	s, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		secret string
		ok     bool
	}{
		{s, true},
		{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", true},
		{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", false},    // no prefix
		{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2La", false},  // not base64
		{"whsec_c2hvcnQ=", false},                      // 5 bytes
		{"whsec_" + strings.Repeat("QUFB", 22), false}, // 66 bytes
		{"whsec_", false},
	} {
		_, err := webhook.ParseSecret(tc.secret)
		if (err == nil) != tc.ok {
			t.Errorf("ParseSecret(%q): %v; want ok=%v", tc.secret, err, tc.ok)
		}
	}
	if !strings.HasPrefix(s, "whsec_") || len(s) != len("whsec_")+32 {
		t.Errorf("NewSecret() = %q", s)
	}
}

func FuzzSignVerify(f *testing.F) {
	f.Add("msg_1", int64(1614265330), []byte(`{"test": 2432232314}`), byte(0))
	f.Add("", int64(0), []byte{}, byte(7))
	key := bytes.Repeat([]byte{7}, 24)
	f.Fuzz(func(t *testing.T, id string, ts int64, body []byte, flip byte) {
		if id == "" || strings.ContainsAny(id, "\r\n\x00") || ts < 0 || ts > 1<<40 {
			return
		}
		h := http.Header{}
		at := time.Unix(ts, 0)
		webhook.SetHeaders(h, key, id, at, body)
		if h.Get(webhook.HeaderID) != id {
			return // a header value net/http would not keep as is
		}
		if err := webhook.Verify(key, h, body, at); err != nil {
			t.Fatalf("own signature refused: %v", err)
		}
		tampered := append(append([]byte{}, body...), flip)
		if err := webhook.Verify(key, h, tampered, at); err == nil {
			t.Fatal("a longer body verified")
		}
	})
}

func TestParseEvents(t *testing.T) {
	for _, tc := range []struct {
		in, want string // want "" : refused
	}{
		{"message.created", "message.created"},
		{"message_created, conversation.created,message.created", "conversation.created message.created"},
		{"read_state_changed", "read_state.changed"},
		{"*", "*"},
		{"participant.left,*", "* participant.left"},
		{"message.deleted", ""},
		{" , ", ""},
		{"", ""},
	} {
		got, err := webhook.ParseEvents(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("ParseEvents(%q) = %v; want an error", tc.in, got)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("ParseEvents(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://example.com/hook", true},
		{"http://127.0.0.1:9000/", true}, // where it points is checked when dialling
		{"ftp://example.com/", false},
		{"/relative", false},
		{"https://user:pw@example.com/", false},
		{"https://", false},
		{"https://:80/", false},
	} {
		if err := webhook.CheckURL(tc.url); (err == nil) != tc.ok {
			t.Errorf("CheckURL(%q): %v; want ok=%v", tc.url, err, tc.ok)
		}
	}
}

func TestPublicAddress(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		public bool
	}{
		{"93.184.216.34", true},
		{"2606:2800:220:1:248:1893:25c8:1946", true},
		{"127.0.0.1", false},
		{"::1", false},
		{"10.1.2.3", false},
		{"172.16.0.1", false},
		{"192.168.1.1", false},
		{"169.254.169.254", false}, // cloud metadata
		{"100.64.0.1", false},
		{"0.0.0.0", false},
		{"::", false},
		{"fe80::1", false},
		{"fc00::1", false},
		{"::ffff:127.0.0.1", false}, // IPv4-mapped loopback
		{"::ffff:10.0.0.1", false},
		{"64:ff9b::a00:1", false}, // NAT64 of 10.0.0.1
		{"2002:a00:1::", false},   // 6to4 of 10.0.0.1
		{"224.0.0.1", false},
		{"255.255.255.255", false},
	} {
		if got := webhook.PublicAddress(netip.MustParseAddr(tc.addr)); got != tc.public {
			t.Errorf("PublicAddress(%s) = %v; want %v", tc.addr, got, tc.public)
		}
	}
}

func TestBackoff(t *testing.T) {
	lo, hi := 5*time.Second, time.Hour
	for _, tc := range []struct {
		n      int
		jitter float64
		want   time.Duration
	}{
		{1, 0, 5 * time.Second},
		{1, 0.999999, 6250 * time.Millisecond},
		{2, 0, 10 * time.Second},
		{3, 0.5, 20 * time.Second * 9 / 8},
		{10, 0, 2560 * time.Second},
		{11, 0, time.Hour},
		{100, 0.5, time.Hour * 9 / 8},
	} {
		got := webhook.Backoff(tc.n, lo, hi, tc.jitter)
		if d := got - tc.want; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("Backoff(%d, jitter %v) = %v; want %v", tc.n, tc.jitter, got, tc.want)
		}
	}
}

func TestTypeOf(t *testing.T) {
	for in, want := range map[string]string{
		"message_created": "message.created", "read_state_changed": "read_state.changed", "participant_left": "participant.left",
	} {
		if got := webhook.TypeOf(in); got != want {
			t.Errorf("TypeOf(%q) = %q; want %q", in, got, want)
		}
	}
}

func TestReceiver(t *testing.T) {
	key := bytes.Repeat([]byte{1}, 32)
	now := time.Unix(1700000000, 0)
	var seen []string
	h := webhook.Receiver(key, func() time.Time { return now }, func(id string, body []byte, err error) {
		seen = append(seen, fmt.Sprintf("%s %s %v", id, body, err == nil))
	})
	for _, tc := range []struct {
		name   string
		method string
		sign   []byte // the key signing the request; nil: no headers
		at     time.Time
		body   string
		want   int
	}{
		{"signed", "POST", key, now, `{"a":1}`, 204},
		{"other key", "POST", bytes.Repeat([]byte{2}, 32), now, `{"a":1}`, 401},
		{"unsigned", "POST", nil, now, `{}`, 401},
		{"stale", "POST", key, now.Add(-10 * time.Minute), `{}`, 401},
		{"GET", "GET", key, now, ``, 405},
		{"too large", "POST", key, now, strings.Repeat("x", 1<<20+1), 413},
	} {
		r := httptest.NewRequest(tc.method, "/", strings.NewReader(tc.body))
		if tc.sign != nil {
			webhook.SetHeaders(r.Header, tc.sign, "msg_1", tc.at, []byte(tc.body))
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("%s: %d; want %d", tc.name, w.Code, tc.want)
		}
	}
	if want := []string{`msg_1 {"a":1} true`, `msg_1 {"a":1} false`, ` {} false`, `msg_1 {} false`}; strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Errorf("seen %q; want %q", seen, want)
	}
}
