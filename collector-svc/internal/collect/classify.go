package collect

import (
	"context"
	"errors"
	"net"

	"forumstats.local/collector-svc/internal/discord"
)

// Codes of the error a stale report carries ({"code", "message"} in stats-svc's answers).
const (
	CodeUnauthorized       = "unauthorized"        // 401: the token is wrong; the pass stopped
	CodeForbidden          = "forbidden"           // 403 on the guild itself
	CodeNotFound           = "not_found"           // 404: the guild is gone or the bot is not in it
	CodeRateLimited        = "rate_limited"        // still 429 after the retries
	CodeIndexNotReady      = "index_not_ready"     // still 202 (search index) after the retries
	CodeDiscordUnavailable = "discord_unavailable" // 5xx or network failure after the retries
	CodeTimeout            = "timeout"
	CodeDiscordError       = "discord_error" // any other answer of Discord
	CodeStoreError         = "store_error"   // the report could not be written
	// CodeGapNotFilled: the gateway was not connected during part of the period and the search
	// that counts that part has not been made yet (reports written from live counts).
	CodeGapNotFilled = "gap_not_filled"
)

// maxMessage bounds the message stored with a stale report (stats-svc serves it publicly).
const maxMessage = 300

// Classify gives the code and message a report stores when counting it failed with err.
func Classify(err error) (code, message string) {
	var (
		apiErr *discord.APIError
		netErr net.Error
	)
	switch {
	case errors.Is(err, discord.ErrUnauthorized):
		code = CodeUnauthorized
	case errors.Is(err, discord.ErrForbidden):
		code = CodeForbidden
	case errors.Is(err, discord.ErrNotFound):
		code = CodeNotFound
	case errors.Is(err, context.DeadlineExceeded):
		code = CodeTimeout
	case errors.As(err, &apiErr):
		switch {
		case apiErr.Status == 429:
			code = CodeRateLimited
		case apiErr.Status == 202:
			code = CodeIndexNotReady
		case apiErr.Status >= 500:
			code = CodeDiscordUnavailable
		default:
			code = CodeDiscordError
		}
	case errors.As(err, &netErr) && netErr.Timeout():
		code = CodeTimeout
	case errors.As(err, &netErr):
		code = CodeDiscordUnavailable
	default:
		code = CodeDiscordError
	}
	return code, truncate(err.Error(), maxMessage)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary.
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
