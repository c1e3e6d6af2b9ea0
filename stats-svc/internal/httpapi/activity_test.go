package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

const activityPath = "/api/chat-activity"

type activityAnswer struct {
	From, To, TZ string
	Server       *struct {
		Number  int
		Name    string
		GuildID string
	}
	GeneratedAt string
	Hours       []struct {
		Start    string
		Total    int64
		Status   string
		Channels *[]struct {
			ID       string
			Name     string
			Messages int64
		}
	}
}

func getActivity(t *testing.T, s *stack, target string) activityAnswer {
	t.Helper()
	r := do(t, "GET", s.url+target)
	if r.status != http.StatusOK {
		t.Fatalf("%s: %d %s", target, r.status, r.body)
	}
	var a activityAnswer
	if err := json.Unmarshal([]byte(r.body), &a); err != nil {
		t.Fatal(err)
	}
	return a
}

// The hours of New York's longest day, from the live counts: a status per hour, the worst of the
// servers' (Gamma was never counted: every all-servers hour is missing), servers outside the
// catalog never counted in; one server's channels per hour.
func TestActivity(t *testing.T) {
	s := newStack(t, pgDB(t), stackOptions{})
	a := getActivity(t, s, activityPath+"?from=2026-11-01&to=2026-11-01&tz=America/New_York")
	if a.From != "2026-11-01" || a.TZ != "America/New_York" || a.Server != nil || a.GeneratedAt != "2026-11-20T10:00:00Z" || len(a.Hours) != 25 {
		t.Fatalf("answer %+v", a)
	}
	for i, want := range []struct {
		start  string
		total  int64
		status string
	}{
		{"2026-11-01T00:00:00-04:00", 3, "missing"}, {"2026-11-01T01:00:00-04:00", 0, "missing"},
		{"2026-11-01T01:00:00-05:00", 14, "missing"}, {"2026-11-01T02:00:00-05:00", 20, "missing"},
	} {
		if h := a.Hours[i]; h.Start != want.start || h.Total != want.total || h.Status != want.status || h.Channels != nil {
			t.Errorf("hour %d: %+v, want %+v", i, h, want)
		}
	}
	if h := a.Hours[24]; h.Start != "2026-11-01T23:00:00-05:00" || h.Total != 6 {
		t.Errorf("last hour %+v", h)
	}

	one := getActivity(t, s, activityPath+"/?from=2026-11-01&to=2026-11-01&tz=America/New_York&server=81384788765712384")
	if one.Server == nil || one.Server.Number != 1 || one.Hours[0].Status != "ok" || one.Hours[0].Total != 3 {
		t.Fatalf("one server %+v", one)
	}
	body, _ := json.Marshal(one.Hours[0].Channels)
	if string(body) != `[{"ID":"10","Name":"general","Messages":2},{"ID":"12","Name":"=new-name","Messages":1}]` {
		t.Errorf("channels of the first hour %s", body)
	}
	if c := *one.Hours[1].Channels; len(c) != 0 {
		t.Errorf("an hour without messages lists %v", c)
	}

	// Moscow by default: 2026-11-10 13:00 is Alpha's unfilled gap, 15:00 a filled one.
	msk := getActivity(t, s, activityPath+"?from=2026-11-10&to=2026-11-10&server="+alphaID)
	if msk.TZ != "Europe/Moscow" || len(msk.Hours) != 24 {
		t.Fatalf("Moscow %+v", msk)
	}
	for i, want := range map[int]string{12: "ok", 13: "gap", 14: "ok", 15: "ok"} {
		if h := msk.Hours[i]; h.Status != want {
			t.Errorf("Moscow hour %d: %+v, want %s", i, h, want)
		}
	}
	if h := msk.Hours[15]; h.Start != "2026-11-10T15:00:00+03:00" || h.Total != 9 {
		t.Errorf("the filled gap's hour %+v", h)
	}
}

