// Package fakediscord is a fake of the three Discord REST endpoints the
// collector uses, over synthetic guilds with deterministic message counts, with
// Discord's rate-limit headers and 429s, and faults to inject for tests.
//
// The search treats min_id and max_id as exclusive bounds, as Discord does. A
// guild-wide search (no channel_id) counts the listed text, voice,
// announcement and stage channels plus two threads per guild that /channels
// does not list, as on Discord: a server's total is deliberately more than the
// sum of its listed channels. Categories and forums hold no messages of their
// own (their search counts 0). Search hits list the newest messages first.
//
// Under FakePrefix the fake also answers what Discord has no API for, for the benchmark and tests
// that drive it as a separate process; the collector never asks it:
//
//	GET  /_fake/count?guild_id=G[&channel_id=C]&from=T&to=T  → {"count": N}
//	GET  /_fake/messages?guild_id=G&from=T&to=T               → {"times": [ms, ...]} (Times)
//	POST /_fake/delete?channel_id=C&ids=I[,I...]              → 204 (Delete)
//	POST /_fake/gateway/drop | reconnect | heartbeat           → 204 (every open connection)
//	POST /_fake/gateway/zombie?on=true|false                   → 204 (SetZombie)
//	POST /_fake/gateway/inject (body: one frame)               → 204 (InjectFrame)
//	POST /_fake/gateway/invalid-session?resumable=true|false   → 204 (InvalidateSessions)
//	POST /_fake/gateway/hold?on=true|false                     → 204 (Hold)
//	POST /_fake/gateway/pump                                   → Pumped (PumpHeld)
//	GET  /_fake/gateway/stats                                  → GatewayStats
//
// N is Count(G, C, from, to) (times RFC 3339): the exact number a correct client must get, deleted
// messages excluded. These requests are not counted in Stats and meet no limit, latency or token.
//
// The fake also serves Discord's gateway (gateway.go): GET /api/v10/gateway/bot names the
// websocket, whose MESSAGE_CREATE events are the same streams the search counts.
package fakediscord

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"forumstats.local/collector-svc/internal/discord"
)

// Options configure the fake. The zero value serves 3 guilds with no limits.
type Options struct {
	Seed             int64 // the dataset is a pure function of Seed, Guilds and ChannelsPerGuild
	Guilds           int   // default 3
	ChannelsPerGuild int   // listed channels per guild; default 6 to 8 depending on the guild

	// RateLimit is the global cap in requests per second, enforced with a token
	// bucket of RateBurst (default max(1, RateLimit/4)); 0 = none. Excess
	// requests get a global 429. The burst only absorbs timing noise: the
	// fake stamps a request when its handler runs, and a busy machine can run
	// several handlers late and together; a quarter of a second is Discord's
	// "per second" with some margin to spare.
	RateLimit float64
	RateBurst int
	// BucketLimit is the per-route limit: requests per BucketWindow (default 1 s)
	// for each bucket and guild, announced in X-RateLimit-* headers on every
	// answer of the route; 0 = no per-route limit and no headers.
	// /guilds/{id} and /guilds/{id}/channels share one bucket; the search has its own.
	BucketLimit  int
	BucketWindow time.Duration
	// SearchBucketLimit, when positive, is the search's own limit per guild and BucketWindow
	// (Discord's search buckets are per guild and tight, e.g. 10 a second), with headers even
	// when BucketLimit is 0; 0 = BucketLimit.
	SearchBucketLimit int

	// Inject429Every answers every Nth request with a 429 of retry_after
	// InjectRetryAfter (default 100 ms), alternately of scope "user" and
	// "global"; 0 = never.
	Inject429Every   int
	InjectRetryAfter time.Duration
	// IndexWarmup, when positive, makes the first search of each guild answer
	// 202 with code 110000 and retry_after of this duration.
	IndexWarmup time.Duration
	// Forbidden lists channel ids whose search answers 403 Missing Access.
	Forbidden []string

	Latency time.Duration // added before every answer
	Token   string        // when set, requests need "Authorization: Bot <Token>", else 401
	// MessageRate multiplies every channel's hourly message rate (1 to 24 an hour at the busiest
	// hour, before noise); default 1, at most 50000 (a channel never has two messages in one
	// millisecond). It is part of the dataset: history and the gateway's live messages are the
	// same streams, so search, Count and MESSAGE_CREATE always agree.
	MessageRate int

	Gateway GatewayOptions // the gateway's knobs (see gateway.go)

	// Clock, when set, hides messages stamped after Clock(); nil keeps the whole
	// synthetic history, future included, so that counts never depend on when
	// they are asked. A search without max_id ends at Clock(), or at the real
	// time when Clock is nil.
	Clock func() time.Time
}

