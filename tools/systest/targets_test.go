//go:build faults || load

package systest

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"forumstats.local/shared/reports"
	"forumstats.local/tools/loadgen"
	"forumstats.local/tools/stack"
)

// statsTargets is the read mix of the stats load: the default month for all servers, days,
// weeks, a 31-day range that slides by day (so not everything is one cached answer), one
// server by number and by id, icons, and HEAD.
func statsTargets(base string, fx stack.StatsFixture) []loadgen.Target {
	ok := []int{http.StatusOK}
	get := func(method, path string) loadgen.Target {
		return loadgen.Target{Method: method, URL: base + path, Expect: ok}
	}
	today := fx.Today()
	day := func(d int) string { return today.AddDate(0, 0, -d).Format("2006-01-02") }
	prevMonth := time.Date(today.Year(), today.Month()-1, 1, 0, 0, 0, 0, reports.Moscow).Format("2006-01")
	ts := []loadgen.Target{
		get("GET", "/api/chat-statistics"),
		get("GET", "/api/chat-statistics?period=day"),
		get("GET", "/api/chat-statistics?period=week&server=3"),
		get("GET", "/api/chat-statistics?period=month&month="+prevMonth+"&server="+fx.GuildID(5)),
		get("GET", "/api/chat-statistics?period=day&date="+day(1)+"&server=07"),
		get("GET", "/api/chat-icons"),
		get("GET", "/api/chat-icons?server=2"),
		get("HEAD", "/api/chat-statistics?period=week"),
	}
	for i := range 8 {
		ts = append(ts, get("GET", fmt.Sprintf("/api/chat-statistics?period=range&from=%s&to=%s", day(30-i), day(i))))
	}
	return ts
}

// forumTargets is the forum mix: pages of a long conversation (deep ones included), single
// messages, conversations, a super key acting as user 1, and writes of read state.
func forumTargets(base string, fx stack.ForumFixture) []loadgen.Target {
	ok := []int{http.StatusOK}
	user := http.Header{"Forum-Api-Key": {fx.UserKey}}
	super := http.Header{"Forum-Api-Key": {fx.SuperKey}, "Forum-Api-User": {"1"}}
	form := http.Header{"Forum-Api-Key": {fx.UserKey}, "Content-Type": {"application/x-www-form-urlencoded"}}
	var ts []loadgen.Target
	for i := range 10 {
		page := 1 + i*(fx.LastPage-1)/9
		ts = append(ts, loadgen.Target{Method: "GET", URL: fmt.Sprintf("%s/api/conversations/%d/messages?page=%d", base, fx.Own, page), Header: user, Expect: ok})
	}
	for i := range 4 {
		ts = append(ts,
			loadgen.Target{Method: "GET", URL: fmt.Sprintf("%s/api/conversation-messages/%d/", base, fx.OwnMessage+int64(i*37)), Header: user, Expect: ok},
			loadgen.Target{Method: "GET", URL: fmt.Sprintf("%s/api/conversations/%d/", base, fx.ExtraOwn+int64(i)), Header: super, Expect: ok},
			loadgen.Target{Method: "GET", URL: fmt.Sprintf("%s/api/conversations/%d/messages", base, fx.ExtraOwn+int64(i+4)), Header: user, Expect: ok},
		)
	}
	for i := range 2 {
		conv := fx.ExtraOwn + int64(8+i)
		ts = append(ts,
			loadgen.Target{Method: "POST", URL: fmt.Sprintf("%s/api/conversations/%d/mark-unread", base, conv), Header: form, Body: []byte{}, Expect: ok},
			loadgen.Target{Method: "POST", URL: fmt.Sprintf("%s/api/conversations/%d/mark-read", base, conv), Header: form, Body: []byte("date=" + strconv.Itoa(1767225600+i)), Expect: ok},
		)
	}
	return ts
}

// statsUncachedTargets are n distinct statistics queries, shuffled: stats-svc caches answers by
// the canonical query, whose server part is the raw parameter, so ranges over the imported days
// times servers written with 0 to 19 leading zeros give keys enough that a run of a few seconds
// never asks the same one twice, and every request reaches the database.
func statsUncachedTargets(base string, fx stack.StatsFixture, n int) []loadgen.Target {
	today := fx.Today()
	day := func(d int) string { return today.AddDate(0, 0, -d).Format("2006-01-02") }
	var ts []loadgen.Target
	for zeros := range 20 {
		for srv := 1; srv <= fx.Servers; srv++ {
			server := strings.Repeat("0", zeros) + strconv.Itoa(srv)
			if len(server) > 20 {
				continue
			}
			for end := 0; end < fx.Days; end++ {
				for length := 1; length <= 31 && end+length <= fx.Days; length++ {
					ts = append(ts, loadgen.Target{Method: "GET", Expect: []int{http.StatusOK},
						URL: fmt.Sprintf("%s/api/chat-statistics?period=range&from=%s&to=%s&server=%s", base, day(end+length-1), day(end), server)})
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
	return ts[:min(n, len(ts))]
}

// statsCSVTargets are CSV exports: the all-servers series of the fixture's days and one
// server's statistics of a week.
func statsCSVTargets(base string, fx stack.StatsFixture) []loadgen.Target {
	today := fx.Today()
	day := func(d int) string { return today.AddDate(0, 0, -d).Format("2006-01-02") }
	return []loadgen.Target{
		{Method: "GET", URL: base + "/api/chat-series?from=" + day(fx.Days-1) + "&to=" + day(0) + "&format=csv", Expect: []int{http.StatusOK}},
		{Method: "GET", URL: base + "/api/chat-statistics?period=week&server=2", Header: http.Header{"Accept": {"text/csv"}}, Expect: []int{http.StatusOK}},
	}
}
