package fakediscord

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"forumstats.local/collector-svc/internal/discord"
)

// get sends one request to the fake's handler and decodes the JSON answer.
func get(t *testing.T, s *Server, path string, hdr ...string) (int, http.Header, map[string]any, []any) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	var obj map[string]any
	var arr []any
	body := rec.Body.Bytes()
	if len(body) > 0 && body[0] == '[' {
		if err := json.Unmarshal(body, &arr); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, body)
		}
	} else if err := json.Unmarshal(body, &obj); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, body)
	}
	return rec.Code, rec.Header(), obj, arr
}

func total(t *testing.T, s *Server, guildID, channelID string, minID, maxID uint64) int64 {
	t.Helper()
	path := fmt.Sprintf("/api/v10/guilds/%s/messages/search?min_id=%d&max_id=%d&limit=1&include_nsfw=true", guildID, minID, maxID)
	if channelID != "" {
		path += "&channel_id=" + channelID
	}
	code, _, obj, _ := get(t, s, path)
	if code != 200 {
		t.Fatalf("GET %s = %d %v", path, code, obj)
	}
	return int64(obj["total_results"].(float64))
}

func TestCatalogAndGuilds(t *testing.T) {
	s := New(Options{})
	cat := s.Catalog()
	if len(cat) != 3 {
		t.Fatalf("%d guilds, want 3", len(cat))
	}
	lo, hi := time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, e := range cat {
		id, err := strconv.ParseUint(e.GuildID, 10, 64)
		if err != nil || e.Number != i+1 || e.Name == "" {
			t.Fatalf("catalog entry %+v", e)
		}
		if at := discord.SnowflakeTime(id); at.Before(lo) || !at.Before(hi) {
			t.Errorf("guild %s created %s, want in 2016..2020", e.GuildID, at)
		}
		code, _, g, _ := get(t, s, "/api/v10/guilds/"+e.GuildID)
		if code != 200 || g["id"] != e.GuildID || g["name"] != e.Name {
			t.Fatalf("guild %s = %d %v", e.GuildID, code, g)
		}
		icon, _ := g["icon"].(string)
		banner, hasBanner := g["banner"].(string)
		switch i {
		case 0:
			if !strings.HasPrefix(icon, "a_") || len(icon) != 34 || !hasBanner {
				t.Errorf("guild 1: icon %q banner %q, want animated icon and a banner", icon, banner)
			}
		case 1:
			if len(icon) != 32 || g["banner"] != nil {
				t.Errorf("guild 2: icon %q banner %v, want static icon, no banner", icon, g["banner"])
			}
		case 2:
			if len(icon) != 32 || !hasBanner {
				t.Errorf("guild 3: icon %q banner %v, want static icon and a banner", icon, g["banner"])
			}
		}

		code, _, _, chans := get(t, s, "/api/v10/guilds/"+e.GuildID+"/channels")
		if code != 200 || len(chans) < 5 || len(chans) > 8 {
			t.Fatalf("guild %s: %d channels (HTTP %d), want 5..8", e.GuildID, len(chans), code)
		}
		ids := map[string]float64{}
		types := map[float64]bool{}
		for _, c := range chans {
			m := c.(map[string]any)
			ids[m["id"].(string)] = m["type"].(float64)
			types[m["type"].(float64)] = true
			cid, _ := strconv.ParseUint(m["id"].(string), 10, 64)
			if !discord.SnowflakeTime(cid).After(discord.SnowflakeTime(id)) {
				t.Errorf("channel %v created before its guild", m)
			}
		}
		for _, c := range chans {
			m := c.(map[string]any)
			if p, ok := m["parent_id"].(string); ok && ids[p] != typeCategory {
				t.Errorf("channel %v: parent is not a category of the guild", m)
			}
		}
		for _, typ := range []float64{typeCategory, typeText, typeVoice, typeAnnouncement, typeStage} {
			if !types[typ] {
				t.Errorf("guild %s has no channel of type %v", e.GuildID, typ)
			}
		}
	}
}