// DemoOptions are the options of `collector-svc fake-discord`: Discord's
// global limit, per-route buckets, a little latency, index warm-up and no
// messages from the future.
func DemoOptions() Options {
	return Options{
		Seed:         1,
		RateLimit:    50,
		BucketLimit:  25,
		BucketWindow: time.Second,
		IndexWarmup:  500 * time.Millisecond,
		Latency:      20 * time.Millisecond,
		Clock:        time.Now,
	}
}

// Stats are the fake's counters.
type Stats struct {
	Requests      int64 // every request received
	RateLimited   int64 // 429 answers for exceeding the limits (not the injected ones)
	GlobalLimited int64 // of which for the global limit
	Injected429   int64 // 429 answers from Inject429Every
	IndexWarmup   int64 // 202 answers
}

// Server is the fake; its Handler serves the API under any /api/vN prefix or none.
type Server struct {
	opts      Options
	guilds    []*guild
	byID      map[uint64]*guild
	forbidden map[uint64]bool

	requests, rateLimited, globalLimited, injected, warmups atomic.Int64

	chanGuild map[uint64]*guild

	// deleted holds the deleted messages per channel: search, Count and the gateway skip them.
	dmu     sync.RWMutex
	deleted map[uint64]map[uint64]bool

	gw *gatewayState

	mu      sync.Mutex
	tokens  float64   // global token bucket
	last    time.Time // of the token bucket
	windows map[string]*window
	warmed  map[uint64]bool
}

type window struct {
	start time.Time
	count int
}

// New builds the fake and its dataset.
func New(opts Options) *Server {
	if opts.Guilds <= 0 {
		opts.Guilds = 3
	}
	if opts.RateBurst <= 0 {
		opts.RateBurst = max(1, int(opts.RateLimit/4))
	}
	if opts.BucketWindow <= 0 {
		opts.BucketWindow = time.Second
	}
	if opts.InjectRetryAfter <= 0 {
		opts.InjectRetryAfter = 100 * time.Millisecond
	}
	opts.MessageRate = min(max(opts.MessageRate, 1), maxMessageRate)
	opts.Gateway = opts.Gateway.withDefaults()
	s := &Server{
		opts:      opts,
		guilds:    buildGuilds(opts.Seed, opts.Guilds, opts.ChannelsPerGuild, uint64(opts.MessageRate)),
		byID:      map[uint64]*guild{},
		forbidden: map[uint64]bool{},
		tokens:    float64(opts.RateBurst),
		windows:   map[string]*window{},
		warmed:    map[uint64]bool{},
		chanGuild: map[uint64]*guild{},
		deleted:   map[uint64]map[uint64]bool{},
		gw:        newGatewayState(opts.Gateway.Held),
	}
	for _, g := range s.guilds {
		s.byID[g.id] = g
		for _, c := range g.channels {
			s.chanGuild[c.id] = g
		}
	}
	for _, id := range opts.Forbidden {
		if v, err := strconv.ParseUint(id, 10, 64); err == nil {
			s.forbidden[v] = true
		}
	}
	return s
}

// CatalogEntry is one line of a CATALOG_FILE.
type CatalogEntry struct {
	Number  int    `json:"number"`
	Name    string `json:"name"`
	GuildID string `json:"guildId"`
}

// Catalog lists the fake's guilds, numbered from 1.
func (s *Server) Catalog() []CatalogEntry {
	out := make([]CatalogEntry, 0, len(s.guilds))
	for _, g := range s.guilds {
		out = append(out, CatalogEntry{Number: g.number, Name: g.name, GuildID: strconv.FormatUint(g.id, 10)})
	}
	return out
}

// Guild is a fake guild as the collector sees it: its metadata and the listed channels whose
// messages it counts (threads are not listed, but the guild's count includes them).
type Guild struct {
	Number   int
	Name     string
	GuildID  string
	Icon     *string
	Banner   *string
	Channels []Channel
}