// A series in another zone is composed from the live counts, a day ok only when all its hours
// are, and its channels as the reports' (0 on a known day without messages).
func TestSeriesInZone(t *testing.T) {
	s := newStack(t, pgDB(t), stackOptions{})
	r := do(t, "GET", s.url+seriesPath+"?from=2026-11-01&to=2026-11-02&server="+alphaID+"&tz=America/New_York")
	want := `{"from":"2026-11-01","to":"2026-11-02","timezone":"America/New_York","refreshMinutes":10,"days":["2026-11-01","2026-11-02"],` +
		`"servers":[{"number":1,"name":"Alpha","guildId":"81384788765712384","totals":[13,7],"statuses":["ok","ok"],` +
		`"channels":[{"id":"10","name":"general","totals":[9,0]},{"id":"12","name":"=new-name","totals":[2,7]}]}]}`
	if r.status != 200 || r.body != want {
		t.Fatalf("%d\n got %s\nwant %s", r.status, r.body, want)
	}
	r = do(t, "GET", s.url+seriesPath+"?from=2026-11-01&to=2026-11-02&tz=America/New_York")
	if !strings.Contains(r.body, `"guildId":"222222222222222222","totals":[null,0],"statuses":["missing","ok"]`) ||
		!strings.Contains(r.body, `"guildId":"1","totals":[null,null],"statuses":["missing","missing"]`) {
		t.Errorf("all servers %s", r.body)
	}
	// Moscow named is the reports' series, byte for byte.
	a, b := do(t, "GET", s.url+seriesPath+"?from=2026-11-14&to=2026-11-20"), do(t, "GET", s.url+seriesPath+"?from=2026-11-14&to=2026-11-20&tz=Europe/Moscow")
	if a.status != 200 || a.body != b.body || a.header.Get("ETag") != b.header.Get("ETag") {
		t.Errorf("Moscow named:\n%s\n%s", a.body, b.body)
	}
}

func TestActivityErrors(t *testing.T) {
	s := newStack(t, pgDB(t), stackOptions{})
	for _, c := range []struct {
		target string
		status int
		code   string
	}{
		{activityPath, 400, "invalid_range"},
		{activityPath + "?from=2026-10-01&to=2026-11-01", 400, "invalid_range"},
		{activityPath + "?from=2026-11-01&to=2026-11-01&tz=Asia/Kolkata", 400, "invalid_parameters"},
		{activityPath + "?from=2026-11-01&to=2026-11-01&tz=Australia/Adelaide", 400, "invalid_parameters"},
		{activityPath + "?from=2026-11-01&to=2026-11-01&tz=Nowhere/Land", 400, "invalid_parameters"},
		{activityPath + "?from=2026-11-01&to=2026-11-01&tz=..%2F..%2Fetc%2Fpasswd", 400, "invalid_parameters"},
		{activityPath + "?from=2026-11-01&to=2026-11-01&tz=" + strings.Repeat("A", 100), 400, "invalid_parameters"},
		{activityPath + "?from=2026-11-01&to=2026-11-01&tz=UTC&tz=UTC", 400, "invalid_parameters"},
		{activityPath + "?from=2026-11-01&to=2026-11-01&format=xml", 400, "invalid_parameters"},
		{activityPath + "?from=2026-11-01&to=2026-11-01&server=x", 400, "invalid_server"},
		{activityPath + "?from=2026-11-01&to=2026-11-01&server=9", 404, "server_not_found"},
		{seriesPath + "?from=2026-11-01&to=2026-11-01&tz=Asia/Kathmandu", 400, "invalid_parameters"},
		{seriesPath + "?from=2026-11-01&to=2026-11-01&tz=Local", 400, "invalid_parameters"},
	} {
		r := do(t, "GET", s.url+c.target)
		if r.status != c.status || r.body != `{"error":"`+c.code+`"}` {
			t.Errorf("%s: %d %s, want %d %s", c.target, r.status, r.body, c.status, c.code)
		}
	}
	if r := do(t, "POST", s.url+activityPath+"?from=2026-11-01&to=2026-11-01"); r.status != 405 || r.header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d %v", r.status, r.header)
	}
}

// Conditional GET and CSV as for the other operations.
func TestActivity304AndCSV(t *testing.T) {
	s := newStack(t, pgDB(t), stackOptions{})
	target := s.url + activityPath + "?from=2026-11-01&to=2026-11-02&server=" + alphaID + "&tz=UTC"
	r := do(t, "GET", target)
	tag := r.header.Get("ETag")
	if r.status != 200 || tag == "" || r.header.Get("Cache-Control") == "" {
		t.Fatalf("%d %v", r.status, r.header)
	}
	if r := doWith(t, "GET", target, map[string]string{"If-None-Match": tag}); r.status != 304 || r.body != "" {
		t.Errorf("If-None-Match: %d %s", r.status, r.body)
	}
	r = do(t, "GET", target+"&format=csv")
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/csv") ||
		r.header.Get("Content-Disposition") != `attachment; filename="chat-activity-1-2026-11-01-2026-11-02.csv"` {
		t.Fatalf("csv %d %v", r.status, r.header)
	}
	lines := strings.Split(strings.TrimSuffix(r.body, "\r\n"), "\r\n")
	if len(lines) != 49 || lines[0] != `start,messages,status,general (10),'=new-name (12)` || lines[5] != "2026-11-01T04:00:00Z,3,ok,2,1" {
		t.Errorf("csv %d lines:\n%s", len(lines), strings.Join(lines[:6], "\n"))
	}
}
