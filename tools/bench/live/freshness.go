package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"forumstats.local/shared/reports"
	"forumstats.local/tools/stack"
)

// freshness is how long each message took to appear in stats-svc's answer for today.
type freshness struct {
	messages int             // messages followed
	polls    int             // answers read
	lags     []time.Duration // one per message that appeared, sorted
	unseen   int             // messages that never appeared
}

// quantile is the q-th quantile of the lags, a message never seen counting as longer than any.
func (f freshness) quantile(q float64) (time.Duration, bool) {
	i := int(q*float64(f.messages)+0.999999) - 1 // the ceil(q·n)-th smallest
	i = max(i, 0)
	if i >= len(f.lags) {
		return 0, false
	}
	return f.lags[i], true
}

// poll is one answer of stats-svc: the day's total of the server, read at at.
type poll struct {
	at    time.Time
	total int64
}

// measureFreshness runs the collector against a fake whose three servers post at a steady rate
// and stats-svc on the same database and Redis, and asks stats-svc every -poll for today's count
// of the first server. Each message of that server stamped during -fresh-for has a rank in the
// day (the fake's count of the day's messages up to it); it appears in the first answer whose
// count reaches its rank (a report always counts every message up to a moment: live counts are
// flushed in the order the gateway sends them, oldest first). Its lag is from when it was made to
// when that answer was read.
func measureFreshness(ctx context.Context, e *env) (freshness, error) {
	var res freshness
	s, err := e.startScenario(ctx, "fresh", []string{"--guilds", "3", "--message-rate", strconv.Itoa(e.o.freshRate)})
	if err != nil {
		return res, err
	}
	stats, err := e.StartService(stack.Stats, e.stats, []string{"DATABASE_URL=" + s.dbURL, "REDIS_URL=" + s.redisURL, "LOG_LEVEL=warn"})
	if err != nil {
		return res, err
	}
	guild := s.fake.Guilds[0]
	from := time.Now().Truncate(time.Millisecond)
	until := from.Add(e.o.freshFor)
	day := reports.DayOf(from)
	if reports.DayOf(until.Add(maxFreshness)) != day {
		return res, fmt.Errorf("the measurement would cross Moscow midnight: run it again in a minute")
	}
	before, err := s.fake.Count(ctx, guild, "", day.Start(), from)
	if err != nil {
		return res, err
	}
	url := stats.URL + "/api/chat-statistics?period=day&server=1&date=" + day.String()
	var polls []poll
	ask := func() error {
		total, err := todayTotal(ctx, url)
		if err != nil {
			return err
		}
		polls = append(polls, poll{time.Now(), total})
		return nil
	}
	e.logf("fresh: following server 1 (%s) in %s from %s", guild, url, from.Format(time.RFC3339Nano))
	for time.Now().Before(until) {
		if err := ask(); err != nil {
			return res, err
		}
		time.Sleep(e.o.poll)
	}
	times, err := s.fake.Times(ctx, guild, from, until)
	if err != nil {
		return res, err
	}
	if len(times) < 100 {
		return res, fmt.Errorf("only %d messages of server 1 in %s: raise -fresh-rate or -fresh-for", len(times), e.o.freshFor)
	}
	// The last messages need time to appear too: ask until every one has, or for as long as
	// twice the target.
	all := before + int64(len(times))
	for deadline := time.Now().Add(2 * maxFreshness); polls[len(polls)-1].total < all && time.Now().Before(deadline); {
		time.Sleep(e.o.poll)
		if err := ask(); err != nil {
			return res, err
		}
	}
	res.messages, res.polls = len(times), len(polls)
	if res.lags, res.unseen, err = lags(before, times, polls); err != nil {
		return res, err
	}
	e.logf("fresh: %d messages, %d polls, %d never seen", res.messages, res.polls, res.unseen)
	return res, nil
}

// lags is, for each message (made at times[j], oldest first, after the before messages of the day
// that came earlier), the time from when it was made to the first poll whose total reaches its
// rank in the day, sorted; and how many never appeared. A total that counts a message before it
// was made is an error: the counts would be wrong.
func lags(before int64, times []time.Time, polls []poll) ([]time.Duration, int, error) {
	var out []time.Duration
	i := 0
	for j, t := range times {
		rank := before + int64(j) + 1
		for i < len(polls) && polls[i].total < rank {
			i++
		}
		if i == len(polls) {
			slices.Sort(out)
			return out, len(times) - j, nil
		}
		lag := polls[i].at.Sub(t)
		if lag < 0 {
			return nil, 0, fmt.Errorf("stats-svc counted %d messages of today at %s, before message %d (%s) was made: a count is wrong",
				polls[i].total, polls[i].at.Format(time.RFC3339Nano), rank, t.Format(time.RFC3339Nano))
		}
		out = append(out, lag)
	}
	slices.Sort(out)
	return out, 0, nil
}

// todayTotal asks stats-svc for the day's report of the server and returns its total (0 while
// there is none).
func todayTotal(ctx context.Context, url string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	var a struct {
		Server *struct {
			TotalMessages *int64 `json:"totalMessages"`
		} `json:"server"`
	}
	if err := json.Unmarshal(body, &a); err != nil || a.Server == nil {
		return 0, fmt.Errorf("GET %s: %v: %.200s", url, err, body)
	}
	if a.Server.TotalMessages == nil {
		return 0, nil
	}
	return *a.Server.TotalMessages, nil
}