// Channel is a listed channel that holds messages.
type Channel struct {
	ID   string
	Name string
}

// Guilds lists the fake's guilds in catalog order, for data built from the same dataset the API
// serves (the demo reports).
func (s *Server) Guilds() []Guild {
	out := make([]Guild, 0, len(s.guilds))
	for _, g := range s.guilds {
		v := Guild{Number: g.number, Name: g.name, GuildID: strconv.FormatUint(g.id, 10), Icon: g.icon, Banner: g.banner}
		for _, c := range g.channels {
			if !c.thread && discord.MessageBearing(c.typ) {
				v.Channels = append(v.Channels, Channel{ID: strconv.FormatUint(c.id, 10), Name: c.name})
			}
		}
		out = append(out, v)
	}
	return out
}

// Stats returns the counters.
func (s *Server) Stats() Stats {
	return Stats{
		Requests:      s.requests.Load(),
		RateLimited:   s.rateLimited.Load(),
		GlobalLimited: s.globalLimited.Load(),
		Injected429:   s.injected.Load(),
		IndexWarmup:   s.warmups.Load(),
	}
}

// Count is the exact number of messages stamped in [from, to) in the channel,
// or in the whole guild (threads included) when channelID is "": what a
// correct client must get from the search. It is computed in milliseconds,
// independently of the snowflake bounds the search handler works with.
func (s *Server) Count(guildID, channelID string, from, to time.Time) int64 {
	chans, err := s.streams(guildID, channelID)
	if err != nil {
		return 0
	}
	a, b := ceilMilli(from), ceilMilli(to)
	if s.opts.Clock != nil {
		b = min(b, s.opts.Clock().UnixMilli()+1)
	}
	var n int64
	for _, c := range chans {
		n += c.msgs.countMs(a, b) - s.deletedMs(c.id, a, b)
	}
	return n
}

// Messages returns up to limit messages stamped in [from, to), newest first,
// as the search lists them.
func (s *Server) Messages(guildID, channelID string, from, to time.Time, limit int) ([]Message, error) {
	chans, err := s.streams(guildID, channelID)
	if err != nil {
		return nil, err
	}
	lo, hi, ok := discord.WindowIDs(from, to)
	if !ok {
		return nil, nil
	}
	return s.latest(chans, lo, hi, limit), nil
}

func (s *Server) latest(chans []*channel, minID, maxID uint64, limit int) []Message {
	if minID == math.MaxUint64 {
		return nil
	}
	maxID = s.capID(maxID)
	lists := make([][]Message, 0, len(chans))
	for _, c := range chans {
		lists = append(lists, s.liveLatest(c, minID+1, maxID, limit))
	}
	return newest(lists, limit)
}

// capID lowers an exclusive upper snowflake bound to hide messages after Clock().
func (s *Server) capID(maxID uint64) uint64 {
	if s.opts.Clock == nil {
		return maxID
	}
	return min(maxID, discord.SnowflakeAt(s.opts.Clock().Add(time.Millisecond)))
}

var (
	errUnknownGuild   = &apiErr{http.StatusNotFound, 10004, "Unknown Guild"}
	errUnknownChannel = &apiErr{http.StatusNotFound, 10003, "Unknown Channel"}
)

type apiErr struct {
	status  int
	code    int
	message string
}

func (e *apiErr) Error() string { return e.message }

// streams returns the channels whose messages a search counts.
func (s *Server) streams(guildID, channelID string) ([]*channel, error) {
	gid, err := strconv.ParseUint(guildID, 10, 64)
	g := s.byID[gid]
	if err != nil || g == nil {
		return nil, errUnknownGuild
	}
	if channelID == "" {
		var out []*channel
		for _, c := range g.channels {
			if c.holdsMessages() {
				out = append(out, c)
			}
		}
		return out, nil
	}
	cid, err := strconv.ParseUint(channelID, 10, 64)
	c := g.byID[cid]
	if err != nil || c == nil {
		return nil, errUnknownChannel
	}
	if !c.holdsMessages() {
		return nil, nil // a category or forum holds no message of its own
	}
	return []*channel{c}, nil
}

var (
	apiPrefix  = regexp.MustCompile(`^/api/v[0-9]+`)
	routeRegex = regexp.MustCompile(`^/guilds/([0-9]{1,20})(/channels|/messages/search)?/?$`)
)

