// Package answers composes the statistics and icons answers from stored
// report rows: the missing/stale/ok rules, age-staleness, channel merging,
// all-server totals, CDN links and the JSON encoding. It does no I/O.
package answers

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"forumstats.local/shared/reports"
	"forumstats.local/stats-svc/internal/query"
)

// ErrServerNotFound: a well-formed server parameter names no catalog server.
var ErrServerNotFound = errors.New("server not found")

// ErrDatabaseUnavailable: the database could not be reached or dropped the connection (as
// opposed to an error of a statement); the cache answers from its stale copies if it has one.
var ErrDatabaseUnavailable = errors.New("database unavailable")

// Server is a catalog entry with its current guild metadata.
type Server struct {
	Number      int
	Name        string
	GuildID     string
	Icon        *string
	Banner      *string
	BannerKnown bool // false: metadata predates banner collection
}

// Channel is a channel's count over the period and its newest name.
type Channel struct {
	GuildID  string
	ID       string
	Name     string
	Messages int64
}

// Data is everything a statistics answer is composed from.
type Data struct {
	RefreshMinutes int
	// Servers are ordered by number; exactly one when the query names a server.
	Servers []Server
	// Reports are the monthly reports of the month, or the daily reports of
	// the period's days, of those servers.
	Reports []reports.Row
	// Channels are summed over the period per server and channel.
	Channels []Channel
}

// Links builds CDN links for icons and banners.
type Links struct {
	CDN string // e.g. https://cdn.discordapp.com, no trailing slash needed
}

// Answer is an encoded response body, the instant it stops being valid (zero:
// it changes only with the data) and the data generation it was read at.
type Answer struct {
	Body       []byte
	ValidUntil time.Time
	Generation int64
	// ETag is Tag(Body) once the cache has computed it (once per cached
	// answer, so that a hit costs no hashing); "" until then.
	ETag string
	// Stale: the cache served this copy past its validity (ValidUntil) because the database
	// could not be reached; the body and ETag are the cached ones.
	Stale bool
}

// Tag is the strong entity tag of a body: a hash of its bytes, so that it
// changes exactly when the body does, whatever the generation or the clock.
func Tag(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
}

type reportError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type channelJSON struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Messages int64  `json:"messages"`
}

// serverInfo is a server as both the statistics and the icons answers begin it.
type serverInfo struct {
	Number    int     `json:"number"`
	Name      string  `json:"name"`
	GuildID   string  `json:"guildId"`
	IconURL   *string `json:"iconUrl"`
	BannerURL *string `json:"bannerUrl"`
}

type serverReport struct {
	serverInfo                  // its fields first, as if written here
	TotalMessages *int64        `json:"totalMessages"`
	Channels      []channelJSON `json:"channels"`
	GeneratedAt   *string       `json:"generatedAt"`
	Status        string        `json:"status"`
	Error         *reportError  `json:"error"`
}

type statisticsBody struct {
	Month          string          `json:"month,omitempty"`
	Period         string          `json:"period,omitempty"`
	From           string          `json:"from,omitempty"`
	To             string          `json:"to,omitempty"`
	Start          string          `json:"start,omitempty"`
	EndExclusive   string          `json:"endExclusive,omitempty"`
	Timezone       string          `json:"timezone"`
	RefreshMinutes int             `json:"refreshMinutes"`
	Server         *serverReport   `json:"server,omitempty"`
	Servers        *[]serverReport `json:"servers,omitempty"`
	TotalServers   *int            `json:"totalServers,omitempty"`
	ReadyServers   *int            `json:"readyServers,omitempty"`
	TotalMessages  *int64          `json:"totalMessages,omitempty"`
	Complete       *bool           `json:"complete,omitempty"`
}

