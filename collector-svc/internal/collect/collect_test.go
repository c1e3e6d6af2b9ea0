package collect

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/shared/reports"
	"forumstats.local/shared/testutil"
)

// fakeDiscord implements Discord over an arithmetic message model: channel c holds weight(c)
// messages in every whole UTC hour before the fake's clock; the server total adds one hidden
// thread message per hour.
type fakeDiscord struct {
	clock    *testutil.Clock
	guilds   map[string]discord.Guild
	channels map[string][]discord.Channel
	weight   map[string]int64
	// fail, when set, may fail a call (channelID "guild" and "channels" for the listings).
	fail func(guildID, channelID string, from time.Time) error

	mu    sync.Mutex
	calls []call
}

type call struct {
	guildID, channelID string
	from, to           time.Time
}

func (f *fakeDiscord) record(c call) []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	return f.calls
}

func (f *fakeDiscord) takeCalls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

func (f *fakeDiscord) Guild(ctx context.Context, id string) (discord.Guild, error) {
	f.record(call{guildID: id, channelID: "guild"})
	if err := f.check(ctx, id, "guild", time.Time{}); err != nil {
		return discord.Guild{}, err
	}
	g, ok := f.guilds[id]
	if !ok {
		return discord.Guild{}, &discord.APIError{Status: 404, Code: 10004, Message: "Unknown Guild"}
	}
	return g, nil
}

func (f *fakeDiscord) Channels(ctx context.Context, id string) ([]discord.Channel, error) {
	f.record(call{guildID: id, channelID: "channels"})
	if err := f.check(ctx, id, "channels", time.Time{}); err != nil {
		return nil, err
	}
	return f.channels[id], nil
}

func (f *fakeDiscord) CountMessages(ctx context.Context, guildID, channelID string, from, to time.Time) (int64, error) {
	f.record(call{guildID: guildID, channelID: channelID, from: from, to: to})
	if err := f.check(ctx, guildID, channelID, from); err != nil {
		return 0, err
	}
	if channelID == "" {
		n := f.hours(from, to) // the hidden thread
		for _, ch := range f.channels[guildID] {
			n += f.count(ch, from, to)
		}
		return n, nil
	}
	for _, ch := range f.channels[guildID] {
		if ch.ID == channelID {
			return f.count(ch, from, to), nil
		}
	}
	return 0, &discord.APIError{Status: 404, Code: 10003, Message: "Unknown Channel"}
}

func (f *fakeDiscord) check(ctx context.Context, guildID, channelID string, from time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if f.fail != nil {
		return f.fail(guildID, channelID, from)
	}
	return nil
}

