// Package discord is the REST client of the collector: guild metadata, channel
// lists and message counts from the guild message search, paced to Discord's
// rate limits.
package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults of Config.
const (
	DefaultBaseURL    = "https://discord.com/api/v10"
	DefaultUserAgent  = "DiscordBot (https://github.com/forumstats, 1.0)"
	DefaultGlobalRate = 50
	DefaultMaxRetries = 5
)

const (
	routeGuild    = "/guilds/{id}"
	routeChannels = "/guilds/{id}/channels"
	routeSearch   = "/guilds/{id}/messages/search"

	// codeIndexNotReady comes with HTTP 202 from the search while Discord indexes the guild.
	codeIndexNotReady = 110000
	// maxRateLimited bounds the 429s one call accepts before giving up: a
	// server that keeps answering 429 with retry_after 0 must not spin forever.
	maxRateLimited = 20
	maxBody        = 4 << 20
)

// Config configures a Client; zero fields take the defaults.
type Config struct {
	BaseURL    string        // DISCORD_API_BASE, default DefaultBaseURL
	Token      string        // bot token; "" sends no Authorization (the fake needs none)
	UserAgent  string        // default DefaultUserAgent
	GlobalRate float64       // DISCORD_MAX_RPS: requests per second over all routes, default 50
	HTTPClient *http.Client  // default: a client with a 30 s timeout per attempt
	Logger     *slog.Logger  // default: discard
	MaxRetries int           // retries of 5xx, network errors and 202 (index not ready), default 5
	BackoffMin time.Duration // first backoff after a 5xx or network error, default 500 ms
	BackoffMax time.Duration // cap of the backoff, default 15 s
}

// Client talks to the Discord REST API. It is safe for concurrent use; all
// requests share its rate-limit state, so one Client should serve a whole pass.
type Client struct {
	cfg  Config
	base string
	http *http.Client
	log  *slog.Logger
	lim  *limiter
}

