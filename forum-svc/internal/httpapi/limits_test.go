package httpapi_test

import (
	"strings"
	"testing"

	"forumstats.local/shared/config"
	"forumstats.local/shared/server/servertest"
)

// A request head of up to net/http's cap (64 KiB) reaches the service's error handling: 414
// uri_too_long and 431 request_header_fields_too_large in the errors envelope, over the real
// http.Server of shared/server (net/http would otherwise answer plain text first).
func TestOversizedRequestHead(t *testing.T) {
	e := newEnv(t, envOptions{})
	addr, _ := servertest.Serve(t, e.h, config.HTTP{})
	for _, tt := range []struct {
		name, target, headers string
		status                int
		code                  string
	}{
		{"60 KB query string", "/api/conversations/1/messages?page=" + strings.Repeat("1", 60<<10), "", 414, "uri_too_long"},
		{"60 KB query string, unknown route", "/nowhere?x=" + strings.Repeat("1", 60<<10), "", 414, "uri_too_long"},
		// Percent-encoded: 30 KB as sent, 10 KB decoded. The trailing slash's removal must not
		// measure the decoded path.
		{"30 KB encoded path, trailing slash", "/api/conversation-messages/" + strings.Repeat("%C3%A9", 5120) + "/", "", 414, "uri_too_long"},
		{"30 KB encoded path", "/api/conversation-messages/" + strings.Repeat("%C3%A9", 5120), "", 414, "uri_too_long"},
		{"header block just under net/http's cap", "/api/conversations/1", servertest.Headers(60 << 10), 431, "request_header_fields_too_large"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := servertest.Raw(t, addr, "GET", tt.target, tt.headers)
			wantError(t, response{status: res.Status, header: res.Header, body: res.Body}, tt.status, tt.code, nil)
		})
	}
}