// Handler serves the fake API.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serve) }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, FakePrefix) {
		s.serveFake(w, r)
		return
	}
	if r.URL.Path == gatewayPath || r.URL.Path == resumePath {
		s.serveGateway(w, r) // the websocket: no REST limit, latency or Stats
		return
	}
	n := s.requests.Add(1)
	if s.opts.Latency > 0 {
		t := time.NewTimer(s.opts.Latency)
		select {
		case <-r.Context().Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	if d, ok := s.takeGlobal(time.Now()); !ok {
		s.rateLimited.Add(1)
		s.globalLimited.Add(1)
		write429(w, d, "global")
		return
	}
	if every := int64(s.opts.Inject429Every); every > 0 && n%every == 0 {
		s.injected.Add(1)
		scope := "user"
		if (n/every)%2 == 0 {
			scope = "global"
		}
		write429(w, s.opts.InjectRetryAfter, scope)
		return
	}
	if s.opts.Token != "" && r.Header.Get("Authorization") != "Bot "+s.opts.Token {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "401: Unauthorized", "code": 0})
		return
	}
	route := apiPrefix.ReplaceAllString(r.URL.Path, "")
	if route == "/gateway/bot" || route == "/gateway/bot/" {
		if r.Method != http.MethodGet {
			writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"message": "405: Method Not Allowed", "code": 0})
			return
		}
		s.serveGatewayBot(w, r)
		return
	}
	m := routeRegex.FindStringSubmatch(route)
	if m == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "404: Not Found", "code": 0})
		return
	}
	if r.Method != http.MethodGet {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"message": "405: Method Not Allowed", "code": 0})
		return
	}
	guildID, sub := m[1], m[2]
	gid, _ := strconv.ParseUint(guildID, 10, 64)
	g := s.byID[gid]
	if g == nil {
		writeErr(w, errUnknownGuild)
		return
	}
	bucket := "guild"
	if sub == "/messages/search" {
		bucket = "search"
	}
	if !s.takeBucket(w, bucket, g.id, time.Now()) {
		return
	}
	switch sub {
	case "":
		writeJSON(w, http.StatusOK, guildJSON(g))
	case "/channels":
		writeJSON(w, http.StatusOK, channelsJSON(g))
	default:
		s.search(w, r, g)
	}
}

// FakePrefix is the path of the fake's own endpoints (see the package documentation).
const FakePrefix = "/_fake/"

// serveFake answers the fake's own endpoints.
func (s *Server) serveFake(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == FakePrefix+"delete" || strings.HasPrefix(r.URL.Path, FakePrefix+"gateway/") {
		s.serveControl(w, r)
		return
	}
	if r.URL.Path != FakePrefix+"count" && r.URL.Path != FakePrefix+"messages" {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "404: Not Found", "code": 0})
		return
	}
	q := r.URL.Query()
	from, errFrom := time.Parse(time.RFC3339Nano, q.Get("from"))
	to, errTo := time.Parse(time.RFC3339Nano, q.Get("to"))
	if errFrom != nil || errTo != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": "from and to must be RFC 3339 times", "code": 0})
		return
	}
	if _, err := s.streams(q.Get("guild_id"), q.Get("channel_id")); err != nil {
		writeErr(w, err)
		return
	}
	if r.URL.Path == FakePrefix+"messages" {
		if q.Get("channel_id") != "" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"message": "messages lists a whole server: no channel_id", "code": 0})
			return
		}
		times, err := s.Times(q.Get("guild_id"), from, to)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"message": err.Error(), "code": 0})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"times": times})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": s.Count(q.Get("guild_id"), q.Get("channel_id"), from, to)})
}

// MaxTimes is the most messages Times lists in one answer.
const MaxTimes = 500000

// Times lists the time (Unix ms) of every message of the guild stamped in [from, to), as Count
// counts them (deleted ones left out), oldest first: what a benchmark needs to tell when each
// message was made. More than MaxTimes is an error: ask for a shorter range.
func (s *Server) Times(guildID string, from, to time.Time) ([]int64, error) {
	chans, err := s.streams(guildID, "")
	if err != nil {
		return nil, err
	}
	if n := s.Count(guildID, "", from, to); n > MaxTimes {
		return nil, fmt.Errorf("%d messages in the range, more than %d: ask for a shorter one", n, MaxTimes)
	}
	a, b := ceilMilli(from), ceilMilli(to)
	if s.opts.Clock != nil {
		b = min(b, s.opts.Clock().UnixMilli()+1)
	}
	times := []int64{}
	for _, c := range chans {
		for _, m := range c.msgs.between(c.id, a, b) {
			if !s.isDeleted(c.id, m.ID) {
				times = append(times, m.Ms)
			}
		}
	}
	slices.Sort(times)
	return times, nil
}

// takeGlobal takes a token of the global bucket, or says how long until one is there.
func (s *Server) takeGlobal(now time.Time) (time.Duration, bool) {
	if s.opts.RateLimit <= 0 {
		return 0, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.last.IsZero() {
		s.tokens = min(float64(s.opts.RateBurst), s.tokens+now.Sub(s.last).Seconds()*s.opts.RateLimit)
	}
	s.last = now
	if s.tokens >= 1 {
		s.tokens--
		return 0, true
	}
	return time.Duration((1 - s.tokens) / s.opts.RateLimit * float64(time.Second)), false
}

// takeBucket applies the per-route limit (a fixed window per bucket and guild),
// sets the X-RateLimit-* headers and answers the 429 itself when over it.
func (s *Server) takeBucket(w http.ResponseWriter, bucket string, guildID uint64, now time.Time) bool {
	limit := s.opts.BucketLimit
	if bucket == "search" && s.opts.SearchBucketLimit > 0 {
		limit = s.opts.SearchBucketLimit
	}
	if limit <= 0 {
		return true
	}
	hash := bucketHash(s.opts.Seed, bucket)
	s.mu.Lock()
	key := hash + "|" + strconv.FormatUint(guildID, 10)
	win := s.windows[key]
	if win == nil || !now.Before(win.start.Add(s.opts.BucketWindow)) {
		win = &window{start: now}
		s.windows[key] = win
	}
	allowed := win.count < limit
	if allowed {
		win.count++
	}
	remaining := limit - win.count
	reset := win.start.Add(s.opts.BucketWindow)
	s.mu.Unlock()

	h := w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(remaining))
	h.Set("X-RateLimit-Reset", strconv.FormatFloat(float64(reset.UnixMilli())/1000, 'f', 3, 64))
	h.Set("X-RateLimit-Reset-After", seconds(reset.Sub(now)))
	h.Set("X-RateLimit-Bucket", hash)
	if !allowed {
		s.rateLimited.Add(1)
		write429(w, reset.Sub(now), "user")
	}
	return allowed
}

func bucketHash(seed int64, name string) string {
	var h uint64
	for _, c := range name {
		h = mix(h, uint64(c))
	}
	return fmt.Sprintf("%016x%016x", mix(uint64(seed), h), mix(h, uint64(seed)))
}

func (s *Server) search(w http.ResponseWriter, r *http.Request, g *guild) {
	q := r.URL.Query()
	minID, maxID := uint64(0), uint64(math.MaxUint64)
	var bad []string
	parse := func(name string, dst *uint64) {
		if v := q.Get(name); v != "" {
			id, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				bad = append(bad, name)
			}
			*dst = id
		}
	}
	parse("min_id", &minID)
	parse("max_id", &maxID)
	if q.Get("max_id") == "" {
		// Without max_id the search ends now, not at the end of the synthetic history.
		now := time.Now
		if s.opts.Clock != nil {
			now = s.opts.Clock
		}
		maxID = discord.SnowflakeAt(now().Add(time.Millisecond))
	}
	limit := 25
	if v := q.Get("limit"); v != "" {
		l, err := strconv.Atoi(v)
		if err != nil || l < 1 || l > 25 {
			bad = append(bad, "limit")
		}
		limit = l
	}
	var channelID uint64
	parse("channel_id", &channelID)
	if len(bad) > 0 {
		writeJSON(w, http.StatusBadRequest, map[string]any{
			"message": "Invalid Form Body", "code": 50035, "errors": bad,
		})
		return
	}
	if s.opts.IndexWarmup > 0 {
		s.mu.Lock()
		first := !s.warmed[g.id]
		s.warmed[g.id] = true
		s.mu.Unlock()
		if first {
			s.warmups.Add(1)
			writeRaw(w, http.StatusAccepted, fmt.Sprintf(
				`{"message":"Index not yet available. Try again later","code":110000,"documents_indexed":0,"retry_after":%s}`,
				seconds(s.opts.IndexWarmup)))
			return
		}
	}
	cid := q.Get("channel_id")
	if channelID != 0 && s.forbidden[channelID] {
		writeJSON(w, http.StatusForbidden, map[string]any{"message": "Missing Access", "code": 50001})
		return
	}
	chans, err := s.streams(strconv.FormatUint(g.id, 10), cid)
	if err != nil {
		writeErr(w, err)
		return
	}
	upper := s.capID(maxID)
	var total int64
	for _, c := range chans {
		total += c.msgs.countIDs(minID, upper)
		if minID != math.MaxUint64 && upper > minID+1 {
			total -= s.deletedCount(c.id, minID+1, upper)
		}
	}
	hits := s.latest(chans, minID, maxID, limit)
	msgs := make([][]map[string]any, 0, len(hits))
	for _, m := range hits {
		msgs = append(msgs, []map[string]any{messageJSON(g, m)})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"total_results":               total,
		"messages":                    msgs,
		"analytics_id":                fmt.Sprintf("%032x", mix(g.id, minID, maxID)),
		"doing_deep_historical_index": false,
	})
}