// New returns a client for cfg.
func New(cfg Config) *Client {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	if cfg.GlobalRate <= 0 {
		cfg.GlobalRate = DefaultGlobalRate
	}
	if cfg.HTTPClient == nil {
		// Many requests are in flight at once (as many as the buckets allow, up to the cap
		// times the latency): keep their connections instead of opening new ones.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 256
		cfg.HTTPClient = &http.Client{Timeout: 30 * time.Second, Transport: tr}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	if cfg.BackoffMin <= 0 {
		cfg.BackoffMin = 500 * time.Millisecond
	}
	if cfg.BackoffMax < cfg.BackoffMin {
		cfg.BackoffMax = max(15*time.Second, cfg.BackoffMin)
	}
	return &Client{
		cfg:  cfg,
		base: strings.TrimRight(cfg.BaseURL, "/"),
		http: cfg.HTTPClient,
		log:  cfg.Logger,
		lim:  newLimiter(cfg.GlobalRate),
	}
}

// Guild is the metadata of a guild; Icon and Banner are image hashes, nil when
// the guild has no such image ("a_" prefix: animated).
type Guild struct {
	ID, Name     string
	Icon, Banner *string
}

// Channel is one channel of a guild as Discord lists it.
type Channel struct {
	ID, Name string
	Type     int
	ParentID string // "" when the channel is in no category
	// Overwrites is the channel's permission_overwrites as Discord sent them (compacted JSON):
	// a change may end a 403.
	Overwrites string
}

// MessageBearing reports whether channels of type t hold messages of their own:
// text (0), voice (2), announcement (5) and stage (13).
func MessageBearing(t int) bool {
	switch t {
	case 0, 2, 5, 13:
		return true
	}
	return false
}

// Guild fetches the guild's id, name, icon and banner.
func (c *Client) Guild(ctx context.Context, guildID string) (Guild, error) {
	var g struct {
		ID     string  `json:"id"`
		Name   string  `json:"name"`
		Icon   *string `json:"icon"`
		Banner *string `json:"banner"`
	}
	if err := c.get(ctx, routeGuild, guildID, nil, &g); err != nil {
		return Guild{}, err
	}
	if g.ID == "" {
		return Guild{}, &APIError{Status: http.StatusOK, Route: routeGuild, Message: "answer lacks the guild id"}
	}
	return Guild{ID: g.ID, Name: g.Name, Icon: nonEmpty(g.Icon), Banner: nonEmpty(g.Banner)}, nil
}

// Channels lists all channels of the guild as Discord returns them
// (categories and channels without messages included).
func (c *Client) Channels(ctx context.Context, guildID string) ([]Channel, error) {
	var raw []struct {
		ID         string          `json:"id"`
		Name       string          `json:"name"`
		Type       int             `json:"type"`
		ParentID   *string         `json:"parent_id"`
		Overwrites json.RawMessage `json:"permission_overwrites"`
	}
	if err := c.get(ctx, routeChannels, guildID, nil, &raw); err != nil {
		return nil, err
	}
	out := make([]Channel, 0, len(raw))
	for _, ch := range raw {
		parent := ""
		if ch.ParentID != nil {
			parent = *ch.ParentID
		}
		var ow bytes.Buffer
		if len(ch.Overwrites) > 0 && json.Compact(&ow, ch.Overwrites) != nil {
			ow.Reset()
		}
		out = append(out, Channel{ID: ch.ID, Name: ch.Name, Type: ch.Type, ParentID: parent, Overwrites: ow.String()})
	}
	return out, nil
}

// CountMessages returns total_results of the guild search for [from, to) — exact half-open window;
// channelID "" = whole server.
func (c *Client) CountMessages(ctx context.Context, guildID, channelID string, from, to time.Time) (int64, error) {
	if to.Before(from) {
		return 0, fmt.Errorf("discord: window ends at %s, before its start %s", to.Format(time.RFC3339Nano), from.Format(time.RFC3339Nano))
	}
	if channelID != "" && !isSnowflake(channelID) {
		return 0, fmt.Errorf("discord: invalid channel id %q", channelID)
	}
	minID, maxID, ok := WindowIDs(from, to)
	if !ok {
		return 0, nil // no message can be stamped in the window
	}
	q := url.Values{}
	q.Set("min_id", strconv.FormatUint(minID, 10))
	q.Set("max_id", strconv.FormatUint(maxID, 10))
	if channelID != "" {
		q.Set("channel_id", channelID)
	}
	q.Set("limit", "1")
	q.Set("include_nsfw", "true")
	var res struct {
		TotalResults *int64 `json:"total_results"`
	}
	if err := c.get(ctx, routeSearch, guildID, q, &res); err != nil {
		return 0, err
	}
	if res.TotalResults == nil || *res.TotalResults < 0 {
		return 0, &APIError{Status: http.StatusOK, Route: routeSearch, Message: "answer lacks total_results"}
	}
	return *res.TotalResults, nil
}

// get sends GET route (with {id} = guildID) until it gets an answer to return:
// it waits out rate limits, retries 429s, 202s, 5xx and network errors, and
// decodes a 2xx body into out.
func (c *Client) get(ctx context.Context, route, guildID string, query url.Values, out any) error {
	if !isSnowflake(guildID) {
		return fmt.Errorf("discord: invalid guild id %q", guildID)
	}
	u := c.base + strings.Replace(route, "{id}", guildID, 1)
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	failures, limited := 0, 0
	// retry accounts one failed attempt; it returns err once the retries are spent.
	retry := func(err error, wait time.Duration, reason string) error {
		if failures >= c.cfg.MaxRetries {
			return err
		}
		failures++
		c.log.DebugContext(ctx, "discord: retrying", "route", route, "guild_id", guildID,
			"attempt", failures, "wait", wait, "reason", reason, "err", err)
		return sleepCtx(ctx, wait, nil, reason)
	}
	for {
		p, err := c.lim.acquire(ctx, route, guildID)
		if err != nil {
			return err
		}
		status, header, body, err := c.send(ctx, u)
		if err != nil {
			p.done(nil, 0, 0)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			metricRequests.WithLabelValues(route, "error").Inc()
			if err := retry(fmt.Errorf("discord: GET %s: %w", route, err), c.backoff(failures), waitBackoff); err != nil {
				return err
			}
			continue
		}
		metricRequests.WithLabelValues(route, strconv.Itoa(status)).Inc()
		switch {
		case status == http.StatusTooManyRequests:
			wait, global, scope := parseRateLimited(header, body)
			metricRateLimited.WithLabelValues(scope).Inc()
			c.log.WarnContext(ctx, "discord: rate limited", "route", route, "guild_id", guildID,
				"scope", scope, "retry_after", wait)
			if global {
				c.lim.pauseAll(wait)
				p.done(header, status, 0)
			} else {
				p.done(header, status, wait)
			}
			if limited++; limited > maxRateLimited {
				return apiError(status, body, route)
			}
		case status == http.StatusAccepted:
			p.done(header, status, 0)
			var nr struct {
				Code       int      `json:"code"`
				RetryAfter *float64 `json:"retry_after"`
			}
			if json.Unmarshal(body, &nr) != nil || nr.Code != codeIndexNotReady {
				return apiError(status, body, route)
			}
			wait := time.Second // Discord: retry_after 0 means "after a short delay"
			if nr.RetryAfter != nil && *nr.RetryAfter > 0 {
				wait = secondsDuration(*nr.RetryAfter)
			}
			if err := retry(apiError(status, body, route), wait, waitIndex); err != nil {
				return err
			}
		case status >= 500:
			p.done(header, status, 0)
			if err := retry(apiError(status, body, route), c.backoff(failures), waitBackoff); err != nil {
				return err
			}
		case status >= 200 && status < 300:
			p.done(header, status, 0)
			if err := json.Unmarshal(body, out); err != nil {
				return &APIError{Status: status, Route: route, Message: "malformed answer: " + err.Error()}
			}
			return nil
		default:
			p.done(header, status, 0)
			return apiError(status, body, route)
		}
	}
}

// send performs one attempt; a transport failure (including a body cut short)
// is an error, any HTTP status is not.
func (c *Client) send(ctx context.Context, u string) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, nil, err
	}
	if c.cfg.Token != "" {
		req.Header.Set("Authorization", "Bot "+c.cfg.Token)
	}
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return 0, nil, nil, err
	}
	return resp.StatusCode, resp.Header, body, nil
}