func TestDeterministic(t *testing.T) {
	a, b := New(Options{Seed: 7, Guilds: 4}), New(Options{Seed: 7, Guilds: 4})
	if fmt.Sprint(a.Catalog()) != fmt.Sprint(b.Catalog()) {
		t.Fatal("same options, different catalogs")
	}
	if fmt.Sprint(a.Catalog()) == fmt.Sprint(New(Options{Seed: 8, Guilds: 4}).Catalog()) {
		t.Fatal("another seed, same catalog")
	}
	g := a.Catalog()[3].GuildID
	from := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	for _, s := range []*Server{a, b} {
		_, _, _, chans := get(t, s, "/guilds/"+g+"/channels")
		if got := a.Count(g, "", from, from.AddDate(0, 1, 0)); got != s.Count(g, "", from, from.AddDate(0, 1, 0)) || got == 0 {
			t.Fatalf("counts differ or are zero: %d", got)
		}
		if len(chans) == 0 {
			t.Fatal("no channels")
		}
	}
}

func TestBenchDataset(t *testing.T) {
	s := New(Options{Guilds: 20, ChannelsPerGuild: 30})
	cat := s.Catalog()
	if len(cat) != 20 {
		t.Fatalf("%d guilds", len(cat))
	}
	seen := map[string]bool{}
	for _, e := range cat {
		_, _, _, chans := get(t, s, "/guilds/"+e.GuildID+"/channels")
		if len(chans) != 30 {
			t.Fatalf("guild %s: %d channels, want 30", e.GuildID, len(chans))
		}
		for _, c := range chans {
			id := c.(map[string]any)["id"].(string)
			if seen[id] || id == e.GuildID {
				t.Fatalf("duplicate id %s", id)
			}
			seen[id] = true
		}
	}
}

// brute enumerates the messages of hour h of the stream.
func brute(s stream, h int64) []Message {
	n := s.perHour(h)
	out := make([]Message, 0, n)
	for k := range n {
		ms := h*hourMs + k*hourMs/n
		out = append(out, Message{ID: snowflake(ms, s.low(h, k)), Ms: ms})
	}
	return out
}

func testStream() stream {
	return newStream(3, 123456789, time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(), 20)
}

func TestStreamAgainstEnumeration(t *testing.T) {
	s := testStream()
	h0 := time.Date(2026, 3, 10, 15, 0, 0, 0, time.UTC).UnixMilli() / hourMs
	var msgs []Message
	for h := h0; h < h0+3; h++ {
		msgs = append(msgs, brute(s, h)...)
	}
	if len(msgs) < 20 {
		t.Fatalf("only %d messages in 3 busy hours", len(msgs))
	}
	// Every message is where at() says, and nowhere else in its hour.
	for i, m := range msgs {
		if low, ok := s.at(m.Ms); !ok || low != m.ID&lowMask {
			t.Fatalf("at(%d) = %#x, %v; want %#x", m.Ms, low, ok, m.ID&lowMask)
		}
		if i > 0 && msgs[i-1].Ms+1 < m.Ms {
			if _, ok := s.at(m.Ms - 1); ok {
				t.Fatalf("at(%d) found a message that is not there", m.Ms-1)
			}
		}
	}
	// Windows with edges on, next to and between messages.
	var edges []int64
	for _, m := range msgs[:len(msgs):len(msgs)] {
		edges = append(edges, m.Ms-1, m.Ms, m.Ms+1)
	}
	edges = append(edges, h0*hourMs, (h0+1)*hourMs, (h0+3)*hourMs)
	for i := 0; i < len(edges); i += 3 {
		for j := i; j < len(edges); j += 5 {
			a, b := edges[i], edges[j]
			var want int64
			for _, m := range msgs {
				if m.Ms >= a && m.Ms < b {
					want++
				}
			}
			if got := s.countMs(a, b); got != want {
				t.Fatalf("countMs(%d, %d) = %d, want %d", a, b, got, want)
			}
		}
	}
	// Exclusive snowflake bounds, on and next to the ids.
	for i := 0; i < len(msgs); i += 3 {
		for j := i; j < len(msgs); j += 4 {
			for _, d := range [][2]int64{{0, 0}, {-1, 0}, {0, 1}, {-1, 1}, {1, -1}} {
				lo, hi := uint64(int64(msgs[i].ID)+d[0]), uint64(int64(msgs[j].ID)+d[1])
				var want int64
				for _, m := range msgs {
					if lo < m.ID && m.ID < hi {
						want++
					}
				}
				if got := s.countIDs(lo, hi); got != want {
					t.Fatalf("countIDs(%d, %d) = %d, want %d", lo, hi, got, want)
				}
			}
		}
	}
	// latest lists newest first, exactly the messages in bounds.
	got := s.latest(1, msgs[5].ID, msgs[25].ID, 1000)
	if len(got) != 20 || got[0].ID != msgs[24].ID || got[19].ID != msgs[5].ID {
		t.Fatalf("latest: %d messages, first %v last %v", len(got), got[0], got[len(got)-1])
	}
	if got := s.latest(1, msgs[5].ID, msgs[25].ID, 3); len(got) != 3 || got[2].ID != msgs[22].ID {
		t.Fatalf("latest with limit 3 = %v", got)
	}
}