// count is what the search answers for one channel: nothing for types without messages of
// their own, nothing before the channel was created.
func (f *fakeDiscord) count(ch discord.Channel, from, to time.Time) int64 {
	if !discord.MessageBearing(ch.Type) {
		return 0
	}
	id, _ := strconv.ParseUint(ch.ID, 10, 64)
	return f.weight[ch.ID] * f.hours(later(from, discord.SnowflakeTime(id)), to)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// hours counts the whole UTC hours of [from, min(to, now)).
func (f *fakeDiscord) hours(from, to time.Time) int64 {
	if now := f.clock.Now(); now.Before(to) {
		to = now
	}
	a, b := (from.Unix()+3599)/3600, to.Unix()/3600
	if b < a {
		return 0
	}
	return b - a
}

// expected is the count the fake gives for a channel id ("" = server) in [from, to).
func (f *fakeDiscord) expected(guildID, channelID string, from, to time.Time) int64 {
	n, err := f.CountMessages(context.Background(), guildID, channelID, from, to)
	if err != nil {
		panic(err)
	}
	return n
}

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func channelID(created string, n uint64) string {
	return strconv.FormatUint(discord.SnowflakeAt(ts(created))+n, 10)
}

var (
	guildA = "81384788765712384"
	guildB = "222222222222222222"
	// A's channels: text, voice, announcement, stage, plus a category and a forum that hold no
	// messages of their own, and a text channel created on 2026-11-19 at 12:00 UTC.
	chText     = channelID("2020-01-01T00:00:00Z", 1)
	chVoice    = channelID("2020-01-01T00:00:00Z", 2)
	chNews     = channelID("2020-01-01T00:00:00Z", 3)
	chStage    = channelID("2020-01-01T00:00:00Z", 4)
	chCategory = channelID("2020-01-01T00:00:00Z", 5)
	chForum    = channelID("2020-01-01T00:00:00Z", 6)
	chNew      = channelID("2026-11-19T12:00:00Z", 7)
	chB        = channelID("2021-01-01T00:00:00Z", 8)
)

func newFake(c *testutil.Clock) *fakeDiscord {
	icon, banner := "a_icon", "banner1"
	return &fakeDiscord{
		clock: c,
		guilds: map[string]discord.Guild{
			guildA: {ID: guildA, Name: "Alpha", Icon: &icon, Banner: &banner},
			guildB: {ID: guildB, Name: "Beta"},
		},
		channels: map[string][]discord.Channel{
			guildA: {
				{ID: chCategory, Name: "Text", Type: 4},
				{ID: chText, Name: "general", Type: 0, ParentID: chCategory},
				{ID: chVoice, Name: "Lounge", Type: 2},
				{ID: chNews, Name: "news", Type: 5},
				{ID: chStage, Name: "Town Hall", Type: 13},
				{ID: chForum, Name: "help", Type: 15},
				{ID: chNew, Name: "new", Type: 0},
			},
			guildB: {{ID: chB, Name: "only", Type: 0}},
		},
		weight: map[string]int64{chText: 10, chVoice: 1, chNews: 2, chStage: 3, chCategory: 100, chForum: 100, chNew: 5, chB: 7},
	}
}

type env struct {
	st      *memStore
	clock   *testutil.Clock
	discord *fakeDiscord
	col     *Collector
}

func newEnv(t *testing.T, now string, servers ...catalog.Entry) *env {
	t.Helper()
	st := newMemStore()
	if len(servers) == 0 {
		servers = []catalog.Entry{{Number: 1, Name: "Alpha", GuildID: guildA}, {Number: 2, Name: "Beta", GuildID: guildB}}
	}
	if err := st.SyncCatalog(context.Background(), servers); err != nil {
		t.Fatal(err)
	}
	c := testutil.NewClock(ts(now))
	f := newFake(c)
	col := New(Config{Discord: f, Store: st, RefreshMinutes: 10, Now: c.Now, Concurrency: 2})
	return &env{st: st, clock: c, discord: f, col: col}
}

// storedReport is a stored report with its channels' counts by id.
type storedReport struct {
	reports.Row
	channels map[string]int64
}

// pass runs a pass that must succeed.
func (e *env) pass(t *testing.T) {
	t.Helper()
	if _, err := e.col.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// passAt moves the clock to at (RFC 3339) and runs a pass that must succeed.
func (e *env) passAt(t *testing.T, at string) {
	t.Helper()
	e.clock.Set(ts(at))
	e.pass(t)
}

func (e *env) stored(kind reports.Kind, guildID, period string) (storedReport, bool) {
	r, ok := e.st.report(kind, guildID, period)
	if !ok {
		return storedReport{}, false
	}
	out := storedReport{Row: r.Row, channels: map[string]int64{}}
	for id, c := range r.channels {
		out.channels[id] = c.Messages
	}
	return out, true
}

func (e *env) daily(t *testing.T, guildID, day string) (storedReport, bool) {
	t.Helper()
	return e.stored(reports.KindDay, guildID, day)
}

func (e *env) monthly(t *testing.T, guildID, month string) (storedReport, bool) {
	t.Helper()
	return e.stored(reports.KindMonth, guildID, month)
}

// checkCounts asserts that the stored report of [from, to) holds the fake's exact counts for
// the server and every message-bearing channel that existed before to.
func (e *env) checkCounts(t *testing.T, r storedReport, guildID string, from, to time.Time) {
	t.Helper()
	if want := e.discord.expected(guildID, "", from, to); r.TotalMessages != want {
		t.Errorf("%s %s: total %d, want %d", guildID, r.Period, r.TotalMessages, want)
	}
	want := map[string]int64{}
	for _, ch := range e.discord.channels[guildID] {
		id, _ := strconv.ParseUint(ch.ID, 10, 64)
		if discord.MessageBearing(ch.Type) && discord.SnowflakeTime(id).Before(to) {
			want[ch.ID] = e.discord.expected(guildID, ch.ID, from, to)
		}
	}
	if len(r.channels) != len(want) {
		t.Errorf("%s %s: channels %v, want %v", guildID, r.Period, r.channels, want)
	}
	for id, n := range want {
		if got, ok := r.channels[id]; !ok || got != n {
			t.Errorf("%s %s: channel %s = %d (present %v), want %d", guildID, r.Period, id, got, ok, n)
		}
	}
}

func msk(day string) time.Time { return ts(day + "T00:00:00+03:00").UTC() }

// TestPassAcrossMoscowMidnight: a pass at 23:59 Moscow time and one at 00:01 the next day
// (both on the same UTC date) count the right Moscow days.
func TestPassAcrossMoscowMidnight(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "2026-11-19T20:59:00Z") // 23:59 MSK, 19 November
	res, err := e.col.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// First collection: today, yesterday, 6 backfill days, 2 months, for both servers.
	if res.Written != 2*10 || res.Servers != 2 || len(res.Failures) != 0 {
		t.Fatalf("result %+v", res)
	}
	for _, day := range []string{"2026-11-19", "2026-11-18", "2026-11-17", "2026-11-16", "2026-11-15", "2026-11-14", "2026-11-13", "2026-11-12"} {
		from := msk(day)
		r, ok := e.daily(t, guildA, day)
		if !ok {
			t.Fatalf("no report for %s", day)
		}
		e.checkCounts(t, r, guildA, from, from.Add(24*time.Hour))
		if r.Status != reports.StatusOK || !r.GeneratedAt.Equal(ts("2026-11-19T20:59:00Z")) {
			t.Fatalf("%s: %+v", day, r.Row)
		}
	}
	if _, ok := e.daily(t, guildA, "2026-11-11"); ok {
		t.Fatal("counted a seventh day before yesterday")
	}
	// Today until 23:59: 23 whole hours of messages (the fake counts whole hours before now).
	today, _ := e.daily(t, guildA, "2026-11-19")
	if today.channels[chText] != 23*10 {
		t.Fatalf("today general = %d, want 230", today.channels[chText])
	}
	// The channel created at 12:00 UTC on the 19th is in today's report only, not in earlier days.
	if _, ok := today.channels[chNew]; !ok {
		t.Fatal("new channel missing from today")
	}
	if y, _ := e.daily(t, guildA, "2026-11-18"); len(y.channels) != 4 {
		t.Fatalf("yesterday's channels %v: want the 4 old message-bearing ones", y.channels)
	}
	for _, m := range []struct{ label, from, to string }{{"2026-11", "2026-11-01", "2026-12-01"}, {"2026-10", "2026-10-01", "2026-11-01"}} {
		r, ok := e.monthly(t, guildA, m.label)
		if !ok {
			t.Fatalf("no monthly report %s", m.label)
		}
		e.checkCounts(t, r, guildA, msk(m.from), msk(m.to))
	}
	// The categories and forums hold no messages: never asked about.
	for _, c := range e.discord.takeCalls() {
		if c.channelID == chCategory || c.channelID == chForum {
			t.Fatalf("counted a channel of a type without messages: %+v", c)
		}
		if c.channelID == chNew && !c.to.After(ts("2026-11-19T12:00:00Z")) {
			t.Fatalf("counted the new channel in a window before it existed: %+v", c)
		}
	}
	g, _ := e.st.guild(guildA)
	if *g.Icon != "a_icon" || *g.Banner != "banner1" || !g.BannerKnown {
		t.Fatalf("guild metadata %+v", g)
	}

	// Two minutes later it is 00:01 on 20 November in Moscow, still the 19th in UTC.
	e.clock.Set(ts("2026-11-19T21:01:00Z"))
	res, err = e.col.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Written != 2*4 {
		t.Fatalf("second pass wrote %d reports, want 8 (no backfill: all days exist)", res.Written)
	}
	for _, c := range e.discord.takeCalls() {
		if !c.from.IsZero() && c.from.Before(msk("2026-11-19")) && c.to.Sub(c.from) == 24*time.Hour {
			t.Fatalf("second pass counted an older day again: %+v", c)
		}
	}
	yesterday, _ := e.daily(t, guildA, "2026-11-19")
	if yesterday.channels[chText] != 24*10 || !yesterday.GeneratedAt.Equal(ts("2026-11-19T21:01:00Z")) {
		t.Fatalf("the finished day was not recounted whole: %+v", yesterday)
	}
	e.checkCounts(t, yesterday, guildA, msk("2026-11-19"), msk("2026-11-20"))
	today, ok := e.daily(t, guildA, "2026-11-20")
	if !ok || today.TotalMessages != 0 {
		t.Fatalf("new day's report %+v (present %v)", today, ok)
	}
	e.checkCounts(t, today, guildA, msk("2026-11-20"), msk("2026-11-21"))
	st, _ := e.st.State(ctx)
	if !st.PassStartedAt.Equal(ts("2026-11-19T21:01:00Z")) || !st.LastGoodPassAt.Equal(ts("2026-11-19T21:01:00Z")) || st.RefreshMinutes != 10 {
		t.Fatalf("state %+v", st)
	}
}

// TestPassAcrossMonthBoundary: at 00:01 on 1 December in Moscow (30 November in UTC) the
// current month is December and the previous one November, counted over the whole month.
func TestPassAcrossMonthBoundary(t *testing.T) {
	e := newEnv(t, "2026-11-30T20:59:00Z")
	e.pass(t)
	nov, _ := e.monthly(t, guildB, "2026-11")
	e.checkCounts(t, nov, guildB, msk("2026-11-01"), msk("2026-12-01"))
	partial := nov.TotalMessages

	e.passAt(t, "2026-11-30T21:01:00Z")
	dec, ok := e.monthly(t, guildB, "2026-12")
	if !ok {
		t.Fatal("no report for December")
	}
	e.checkCounts(t, dec, guildB, msk("2026-12-01"), msk("2027-01-01"))
	nov, _ = e.monthly(t, guildB, "2026-11")
	e.checkCounts(t, nov, guildB, msk("2026-11-01"), msk("2026-12-01"))
	if nov.TotalMessages != partial+8 { // 7 per hour in the channel + 1 thread, one more hour
		t.Fatalf("November %d after %d", nov.TotalMessages, partial)
	}
	if _, ok := e.monthly(t, guildB, "2026-10"); !ok {
		t.Fatal("October's report (previous month of the first pass) is gone")
	}
	last, ok := e.daily(t, guildB, "2026-11-30")
	if !ok {
		t.Fatal("no report for 30 November")
	}
	e.checkCounts(t, last, guildB, msk("2026-11-30"), msk("2026-12-01"))
	if _, ok := e.daily(t, guildB, "2026-12-01"); !ok {
		t.Fatal("no report for 1 December")
	}
}

// TestFailedRefreshKeepsEarlierCounts: a window that fails is marked stale with the error,
// its earlier counts and generatedAt kept; the other windows are refreshed; a day that was
// never collected stays missing; the pass reports the failure.
func TestFailedRefreshKeepsEarlierCounts(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "2026-11-19T12:00:00Z")
	// In the first pass, one backfill day of A fails: it must stay missing.
	e.discord.fail = func(guildID, channelID string, from time.Time) error {
		if guildID == guildA && channelID == chVoice && from.Equal(msk("2026-11-14")) {
			return &discord.APIError{Status: 503, Message: "Service Unavailable", Route: "/guilds/{id}/messages/search"}
		}
		return nil
	}
	res, err := e.col.Pass(ctx)
	if !errors.Is(err, ErrPassFailed) || len(res.Failures) != 1 || res.Failures[0].Stale {
		t.Fatalf("err %v, failures %+v", err, res.Failures)
	}
	if _, ok := e.daily(t, guildA, "2026-11-14"); ok {
		t.Fatal("a day whose first collection failed must stay missing")
	}
	st, _ := e.st.State(ctx)
	if st.LastGoodPassAt != nil || st.LastError == nil || !strings.Contains(*st.LastError, "discord_unavailable") {
		t.Fatalf("state %+v", st)
	}
	before, _ := e.daily(t, guildA, "2026-11-18")
	beforeMonth, _ := e.monthly(t, guildA, "2026-11")

	// An hour later, the count of today fails for one channel (after the server total and other
	// channels were counted), and the month's server total times out. Yesterday is closed and its
	// total unchanged: it keeps its channel counts without asking, and is refreshed.
	e.clock.Set(ts("2026-11-19T13:00:00Z"))
	beforeToday, _ := e.daily(t, guildA, "2026-11-19")
	e.discord.takeCalls()
	e.discord.fail = func(guildID, channelID string, from time.Time) error {
		switch {
		case guildID == guildA && channelID == chStage && from.Equal(msk("2026-11-19")):
			return &discord.APIError{Status: 500, Message: "Internal Server Error", Route: "/guilds/{id}/messages/search"}
		case guildID == guildA && channelID == "" && from.Equal(msk("2026-11-01")):
			return context.DeadlineExceeded
		}
		return nil
	}
	res, err = e.col.Pass(ctx)
	if !errors.Is(err, ErrPassFailed) {
		t.Fatalf("err %v", err)
	}
	if len(res.Failures) != 2 || res.Written != 2*4-2+1 { // A: 2 fail, the missing backfill day is retried and written
		t.Fatalf("written %d, failures %+v", res.Written, res.Failures)
	}
	for _, c := range e.discord.takeCalls() {
		if c.channelID != "" && c.channelID != "guild" && c.channelID != "channels" && c.from.Equal(msk("2026-11-18")) {
			t.Fatalf("a channel of the unchanged closed day was asked: %+v", c)
		}
	}
	after, _ := e.daily(t, guildA, "2026-11-19")
	if after.Status != reports.StatusStale || *after.ErrorCode != CodeDiscordUnavailable || !strings.Contains(*after.ErrorMessage, "HTTP 500") {
		t.Fatalf("failed day %+v", after.Row)
	}
	if after.TotalMessages != beforeToday.TotalMessages || !after.GeneratedAt.Equal(beforeToday.GeneratedAt) || len(after.channels) != len(beforeToday.channels) {
		t.Fatalf("the earlier counts were not kept: %+v vs %+v", after, beforeToday)
	}
	m, _ := e.monthly(t, guildA, "2026-11")
	if m.Status != reports.StatusStale || *m.ErrorCode != CodeTimeout || m.TotalMessages != beforeMonth.TotalMessages {
		t.Fatalf("failed month %+v", m.Row)
	}
	// The rest was refreshed: yesterday is ok with a new generatedAt and its counts; B is
	// untouched by A's failures.
	yesterday, _ := e.daily(t, guildA, "2026-11-18")
	if yesterday.Status != reports.StatusOK || !yesterday.GeneratedAt.Equal(ts("2026-11-19T13:00:00Z")) ||
		yesterday.TotalMessages != before.TotalMessages || fmt.Sprint(yesterday.channels) != fmt.Sprint(before.channels) {
		t.Fatalf("yesterday %+v %v, before %+v %v", yesterday.Row, yesterday.channels, before.Row, before.channels)
	}
	if r, ok := e.daily(t, guildA, "2026-11-14"); !ok || r.Status != reports.StatusOK {
		t.Fatal("the missing backfill day was not collected on the next pass")
	}
	if r, _ := e.daily(t, guildB, "2026-11-18"); r.Status != reports.StatusOK {
		t.Fatalf("B's yesterday %+v", r.Row)
	}

	// The next good pass clears the stale state.
	e.discord.fail = nil
	e.pass(t)
	if r, _ := e.daily(t, guildA, "2026-11-18"); r.Status != reports.StatusOK || r.ErrorCode != nil {
		t.Fatalf("after recovery %+v", r.Row)
	}
}