func (c *Client) backoff(attempt int) time.Duration {
	return backoffDelay(attempt, c.cfg.BackoffMin, c.cfg.BackoffMax, rand.Float64())
}

// backoffDelay is the wait before retry number attempt+1: min·2^attempt capped
// at max, of which the upper half is jittered by j in [0, 1) so that clients
// failing together do not retry together.
func backoffDelay(attempt int, minD, maxD time.Duration, j float64) time.Duration {
	d := maxD
	if attempt < 32 {
		if e := minD << attempt; e > 0 && e < maxD {
			d = e
		}
	}
	j = min(max(j, 0), 1)
	return d/2 + time.Duration(j*float64(d/2))
}

// parseRateLimited reads a 429: how long to wait, whether all requests must
// wait, and the scope for the metric.
func parseRateLimited(h http.Header, body []byte) (wait time.Duration, global bool, scope string) {
	var rl struct {
		RetryAfter *float64 `json:"retry_after"`
		Global     bool     `json:"global"`
	}
	_ = json.Unmarshal(body, &rl) // a proxy's 429 may carry no JSON; the headers then tell
	switch {
	case rl.RetryAfter != nil:
		wait = secondsDuration(*rl.RetryAfter)
	default:
		if s, err := strconv.ParseFloat(h.Get("Retry-After"), 64); err == nil {
			wait = secondsDuration(s)
		} else if s, err := strconv.ParseFloat(h.Get("X-RateLimit-Reset-After"), 64); err == nil {
			wait = secondsDuration(s)
		} else {
			wait = time.Second
		}
	}
	scope = strings.ToLower(h.Get("X-RateLimit-Scope"))
	global = rl.Global || strings.EqualFold(h.Get("X-RateLimit-Global"), "true") || scope == "global"
	switch {
	case global:
		scope = "global"
	case scope != "user" && scope != "shared":
		scope = "user"
	}
	return wait, global, scope
}

func apiError(status int, body []byte, route string) *APIError {
	var e struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) != nil || e.Message == "" {
		e.Message = http.StatusText(status)
	}
	return &APIError{Status: status, Code: e.Code, Message: e.Message, Route: route}
}

func nonEmpty(s *string) *string {
	if s == nil || *s == "" {
		return nil
	}
	return s
}

// isSnowflake accepts the decimal form of a uint64, which every Discord id has.
func isSnowflake(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}