func TestStreamBeforeCreation(t *testing.T) {
	created := time.Date(2020, 1, 1, 10, 30, 0, 0, time.UTC)
	s := newStream(1, 42, created.UnixMilli(), 20)
	if n := s.countMs(0, created.Add(30*time.Minute).UnixMilli()); n != 0 {
		t.Errorf("%d messages before the first whole hour after creation", n)
	}
	if n := s.countMs(0, created.Add(48*time.Hour).UnixMilli()); n == 0 {
		t.Error("no message in the two days after creation")
	}
	if n := s.countIDs(0, math.MaxUint64); n != s.countMs(0, lastMs+1) {
		t.Errorf("countIDs(all) = %d, countMs(all) = %d", n, s.countMs(0, lastMs+1))
	}
}

// FuzzCountConsistency checks the two ways of counting against each other:
// the handler's (snowflake bounds from discord.WindowIDs) and Count's (ms).
func FuzzCountConsistency(f *testing.F) {
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	f.Add(base, int64(time.Hour), int64(24*time.Hour))
	f.Add(base+1, int64(0), int64(time.Millisecond))
	f.Add(base, int64(-time.Hour), int64(31*24*time.Hour))
	f.Add(int64(0), int64(0), int64(math.MaxInt64))
	s := testStream()
	f.Fuzz(func(t *testing.T, start, off, length int64) {
		from := time.Unix(0, start).Add(time.Duration(off % int64(24*time.Hour)))
		to := from.Add(time.Duration(length % int64(62*24*time.Hour)))
		var viaIDs int64
		if lo, hi, ok := discord.WindowIDs(from, to); ok {
			viaIDs = s.countIDs(lo, hi)
		}
		viaMs := s.countMs(ceilMilli(from), ceilMilli(to))
		if viaIDs != viaMs {
			t.Fatalf("[%s, %s): search counts %d, Count %d", from, to, viaIDs, viaMs)
		}
		mid := from.Add(to.Sub(from) / 3)
		if to.After(from) && s.countMs(ceilMilli(from), ceilMilli(mid))+s.countMs(ceilMilli(mid), ceilMilli(to)) != viaMs {
			t.Fatalf("counts over [%s, %s) are not additive at %s", from, to, mid)
		}
	})
}

func TestSearchSemantics(t *testing.T) {
	s := New(Options{})
	g := s.Catalog()[0].GuildID
	_, _, _, chans := get(t, s, "/guilds/"+g+"/channels")
	from := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 1, 0)
	lo, hi, _ := discord.WindowIDs(from, to)

	var sum int64
	for _, c := range chans {
		m := c.(map[string]any)
		id := m["id"].(string)
		n := total(t, s, g, id, lo, hi)
		if want := s.Count(g, id, from, to); n != want {
			t.Errorf("channel %s: search %d, Count %d", id, n, want)
		}
		bearing := discord.MessageBearing(int(m["type"].(float64)))
		if bearing != (n > 0) {
			t.Errorf("channel %v: %d messages in a month", m, n)
		}
		sum += n
	}
	all := total(t, s, g, "", lo, hi)
	if all != s.Count(g, "", from, to) {
		t.Errorf("guild: search %d, Count %d", all, s.Count(g, "", from, to))
	}
	if all <= sum {
		t.Errorf("guild total %d, listed channels %d: threads are not counted", all, sum)
	}

	// Exclusive bounds, checked on a real message id.
	msgs, err := s.Messages(g, "", from, to, 1)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("Messages = %v, %v", msgs, err)
	}
	x := msgs[0].ID
	for _, tt := range []struct {
		lo, hi uint64
		want   int64
	}{
		{x - 1, x + 1, 1}, {x, x + 1, 0}, {x - 1, x, 0}, {x, x, 0}, {x + 1, x - 1, 0},
	} {
		if n := total(t, s, g, strconv.FormatUint(msgs[0].ChannelID, 10), tt.lo, tt.hi); n != tt.want {
			t.Errorf("min_id %d max_id %d around message %d: %d, want %d", tt.lo, tt.hi, x, n, tt.want)
		}
	}

	// The listed hit is the newest message of the window.
	_, _, obj, _ := get(t, s, fmt.Sprintf("/guilds/%s/messages/search?min_id=%d&max_id=%d&limit=1", g, lo, hi))
	hit := obj["messages"].([]any)[0].([]any)[0].(map[string]any)
	if hit["id"] != strconv.FormatUint(x, 10) {
		t.Errorf("search lists %v, want message %d", hit["id"], x)
	}
	if n := total(t, s, g, "", x, hi); n != 0 {
		t.Errorf("%d messages after the newest one", n)
	}
}

func TestErrors(t *testing.T) {
	s := New(Options{Token: "secret"})
	g := s.Catalog()[0].GuildID
	auth := []string{"Authorization", "Bot secret"}
	_, _, _, chans := get(t, s, "/guilds/"+g+"/channels", auth...)
	var category string
	for _, c := range chans {
		if m := c.(map[string]any); m["type"].(float64) == typeCategory {
			category = m["id"].(string)
		}
	}
	tests := []struct {
		path   string
		hdr    []string
		status int
		code   float64
	}{
		{"/guilds/" + g, nil, 401, 0},
		{"/guilds/" + g, []string{"Authorization", "secret"}, 401, 0},
		{"/guilds/" + g, []string{"Authorization", "Bot other"}, 401, 0},
		{"/guilds/" + g, auth, 200, -1},
		{"/api/v9/guilds/" + g + "/", auth, 200, -1},
		{"/guilds/1234", auth, 404, 10004},
		{"/guilds/" + g + "/members", auth, 404, 0},
		{"/users/@me", auth, 404, 0},
		{"/guilds/" + g + "/messages/search?channel_id=99", auth, 404, 10003},
		{"/guilds/" + g + "/messages/search?min_id=abc", auth, 400, 50035},
		{"/guilds/" + g + "/messages/search?limit=26", auth, 400, 50035},
		{"/guilds/" + g + "/messages/search?limit=0", auth, 400, 50035},
		{"/guilds/" + g + "/messages/search?channel_id=" + category, auth, 200, -1},
	}
	for _, tt := range tests {
		code, _, obj, _ := get(t, s, tt.path, tt.hdr...)
		if code != tt.status || (tt.code >= 0 && obj["code"] != tt.code) {
			t.Errorf("GET %s %v = %d %v, want %d code %v", tt.path, tt.hdr, code, obj, tt.status, tt.code)
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/guilds/"+g, nil)
	req.Header.Set("Authorization", "Bot secret")
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, req)
	if rec.Code != 405 {
		t.Errorf("POST = %d, want 405", rec.Code)
	}
}

func TestForbiddenChannel(t *testing.T) {
	probe := New(Options{})
	g := probe.Catalog()[1].GuildID
	_, _, _, chans := get(t, probe, "/guilds/"+g+"/channels")
	id := chans[1].(map[string]any)["id"].(string)
	s := New(Options{Forbidden: []string{id}})
	code, _, obj, _ := get(t, s, "/guilds/"+g+"/messages/search?channel_id="+id)
	if code != 403 || obj["code"] != float64(50001) {
		t.Fatalf("forbidden channel: %d %v", code, obj)
	}
	if code, _, _, _ := get(t, s, "/guilds/"+g+"/messages/search"); code != 200 {
		t.Fatalf("guild search = %d", code)
	}
}

func TestIndexWarmup(t *testing.T) {
	s := New(Options{IndexWarmup: 1500 * time.Millisecond})
	cat := s.Catalog()
	for _, e := range cat[:2] {
		code, _, obj, _ := get(t, s, "/guilds/"+e.GuildID+"/messages/search")
		if code != 202 || obj["code"] != float64(110000) || obj["retry_after"] != 1.5 {
			t.Fatalf("first search = %d %v", code, obj)
		}
		if code, _, _, _ := get(t, s, "/guilds/"+e.GuildID+"/messages/search"); code != 200 {
			t.Fatalf("second search = %d", code)
		}
	}
	if got := s.Stats().IndexWarmup; got != 2 {
		t.Errorf("IndexWarmup = %d, want 2", got)
	}
}

func TestInject429(t *testing.T) {
	s := New(Options{Inject429Every: 3, InjectRetryAfter: 250 * time.Millisecond})
	g := s.Catalog()[0].GuildID
	var scopes []string
	for i := 1; i <= 12; i++ {
		code, h, obj, _ := get(t, s, "/guilds/"+g)
		if (i%3 == 0) != (code == 429) {
			t.Fatalf("request %d: %d", i, code)
		}
		if code == 429 {
			if obj["retry_after"] != 0.25 || obj["global"] != (h.Get("X-RateLimit-Scope") == "global") {
				t.Fatalf("429 %v %v", h, obj)
			}
			scopes = append(scopes, h.Get("X-RateLimit-Scope"))
		}
	}
	if strings.Join(scopes, ",") != "user,global,user,global" {
		t.Errorf("scopes %v", scopes)
	}
	if st := s.Stats(); st.Injected429 != 4 || st.RateLimited != 0 || st.Requests != 12 {
		t.Errorf("stats %+v", st)
	}
}

func TestGlobalLimit(t *testing.T) {
	s := New(Options{RateLimit: 10, RateBurst: 3})
	g := s.Catalog()[0].GuildID
	for i := range 3 {
		if code, _, _, _ := get(t, s, "/guilds/"+g); code != 200 {
			t.Fatalf("request %d within the burst: %d", i, code)
		}
	}
	code, h, obj, _ := get(t, s, "/guilds/"+g)
	ra, _ := obj["retry_after"].(float64)
	if code != 429 || obj["global"] != true || h.Get("X-RateLimit-Global") != "true" || h.Get("X-RateLimit-Scope") != "global" || ra <= 0 || ra > 0.1 {
		t.Fatalf("over the burst: %d %v %v", code, h, obj)
	}
	time.Sleep(time.Duration(ra*1000+5) * time.Millisecond)
	if code, _, _, _ := get(t, s, "/guilds/"+g); code != 200 {
		t.Fatalf("after retry_after: %d", code)
	}
	if st := s.Stats(); st.RateLimited != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestBucketLimit(t *testing.T) {
	s := New(Options{BucketLimit: 2, BucketWindow: 300 * time.Millisecond})
	cat := s.Catalog()
	g := cat[0].GuildID
	_, h1, _, _ := get(t, s, "/guilds/"+g)
	_, h2, _, _ := get(t, s, "/guilds/"+g+"/channels") // same bucket
	code, h3, obj, _ := get(t, s, "/guilds/"+g)
	if h1.Get("X-RateLimit-Remaining") != "1" || h2.Get("X-RateLimit-Remaining") != "0" || h1.Get("X-RateLimit-Limit") != "2" {
		t.Errorf("headers %v / %v", h1, h2)
	}
	if h1.Get("X-RateLimit-Bucket") == "" || h1.Get("X-RateLimit-Bucket") != h2.Get("X-RateLimit-Bucket") {
		t.Errorf("guild and channels buckets: %q, %q", h1.Get("X-RateLimit-Bucket"), h2.Get("X-RateLimit-Bucket"))
	}
	if ra, _ := strconv.ParseFloat(h2.Get("X-RateLimit-Reset-After"), 64); ra <= 0 || ra > 0.3 {
		t.Errorf("Reset-After %v", h2.Get("X-RateLimit-Reset-After"))
	}
	if code != 429 || obj["global"] != false || h3.Get("X-RateLimit-Scope") != "user" {
		t.Fatalf("third request in the window: %d %v %v", code, h3, obj)
	}
	// Other buckets: the search, and the same route of another guild.
	_, hs, _, _ := get(t, s, "/guilds/"+g+"/messages/search")
	if hs.Get("X-RateLimit-Remaining") != "1" || hs.Get("X-RateLimit-Bucket") == h1.Get("X-RateLimit-Bucket") {
		t.Errorf("search headers %v", hs)
	}
	if code, _, _, _ := get(t, s, "/guilds/"+cat[1].GuildID); code != 200 {
		t.Errorf("another guild: %d", code)
	}
	time.Sleep(310 * time.Millisecond)
	if code, h, _, _ := get(t, s, "/guilds/"+g); code != 200 || h.Get("X-RateLimit-Remaining") != "1" {
		t.Errorf("next window: %d %v", code, h)
	}
}

func TestClockHidesFuture(t *testing.T) {
	now := time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)
	s := New(Options{Clock: func() time.Time { return now }})
	free := New(Options{})
	g := s.Catalog()[0].GuildID
	day := time.Date(2026, 6, 15, 0, 0, 0, 0, time.UTC)
	if a, b := s.Count(g, "", day, day.Add(24*time.Hour)), free.Count(g, "", day, now.Add(time.Millisecond)); a != b || a == 0 {
		t.Errorf("with the clock at noon the day has %d messages, the morning %d", a, b)
	}
	lo, hi, _ := discord.WindowIDs(day, day.Add(24*time.Hour))
	if n := total(t, s, g, "", lo, hi); n != s.Count(g, "", day, day.Add(24*time.Hour)) {
		t.Errorf("search %d, Count %d", n, s.Count(g, "", day, day.Add(24*time.Hour)))
	}
	if n := s.Count(g, "", now.Add(time.Millisecond), now.Add(time.Hour)); n != 0 {
		t.Errorf("%d messages from the future", n)
	}
}

// TestFakeCount: /_fake/count answers Count without a token, a limit or a place in Stats, and
// refuses what it cannot count.
func TestFakeCount(t *testing.T) {
	frozen := time.Date(2026, 11, 19, 12, 0, 0, 0, time.UTC)
	s := New(Options{Token: "secret", RateLimit: 1, RateBurst: 1, Clock: func() time.Time { return frozen }})
	g := s.Catalog()[0].GuildID
	_, _, _, chans := get(t, s, "/guilds/"+g+"/channels", "Authorization", "Bot secret")
	var ch string
	for _, c := range chans {
		if m := c.(map[string]any); m["type"].(float64) == 0 && ch == "" {
			ch = m["id"].(string)
		}
	}
	from, to := frozen.Add(-30*24*time.Hour), frozen.Add(time.Hour)
	window := "&from=" + from.Format(time.RFC3339) + "&to=" + to.Format(time.RFC3339)
	for _, channelID := range []string{"", ch} {
		path := "/_fake/count?guild_id=" + g + "&channel_id=" + channelID + window
		code, _, obj, _ := get(t, s, path)
		want := s.Count(g, channelID, from, to)
		if code != 200 || obj["count"] != float64(want) || want == 0 {
			t.Fatalf("GET %s = %d %v, want count %d (> 0)", path, code, obj, want)
		}
	}
	if st := s.Stats(); st.Requests != 1 || st.RateLimited != 0 {
		t.Fatalf("stats %+v: the fake's own endpoint was counted or limited", st)
	}
	tests := []struct {
		path   string
		status int
	}{
		{"/_fake/count?guild_id=" + g + "&from=yesterday&to=" + to.Format(time.RFC3339), 400},
		{"/_fake/count?guild_id=1234" + window, 404},
		{"/_fake/count?guild_id=" + g + "&channel_id=99" + window, 404},
		{"/_fake/stats", 404},
	}
	for _, tt := range tests {
		if code, _, obj, _ := get(t, s, tt.path); code != tt.status {
			t.Errorf("GET %s = %d %v, want %d", tt.path, code, obj, tt.status)
		}
	}
}

// TestSearchBucketLimit: the search has its own limit per guild (Discord's tight search buckets),
// with headers even when the other routes have none. It runs in a synctest bubble, so that the
// four searches fall in one second of the fake's clock however loaded the machine (at a load
// average of 21 on 2 cores the real second ran out between them).
func TestSearchBucketLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Options{SearchBucketLimit: 3, IndexWarmup: 0})
		cat := s.Catalog()
		g := cat[0].GuildID
		if _, h, _, _ := get(t, s, "/guilds/"+g); h.Get("X-RateLimit-Limit") != "" {
			t.Errorf("the guild route has a limit: %v", h)
		}
		for i := range 3 {
			code, h, _, _ := get(t, s, "/guilds/"+g+"/messages/search")
			if code != 200 || h.Get("X-RateLimit-Limit") != "3" || h.Get("X-RateLimit-Remaining") != strconv.Itoa(2-i) {
				t.Fatalf("search %d: %d %v", i, code, h)
			}
		}
		if code, _, _, _ := get(t, s, "/guilds/"+g+"/messages/search"); code != 429 {
			t.Fatalf("fourth search in the window: %d", code)
		}
		if code, _, _, _ := get(t, s, "/guilds/"+cat[1].GuildID+"/messages/search"); code != 200 {
			t.Fatalf("another guild's search: %d", code)
		}
	})
}
