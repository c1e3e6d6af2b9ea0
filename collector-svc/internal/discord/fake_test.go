package discord_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/collector-svc/internal/fakediscord"
)

func startFake(t testing.TB, opts fakediscord.Options) (*fakediscord.Server, string) {
	t.Helper()
	fake := fakediscord.New(opts)
	srv := httptest.NewServer(fake.Handler())
	t.Cleanup(srv.Close)
	return fake, srv.URL + "/api/v10"
}

// TestAgainstFake runs a small pass against the fake with every fault it can
// inject, and checks the counts, to the millisecond, against the fake's own.
func TestAgainstFake(t *testing.T) {
	fake, base := startFake(t, fakediscord.Options{
		Seed:           5,
		RateLimit:      100,
		BucketLimit:    4,
		BucketWindow:   300 * time.Millisecond,
		Inject429Every: 9,
		IndexWarmup:    50 * time.Millisecond,
		Latency:        2 * time.Millisecond,
		Token:          "t0ken",
	})
	c := discord.New(discord.Config{BaseURL: base, Token: "t0ken", GlobalRate: 100})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	month := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for _, e := range fake.Catalog() {
		wg.Go(func() {
			g, err := c.Guild(ctx, e.GuildID)
			if err != nil || g.ID != e.GuildID || g.Name != e.Name {
				t.Errorf("Guild(%s) = %+v, %v", e.GuildID, g, err)
				return
			}
			chans, err := c.Channels(ctx, e.GuildID)
			if err != nil {
				t.Errorf("Channels(%s): %v", e.GuildID, err)
				return
			}
			check := func(channelID string, from, to time.Time, want int64) {
				got, err := c.CountMessages(ctx, e.GuildID, channelID, from, to)
				if err != nil || got != want {
					t.Errorf("CountMessages(%s, %q, %s, %s) = %d, %v; want %d", e.GuildID, channelID,
						from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano), got, err, want)
				}
			}
			check("", month, month.AddDate(0, 1, 0), fake.Count(e.GuildID, "", month, month.AddDate(0, 1, 0)))
			for _, ch := range chans {
				if !discord.MessageBearing(ch.Type) {
					continue
				}
				check(ch.ID, month, month.AddDate(0, 1, 0), fake.Count(e.GuildID, ch.ID, month, month.AddDate(0, 1, 0)))
			}
			// Windows whose edges fall on the millisecond of a message whose
			// snowflake is the first of that millisecond (low bits 0): a
			// min_id one too high would miss it.
			msgs, err := fake.Messages(e.GuildID, "", month, month.AddDate(0, 0, 7), 1000)
			if err != nil {
				t.Error(err)
				return
			}
			i := slices.IndexFunc(msgs, func(m fakediscord.Message) bool { return m.ID&(1<<22-1) == 0 })
			if i < 0 {
				t.Errorf("no message with low bits 0 among %d", len(msgs))
				return
			}
			at := time.UnixMilli(msgs[i].Ms)
			ch := strconv.FormatUint(msgs[i].ChannelID, 10)
			check(ch, at, at.Add(time.Millisecond), 1)
			check(ch, at.Add(-time.Hour), at, fake.Count(e.GuildID, ch, at.Add(-time.Hour), at))
			check(ch, at.Add(time.Millisecond), at.Add(time.Hour), fake.Count(e.GuildID, ch, at.Add(time.Millisecond), at.Add(time.Hour)))
			check(ch, at.Add(-time.Hour), at.Add(time.Millisecond), fake.Count(e.GuildID, ch, at.Add(-time.Hour), at)+1)
			check(ch, at.Add(-time.Nanosecond), at.Add(time.Nanosecond), 1)
		})
	}
	wg.Wait()
	st := fake.Stats()
	if st.RateLimited != 0 {
		t.Errorf("the fake answered %d 429s for exceeding its limits", st.RateLimited)
	}
	if st.Injected429 == 0 || st.IndexWarmup != 3 {
		t.Errorf("faults not exercised: %+v", st)
	}
}

func TestAgainstFakeErrors(t *testing.T) {
	probe := fakediscord.New(fakediscord.Options{})
	g := probe.Catalog()[0].GuildID
	srv := httptest.NewServer(probe.Handler())
	defer srv.Close()
	chans, err := discord.New(discord.Config{BaseURL: srv.URL}).Channels(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	_, base := startFake(t, fakediscord.Options{Token: "right", Forbidden: []string{chans[1].ID}})
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	to := from.AddDate(0, 0, 1)
	ctx := context.Background()

	if _, err := discord.New(discord.Config{BaseURL: base, Token: "wrong"}).Guild(ctx, g); !errors.Is(err, discord.ErrUnauthorized) {
		t.Errorf("wrong token: %v", err)
	}
	c := discord.New(discord.Config{BaseURL: base, Token: "right"})
	if _, err := c.CountMessages(ctx, g, chans[1].ID, from, to); !errors.Is(err, discord.ErrForbidden) {
		t.Errorf("forbidden channel: %v", err)
	}
	if _, err := c.CountMessages(ctx, g, "", from, to); err != nil {
		t.Errorf("guild search: %v", err)
	}
	if _, err := c.Guild(ctx, "1234567"); !errors.Is(err, discord.ErrNotFound) {
		t.Errorf("unknown guild: %v", err)
	}
}