// TestForbiddenChannelIsSkipped: a 403 on one channel leaves it out; the pass succeeds.
func TestForbiddenChannelIsSkipped(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "2026-11-19T12:00:00Z")
	e.discord.fail = func(guildID, channelID string, from time.Time) error {
		if channelID == chNews {
			return &discord.APIError{Status: 403, Code: 50001, Message: "Missing Access"}
		}
		return nil
	}
	res, err := e.col.Pass(ctx)
	if err != nil || res.Written != 20 {
		t.Fatalf("written %d, err %v", res.Written, err)
	}
	r, _ := e.daily(t, guildA, "2026-11-18")
	if _, ok := r.channels[chNews]; ok || len(r.channels) != 3 || r.Status != reports.StatusOK {
		t.Fatalf("report %+v channels %v", r.Row, r.channels)
	}
	// The server total still counts everything the search sees.
	if want := e.discord.expected(guildA, "", msk("2026-11-18"), msk("2026-11-19")); r.TotalMessages != want {
		t.Fatalf("total %d, want %d", r.TotalMessages, want)
	}
}

// TestUnauthorizedStopsThePass: a 401 stops the pass at once; what it was to refresh is
// marked stale with code unauthorized, and Discord is not asked anything more.
func TestUnauthorizedStopsThePass(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "2026-11-19T12:00:00Z")
	e.col.cfg.Concurrency, e.col.cfg.PerServer = 1, 1 // A, then B, one request at a time
	e.pass(t)
	e.discord.takeCalls()
	var once sync.Once
	unauthorized := &discord.APIError{Status: 401, Message: "401: Unauthorized", Route: "/guilds/{id}/messages/search"}
	e.discord.fail = func(guildID, channelID string, from time.Time) error {
		// The token is revoked in the middle of A's first window.
		if guildID == guildA && channelID == chVoice {
			var err error
			once.Do(func() { err = unauthorized })
			if err == nil {
				t.Errorf("Discord asked again after a 401: %s", channelID)
			}
			return err
		}
		return nil
	}
	e.clock.Set(ts("2026-11-19T13:00:00Z"))
	res, err := e.col.Pass(ctx)
	if !errors.Is(err, ErrPassFailed) || !strings.Contains(err.Error(), "401") {
		t.Fatalf("err %v", err)
	}
	if res.Written != 0 {
		t.Fatalf("wrote %d reports after the 401", res.Written)
	}
	calls := e.discord.takeCalls()
	if last := calls[len(calls)-1]; last.channelID != chVoice {
		t.Fatalf("calls after the 401: last %+v", last)
	}
	for _, c := range calls {
		if c.guildID == guildB {
			t.Fatalf("B was asked after A's 401: %+v", c)
		}
	}
	for _, g := range []string{guildA, guildB} {
		for _, day := range []string{"2026-11-19", "2026-11-18"} {
			r, _ := e.daily(t, g, day)
			if r.Status != reports.StatusStale || *r.ErrorCode != CodeUnauthorized || !r.GeneratedAt.Equal(ts("2026-11-19T12:00:00Z")) {
				t.Fatalf("%s %s: %+v", g, day, r.Row)
			}
		}
		for _, month := range []string{"2026-11", "2026-10"} {
			if r, _ := e.monthly(t, g, month); r.Status != reports.StatusStale || *r.ErrorCode != CodeUnauthorized {
				t.Fatalf("%s %s: %+v", g, month, r.Row)
			}
		}
		// Backfill days are not refreshed by this pass: they keep their state.
		if r, _ := e.daily(t, g, "2026-11-15"); r.Status != reports.StatusOK {
			t.Fatalf("%s backfill day: %+v", g, r.Row)
		}
	}
}