// FormatTime is the one time format of every answer: RFC 3339, UTC, whole
// seconds, Z suffix.
func FormatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// Statistics composes the statistics answer of q at the moment now.
func Statistics(q query.Query, now time.Time, d Data, links Links) (Answer, error) {
	c := composer{
		q:     q,
		now:   now,
		links: links,
		// Which periods count as refreshed (and every default) changes at
		// Moscow midnight, so no answer outlives it.
		validUntil:     reports.NextMidnight(now),
		refreshed:      reports.RefreshedAt(now),
		refreshMinutes: d.RefreshMinutes,
		reports:        make(map[string][]reports.Row, len(d.Servers)),
		channels:       make(map[string][]Channel, len(d.Servers)),
	}
	if q.Composite() {
		c.days = len(q.Days())
	}
	for _, r := range d.Reports {
		c.reports[r.GuildID] = append(c.reports[r.GuildID], r)
	}
	for _, ch := range d.Channels {
		c.channels[ch.GuildID] = append(c.channels[ch.GuildID], ch)
	}

	body := statisticsBody{Timezone: reports.Timezone, RefreshMinutes: d.RefreshMinutes}
	if q.Mode == query.ModeMonth {
		body.Month = q.Month.String()
	} else {
		body.Period = string(q.Mode)
		body.From, body.To = q.From.String(), q.To.String()
		body.Start, body.EndExclusive = FormatTime(q.Start()), FormatTime(q.End())
	}
	if q.Server != "" {
		if len(d.Servers) != 1 {
			return Answer{}, ErrServerNotFound
		}
		r := c.server(d.Servers[0])
		body.Server = &r
	} else {
		servers := make([]serverReport, len(d.Servers))
		var ready int
		var total int64
		for i, s := range d.Servers {
			servers[i] = c.server(s)
			if servers[i].Status == reports.StatusOK {
				ready++
				total += *servers[i].TotalMessages
			}
		}
		complete := ready == len(servers)
		n := len(servers)
		body.Servers, body.TotalServers, body.ReadyServers = &servers, &n, &ready
		body.TotalMessages, body.Complete = &total, &complete
	}
	b, err := encode(body, 512*len(d.Servers)+64*len(d.Channels))
	return Answer{Body: b, ValidUntil: c.validUntil}, err
}

type composer struct {
	q              query.Query
	now            time.Time
	links          Links
	refreshed      reports.Refreshed
	refreshMinutes int
	days           int
	reports        map[string][]reports.Row
	channels       map[string][]Channel
	validUntil     time.Time
}

func (c *composer) server(s Server) serverReport {
	out := serverReport{serverInfo: c.links.info(s), Channels: []channelJSON{}, Status: reports.StatusMissing}
	reps := c.reports[s.GuildID]
	if len(reps) > 0 {
		earliest := reps[0].GeneratedAt
		for _, r := range reps[1:] {
			if r.GeneratedAt.Before(earliest) {
				earliest = r.GeneratedAt
			}
		}
		g := FormatTime(earliest)
		out.GeneratedAt = &g
	}
	want := 1
	if c.q.Composite() {
		want = c.days
	}
	if len(reps) < want {
		return out // missing: no total, no channels, no error
	}

	out.Status = reports.StatusOK
	var total int64
	var errorFrom *reports.Row
	for i := range reps {
		r := &reps[i]
		total += r.TotalMessages
		if c.stale(r) {
			out.Status = reports.StatusStale
			// The newest failing report tells the most current error.
			if r.ErrorCode != nil && (errorFrom == nil || r.Period > errorFrom.Period) {
				errorFrom = r
			}
		}
	}
	out.TotalMessages = &total
	if errorFrom != nil {
		out.Error = &reportError{Code: *errorFrom.ErrorCode}
		if errorFrom.ErrorMessage != nil {
			out.Error.Message = *errorFrom.ErrorMessage
		}
	}
	chans := c.channels[s.GuildID]
	out.Channels = make([]channelJSON, len(chans))
	for i, ch := range chans {
		out.Channels[i] = channelJSON{ID: ch.ID, Name: ch.Name, Messages: ch.Messages}
	}
	sortChannels(out.Channels)
	return out
}

// stale applies the stored status and the age rule to a report of the
// query's kind (see staleRow).
func (c *composer) stale(r *reports.Row) bool {
	return staleRow(r, c.q.Kind(), c.refreshed, c.now, c.refreshMinutes, &c.validUntil)
}

// staleRow applies the stored status and the age rule (only the periods the
// collector keeps refreshing age), and lowers *validUntil to the moment a
// still-fresh refreshed report would turn stale.
func staleRow(r *reports.Row, kind reports.Kind, refreshed reports.Refreshed, now time.Time, refreshMinutes int, validUntil *time.Time) bool {
	if r.Status != reports.StatusOK {
		return true
	}
	if !refreshed.Has(kind, r.Period) {
		return false
	}
	turns := reports.TurnsStale(r.GeneratedAt, refreshMinutes)
	if now.After(turns) {
		return true
	}
	if until := turns.Add(time.Nanosecond); until.Before(*validUntil) {
		*validUntil = until
	}
	return false
}

// sortChannels orders by messages descending, then id (channelOrder).
func sortChannels(chans []channelJSON) {
	slices.SortFunc(chans, func(a, b channelJSON) int { return channelOrder(a.Messages, a.ID, b.Messages, b.ID) })
}

// channelOrder compares two channels by count descending, then id ascending; ids are
// snowflakes, so a shorter id is the smaller number.
func channelOrder(countA int64, idA string, countB int64, idB string) int {
	if countA != countB {
		return cmp.Compare(countB, countA)
	}
	if len(idA) != len(idB) {
		return cmp.Compare(len(idA), len(idB))
	}
	return strings.Compare(idA, idB)
}

type iconsBody struct {
	Server       *serverInfo   `json:"server,omitempty"`
	Servers      *[]serverInfo `json:"servers,omitempty"`
	TotalServers *int          `json:"totalServers,omitempty"`
}

// Icons composes the icons answer: one server when single, else the catalog.
func Icons(servers []Server, single bool, links Links) (Answer, error) {
	list := make([]serverInfo, len(servers))
	for i, s := range servers {
		list[i] = links.info(s)
	}
	var body iconsBody
	if single {
		if len(list) != 1 {
			return Answer{}, ErrServerNotFound
		}
		body.Server = &list[0]
	} else {
		n := len(list)
		body.Servers, body.TotalServers = &list, &n
	}
	b, err := encode(body, 256*len(list))
	return Answer{Body: b}, err
}

func (l Links) info(s Server) serverInfo {
	return serverInfo{Number: s.Number, Name: s.Name, GuildID: s.GuildID, IconURL: l.icon(s), BannerURL: l.banner(s)}
}

func (l Links) icon(s Server) *string {
	return l.link("icons", s.GuildID, s.Icon, 256)
}

func (l Links) banner(s Server) *string {
	if !s.BannerKnown {
		return nil
	}
	return l.link("banners", s.GuildID, s.Banner, 1024)
}

func (l Links) link(kind, guildID string, hash *string, size int) *string {
	if hash == nil || *hash == "" {
		return nil
	}
	ext := ".png"
	if strings.HasPrefix(*hash, "a_") {
		ext = ".gif"
	}
	var b strings.Builder
	b.WriteString(strings.TrimRight(l.CDN, "/"))
	b.WriteByte('/')
	b.WriteString(kind)
	b.WriteByte('/')
	b.WriteString(url.PathEscape(guildID))
	b.WriteByte('/')
	b.WriteString(url.PathEscape(*hash))
	b.WriteString(ext)
	b.WriteString("?size=")
	b.WriteString(strconv.Itoa(size))
	s := b.String()
	return &s
}

func encode(v any, sizeHint int) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(sizeHint)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
