package discord_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/collector-svc/internal/fakediscord"
)

// BenchmarkPass runs the requests of one collection pass — guild, channels,
// and counts for today, yesterday, this month and the previous month (Moscow)
// per server and per message-bearing channel — for 20 servers × 30 channels
// against a fake Discord that enforces benchRate requests per second (and
// per-guild route buckets that are not the bottleneck). The client is paced to
// the same rate. It fails when the pass sends more requests than the windows
// need, receives a 429, or takes more than 1.1 × requests ÷ rate.
//
//	go test -run '^$' -bench BenchmarkPass -benchtime 1x ./internal/discord/
func BenchmarkPass(b *testing.B) {
	const (
		benchRate = 200.0 // requests/s: 4 × Discord's 50 to keep the bench short; the ratio is what counts
		guilds    = 20
		channels  = 30
		perGuild  = 2 // requests in flight per server; all servers are collected at once
	)
	for b.Loop() {
		fake, base := startFake(b, fakediscord.Options{
			Seed: 1, Guilds: guilds, ChannelsPerGuild: channels,
			RateLimit: benchRate, BucketLimit: 40, BucketWindow: time.Second,
		})
		c := discord.New(discord.Config{BaseURL: base, GlobalRate: benchRate})
		ctx := context.Background()

		msk := time.FixedZone("MSK", 3*3600)
		now := time.Now().In(msk)
		today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, msk)
		month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, msk)
		windows := [][2]time.Time{
			{today, today.AddDate(0, 0, 1)},
			{today.AddDate(0, 0, -1), today},
			{month, month.AddDate(0, 1, 0)},
			{month.AddDate(0, -1, 0), month},
		}

		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			minimum  int
			mismatch int
			failures []error
		)
		fail := func(err error) {
			mu.Lock()
			failures = append(failures, err)
			mu.Unlock()
		}
		start := time.Now()
		for _, e := range fake.Catalog() {
			wg.Go(func() {
				_, err := c.Guild(ctx, e.GuildID)
				var chans []discord.Channel
				if err == nil {
					chans, err = c.Channels(ctx, e.GuildID)
				}
				if err != nil {
					fail(err)
					return
				}
				targets := []string{""}
				for _, ch := range chans {
					if discord.MessageBearing(ch.Type) {
						targets = append(targets, ch.ID)
					}
				}
				mu.Lock()
				minimum += 2 + len(windows)*len(targets)
				mu.Unlock()
				var inner sync.WaitGroup
				sem := make(chan struct{}, perGuild)
				for _, w := range windows {
					for _, ch := range targets {
						inner.Go(func() {
							sem <- struct{}{}
							defer func() { <-sem }()
							n, err := c.CountMessages(ctx, e.GuildID, ch, w[0], w[1])
							if err != nil {
								fail(err)
								return
							}
							if n != fake.Count(e.GuildID, ch, w[0], w[1]) {
								mu.Lock()
								mismatch++
								mu.Unlock()
							}
						})
					}
				}
				inner.Wait()
			})
		}
		wg.Wait()
		elapsed := time.Since(start)

		st := fake.Stats()
		ideal := time.Duration(float64(st.Requests) / benchRate * float64(time.Second))
		ratio := elapsed.Seconds() / ideal.Seconds()
		fmt.Printf("discord pass: %d servers × %d channels, limit %.0f req/s\n", guilds, channels, benchRate)
		fmt.Printf("  requests sent %d, minimum needed %d, 429s received %d (global %d)\n", st.Requests, minimum, st.RateLimited+st.Injected429, st.GlobalLimited)
		fmt.Printf("  elapsed %.2fs, requests/limit %.2fs, ratio %.3f (max 1.1)\n", elapsed.Seconds(), ideal.Seconds(), ratio)
		b.ReportMetric(float64(st.Requests), "requests")
		b.ReportMetric(float64(minimum), "min_requests")
		b.ReportMetric(float64(st.RateLimited), "429s")
		b.ReportMetric(ratio, "time_ratio")

		if len(failures) > 0 {
			b.Fatalf("%d requests failed, first: %v", len(failures), failures[0])
		}
		if mismatch > 0 {
			b.Errorf("%d counts differ from the fake's", mismatch)
		}
		if st.Requests != int64(minimum) {
			b.Errorf("sent %d requests, the windows need %d", st.Requests, minimum)
		}
		if st.RateLimited != 0 {
			b.Errorf("received %d 429s", st.RateLimited)
		}
		if ratio > 1.1 {
			b.Errorf("pass took %.3f × requests/limit, over 1.1", ratio)
		}
	}
}