// TestGuildUnavailableFailsItsWindows: when the guild itself cannot be read, all its windows
// are stale, and the other servers are collected.
func TestGuildUnavailableFailsItsWindows(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "2026-11-19T12:00:00Z")
	e.pass(t)
	e.discord.fail = func(guildID, channelID string, from time.Time) error {
		if guildID == guildB && channelID == "channels" {
			return &discord.APIError{Status: 429, Message: "You are being rate limited."}
		}
		return nil
	}
	res, err := e.col.Pass(ctx)
	if !errors.Is(err, ErrPassFailed) || len(res.Failures) != 4 || res.Written != 4 {
		t.Fatalf("err %v written %d failures %+v", err, res.Written, res.Failures)
	}
	for _, f := range res.Failures {
		if f.GuildID != guildB || f.Code != CodeRateLimited || !f.Stale {
			t.Fatalf("failure %+v", f)
		}
	}
}

// TestCatalogFile: the catalog file is written to the database at every pass; a broken file
// fails the pass but the stored catalog is still collected.
func TestCatalogFile(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "2026-11-19T12:00:00Z", catalog.Entry{Number: 9, Name: "Old", GuildID: "1"})
	file := filepath.Join(t.TempDir(), "catalog.yaml")
	if err := os.WriteFile(file, []byte("- {number: 1, name: Alpha, guildId: '"+guildA+"'}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.col.cfg.CatalogFile = file
	res, err := e.col.Pass(ctx)
	if err != nil || res.Servers != 1 {
		t.Fatalf("servers %d, err %v", res.Servers, err)
	}
	cat, _ := e.st.Catalog(ctx)
	if len(cat) != 1 || cat[0].GuildID != guildA {
		t.Fatalf("catalog %+v", cat)
	}
	if err := os.WriteFile(file, []byte("- {number: 1, name: Alpha, guildId: 'x'}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err = e.col.Pass(ctx)
	if !errors.Is(err, ErrPassFailed) || !strings.Contains(err.Error(), "guildId") || res.Written != 4 {
		t.Fatalf("written %d, err %v", res.Written, err)
	}
}

// TestShutdownMidPass: a cancelled context stops the pass without marking anything stale.
func TestShutdownMidPass(t *testing.T) {
	e := newEnv(t, "2026-11-19T12:00:00Z")
	ctx, cancel := context.WithCancel(context.Background())
	e.discord.fail = func(guildID, channelID string, from time.Time) error {
		if channelID == chVoice {
			cancel()
			return context.Canceled
		}
		return nil
	}
	_, err := e.col.Pass(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if n := e.st.count(reports.StatusStale); n != 0 {
		t.Fatalf("%d reports marked stale on shutdown", n)
	}
	st, _ := e.st.State(context.Background())
	if st.PassFinishedAt == nil || st.LastError == nil {
		t.Fatalf("the interrupted pass was not recorded: %+v", st)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		err  error
		code string
	}{
		{&discord.APIError{Status: 401}, CodeUnauthorized},
		{&discord.APIError{Status: 403}, CodeForbidden},
		{&discord.APIError{Status: 404}, CodeNotFound},
		{&discord.APIError{Status: 429}, CodeRateLimited},
		{&discord.APIError{Status: 202, Code: 110000}, CodeIndexNotReady},
		{&discord.APIError{Status: 502}, CodeDiscordUnavailable},
		{&discord.APIError{Status: 400}, CodeDiscordError},
		{context.DeadlineExceeded, CodeTimeout},
		{&timeoutErr{timeout: true}, CodeTimeout},
		{&timeoutErr{}, CodeDiscordUnavailable},
		{errors.New("odd"), CodeDiscordError},
	}
	for _, tt := range tests {
		if code, msg := Classify(tt.err); code != tt.code || msg != tt.err.Error() {
			t.Errorf("Classify(%v) = %s, %q; want %s", tt.err, code, msg, tt.code)
		}
	}
	long := strings.Repeat("é", 400)
	if _, msg := Classify(errors.New(long)); len(msg) > maxMessage+len("…") || !strings.HasSuffix(msg, "…") || !utf8Valid(msg) {
		t.Fatalf("long message %q", msg)
	}
}

type timeoutErr struct{ timeout bool }

func (e *timeoutErr) Error() string   { return "dial tcp: boom" }
func (e *timeoutErr) Timeout() bool   { return e.timeout }
func (e *timeoutErr) Temporary() bool { return false }

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }
