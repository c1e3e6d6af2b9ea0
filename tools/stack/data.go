package stack

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"forumstats.local/shared/reports"
)

// ForumFixture describes the forum data the tests seed: the keys (fresh random secrets each
// run) and the ids the bad-input corpus and the load targets use.
type ForumFixture struct {
	UserKey      string // user 1, read and write (conversations and attachments)
	OtherKey     string // user 3, read and write (participant of Foreign, not of Own)
	SuperKey     string // super, read and write
	GuestKey     string // guest, read and write
	InactiveKey  string // user 1, inactive
	ExpiredKey   string // user 1, expired
	ReadOnlyKey  string // user 1, conversation:read only
	WriteOnlyKey string // user 1, conversation:write only

	Users           int   // users 1..Users exist
	Own             int64 // conversation of users 1 and 2
	Foreign         int64 // conversation of users 3 and 4
	OwnMessage      int64 // first message of Own
	ForeignMessage  int64 // first message of Foreign
	OwnMessages     int   // messages in Own
	PerPage         int
	LastPage        int   // of Own
	MissingID       int64 // no conversation nor message has it
	ExtraOwn        int64 // first of ExtraConvs more conversations of user 1 (load spreads over them)
	ExtraConvs      int
	ExtraConvLength int
}

// NewForumFixture returns a fixture with fresh keys; own is the size of the conversation the
// paging tests walk.
func NewForumFixture(own, perPage int) ForumFixture {
	return ForumFixture{
		UserKey: newKey("user"), OtherKey: newKey("other"), SuperKey: newKey("super"),
		GuestKey: newKey("guest"), InactiveKey: newKey("inactive"), ExpiredKey: newKey("expired"),
		ReadOnlyKey: newKey("ro"), WriteOnlyKey: newKey("wo"),
		Users: 50, Own: 10, Foreign: 20, OwnMessage: 100000, ForeignMessage: 200000,
		OwnMessages: own, PerPage: perPage, LastPage: max(1, (own+perPage-1)/perPage),
		MissingID: 999999, ExtraOwn: 1000, ExtraConvs: 20, ExtraConvLength: 30,
	}
}

// newKey returns a recognisable random key: the tests grep logs and tables for it.
func newKey(kind string) string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return "reliab-" + kind + "-" + base64.RawURLEncoding.EncodeToString(b[:])
}

// Keys lists every key of the fixture.
func (f ForumFixture) Keys() []string {
	return []string{f.UserKey, f.OtherKey, f.SuperKey, f.GuestKey, f.InactiveKey, f.ExpiredKey, f.ReadOnlyKey, f.WriteOnlyKey}
}

// The seed file's rows (forum-svc/README.md, Seed file), as the fixtures and benches write them.
type (
	SeedUser struct {
		UserID   int64  `json:"user_id"`
		Username string `json:"username"`
	}
	SeedMessage struct {
		MessageID   int64  `json:"message_id"`
		UserID      int64  `json:"user_id"`
		Message     string `json:"message"`
		MessageDate int64  `json:"message_date"`
	}
	SeedConversation struct {
		ConversationID int64         `json:"conversation_id"`
		Title          string        `json:"title"`
		UserID         int64         `json:"user_id"`
		Recipients     []int64       `json:"recipients"`
		Messages       []SeedMessage `json:"messages"`
	}
	SeedKey struct {
		Key       string   `json:"key"`
		Type      string   `json:"type"`
		UserID    *int64   `json:"user_id,omitempty"`
		Scopes    []string `json:"scopes"`
		Active    bool     `json:"active"`
		ExpiresAt *int64   `json:"expires_at"`
	}
)

// SeedJSON is the seed file (forum-svc/README.md, Seed file) of the fixture.
func (f ForumFixture) SeedJSON() ([]byte, error) {
	type readState struct {
		ConversationID int64 `json:"conversation_id"`
		UserID         int64 `json:"user_id"`
		LastReadDate   int64 `json:"last_read_date"`
	}
	const base = 1767225600 // 2026-01-01T00:00:00Z
	users := make([]SeedUser, 0, f.Users)
	for i := 1; i <= f.Users; i++ {
		users = append(users, SeedUser{int64(i), "user" + strconv.Itoa(i)})
	}
	mkConv := func(id int64, title string, starter int64, rcpt []int64, firstMsg int64, n int) SeedConversation {
		c := SeedConversation{ConversationID: id, Title: title, UserID: starter, Recipients: rcpt}
		parts := append([]int64{starter}, rcpt...)
		for i := range n {
			// Some messages share a date so that the message_id tie-break is exercised too.
			c.Messages = append(c.Messages, SeedMessage{
				MessageID: firstMsg + int64(i), UserID: parts[i%len(parts)],
				Message: fmt.Sprintf("message %d of conversation %d", i+1, id), MessageDate: base + int64(i/2)*60,
			})
		}
		return c
	}
	convs := []SeedConversation{
		mkConv(f.Own, "Own conversation", 1, []int64{2}, f.OwnMessage, f.OwnMessages),
		mkConv(f.Foreign, "Foreign conversation", 3, []int64{4}, f.ForeignMessage, 30),
	}
	for i := range f.ExtraConvs {
		id := f.ExtraOwn + int64(i)
		convs = append(convs, mkConv(id, "Extra "+strconv.Itoa(i), 1, []int64{int64(5 + i%40)}, 300000+int64(i)*1000, f.ExtraConvLength))
	}
	i64 := func(v int64) *int64 { return &v }
	rw := []string{"conversation:read", "conversation:write"}
	past := time.Now().Add(-24 * time.Hour).Unix()
	keys := []SeedKey{
		{Key: f.UserKey, Type: "user", UserID: i64(1), Scopes: append(rw, "attachment:read", "attachment:write"), Active: true},
		{Key: f.OtherKey, Type: "user", UserID: i64(3), Scopes: rw, Active: true},
		{Key: f.SuperKey, Type: "super", Scopes: rw, Active: true},
		{Key: f.GuestKey, Type: "guest", Scopes: rw, Active: true},
		{Key: f.InactiveKey, Type: "user", UserID: i64(1), Scopes: rw, Active: false},
		{Key: f.ExpiredKey, Type: "user", UserID: i64(1), Scopes: rw, Active: true, ExpiresAt: &past},
		{Key: f.ReadOnlyKey, Type: "user", UserID: i64(1), Scopes: []string{"conversation:read"}, Active: true},
		{Key: f.WriteOnlyKey, Type: "user", UserID: i64(1), Scopes: []string{"conversation:write"}, Active: true},
	}
	return json.MarshalIndent(map[string]any{
		"options":       map[string]any{"messagesPerPage": f.PerPage},
		"users":         users,
		"conversations": convs,
		"read_state":    []readState{{f.Own, 2, base + 600}},
		"api_keys":      keys,
	}, "", " ")
}

// StatsFixture describes the reports the stats tests import (collector-svc import --file).
type StatsFixture struct {
	Servers  int
	Channels int
	Days     int // daily reports for today and the Days-1 days before (Moscow calendar)
	Now      time.Time
}

// GuildID is the synthetic guild id of server n (1-based): 18 digits, like a snowflake.
func (s StatsFixture) GuildID(n int) string {
	return strconv.FormatInt(700000000000000000+int64(n)*1000, 10)
}

// Today is the Moscow date of Now.
func (s StatsFixture) Today() time.Time {
	y, m, d := s.Now.In(reports.Moscow).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, reports.Moscow)
}

// ImportJSON is the import file (collector-svc/README.md, Import and export file) of the fixture: every report is "ok" and
// fresh, so every answer over the imported days is a complete one.
func (s StatsFixture) ImportJSON() ([]byte, error) {
	type channel struct {
		ID       string `json:"id"`
		Name     string `json:"name"`
		Messages int64  `json:"messages"`
	}
	type report struct {
		GuildID       string    `json:"guildId"`
		Date          string    `json:"date,omitempty"`
		Month         string    `json:"month,omitempty"`
		GeneratedAt   string    `json:"generatedAt"`
		Status        string    `json:"status"`
		Error         any       `json:"error"`
		TotalMessages int64     `json:"totalMessages"`
		Channels      []channel `json:"channels"`
	}
	gen := s.Now.UTC().Add(-time.Minute).Format(time.RFC3339)
	var catalog, guilds []map[string]any
	var daily, monthly []report
	mkChannels := func(n, salt int, factor int64) ([]channel, int64) {
		var total int64
		out := make([]channel, 0, s.Channels)
		for c := range s.Channels {
			m := int64((n*7919+c*104729+salt*31)%500) * factor
			out = append(out, channel{ID: strconv.FormatInt(800000000000000000+int64(n)*1000+int64(c), 10), Name: fmt.Sprintf("channel-%d", c), Messages: m})
			total += m
		}
		return out, total + 3 // threads the channel list does not show
	}
	today := s.Today()
	for n := 1; n <= s.Servers; n++ {
		gid := s.GuildID(n)
		catalog = append(catalog, map[string]any{"number": n, "name": fmt.Sprintf("Server %d", n), "guildId": gid})
		icon := fmt.Sprintf("%032x", n)
		if n%2 == 0 {
			icon = "a_" + icon
		}
		guilds = append(guilds, map[string]any{"guildId": gid, "icon": icon, "banner": nil, "metadataAt": gen})
		for d := range s.Days {
			day := today.AddDate(0, 0, -d)
			ch, total := mkChannels(n, d, 1)
			daily = append(daily, report{GuildID: gid, Date: day.Format("2006-01-02"), GeneratedAt: gen, Status: "ok", TotalMessages: total, Channels: ch})
		}
		for m := range 2 {
			month := time.Date(today.Year(), today.Month()-time.Month(m), 1, 0, 0, 0, 0, reports.Moscow)
			ch, total := mkChannels(n, 1000+m, 30)
			monthly = append(monthly, report{GuildID: gid, Month: month.Format("2006-01"), GeneratedAt: gen, Status: "ok", TotalMessages: total, Channels: ch})
		}
	}
	return json.MarshalIndent(map[string]any{"catalog": catalog, "guilds": guilds, "daily": daily, "monthly": monthly}, "", " ")
}