func guildJSON(g *guild) map[string]any {
	return map[string]any{
		"id":                       strconv.FormatUint(g.id, 10),
		"name":                     g.name,
		"icon":                     g.icon,
		"banner":                   g.banner,
		"splash":                   nil,
		"description":              nil,
		"owner_id":                 strconv.FormatUint(mix(g.id)>>1&(1<<62-1), 10),
		"features":                 []string{},
		"premium_tier":             0,
		"preferred_locale":         "en-US",
		"verification_level":       1,
		"approximate_member_count": nil,
	}
}

func channelsJSON(g *guild) []map[string]any {
	out := []map[string]any{}
	for pos, c := range g.channels {
		if c.thread {
			continue
		}
		var parent any
		if c.parent != 0 {
			parent = strconv.FormatUint(c.parent, 10)
		}
		out = append(out, map[string]any{
			"id":        strconv.FormatUint(c.id, 10),
			"type":      c.typ,
			"guild_id":  strconv.FormatUint(g.id, 10),
			"name":      c.name,
			"position":  pos,
			"parent_id": parent,
			"nsfw":      false,
		})
	}
	return out
}

func messageJSON(g *guild, m Message) map[string]any {
	author := mix(g.id, m.ID) % 16
	return map[string]any{
		"id":         strconv.FormatUint(m.ID, 10),
		"channel_id": strconv.FormatUint(m.ChannelID, 10),
		"type":       0,
		"content":    fmt.Sprintf("synthetic message %d", m.ID%10000),
		"timestamp":  time.UnixMilli(m.Ms).UTC().Format("2006-01-02T15:04:05.000000+00:00"),
		"author": map[string]any{
			"id":            strconv.FormatUint(snowflake(discord.Epoch+int64(author)*86_400_000+86_400_000, author), 10),
			"username":      fmt.Sprintf("member%02d", author),
			"discriminator": "0",
		},
		"hit": true,
	}
}

func write429(w http.ResponseWriter, d time.Duration, scope string) {
	h := w.Header()
	h.Set("Retry-After", strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10))
	h.Set("X-RateLimit-Scope", scope)
	global := scope == "global"
	if global {
		h.Set("X-RateLimit-Global", "true")
	}
	writeRaw(w, http.StatusTooManyRequests, fmt.Sprintf(
		`{"message":"You are being rate limited.","retry_after":%s,"global":%t}`, seconds(d), global))
}

func writeErr(w http.ResponseWriter, err error) {
	e, ok := err.(*apiErr)
	if !ok {
		e = &apiErr{http.StatusInternalServerError, 0, "500: Internal Server Error"}
	}
	writeJSON(w, e.status, map[string]any{"message": e.message, "code": e.code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"message":"500: Internal Server Error","code":0}`)
	}
	writeRaw(w, status, string(b))
}

func writeRaw(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// seconds formats d as Discord does: seconds with millisecond precision, rounded up.
func seconds(d time.Duration) string {
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return strconv.FormatFloat(float64(max(ms, 0))/1000, 'f', 3, 64)
}

func ceilMilli(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.Nanosecond()%int(time.Millisecond) != 0 {
		ms++
	}
	return ms
}
