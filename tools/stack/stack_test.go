package stack

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestFaultProxy(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok "+r.URL.Path)
	}))
	defer backend.Close()
	p, err := NewFaultProxy(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	get := func(client *http.Client) (int, string) {
		resp, err := client.Get(p.URL() + "/guilds/1")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, body := get(http.DefaultClient); st != 200 || body != "ok /guilds/1" {
		t.Fatalf("forwarding: %d %q", st, body)
	}

	// Bursts: requests 1..3 of every 5 (counted from the proxy's start) answer 502.
	p2, _ := NewFaultProxy(backend.URL)
	defer p2.Close()
	p2.Set(Faults{BurstEvery: 5, BurstLen: 3, BurstStatus: 502})
	var got []int
	for range 10 {
		resp, err := http.Get(p2.URL() + "/x")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got = append(got, resp.StatusCode)
	}
	want := []int{502, 502, 502, 200, 200, 502, 502, 502, 200, 200}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("burst pattern %v, want %v", got, want)
		}
	}
	if n, inj, _ := p2.Counts(); n != 10 || inj != 6 {
		t.Fatalf("counts %d %d", n, inj)
	}

	p.Set(Faults{Down: true})
	if st, _ := get(http.DefaultClient); st != http.StatusServiceUnavailable {
		t.Fatalf("down: %d", st)
	}

	p.Set(Faults{Latency: 100 * time.Millisecond})
	start := time.Now()
	if st, _ := get(http.DefaultClient); st != 200 || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("latency: %d after %v", st, time.Since(start))
	}

	n, _, _ := p.Counts()
	p.Set(Faults{HangNth: n + 1})
	quick := &http.Client{Timeout: 200 * time.Millisecond}
	if st, body := get(quick); st != 0 || !strings.Contains(body, "Timeout") {
		t.Fatalf("hang: %d %q, want a client timeout", st, body)
	}
	if st, _ := get(quick); st != 200 {
		t.Fatalf("after the hung request: %d", st)
	}
	if _, _, hung := p.Counts(); hung != 1 {
		t.Fatalf("hung %d", hung)
	}
}

func TestForumFixtureSeed(t *testing.T) {
	fx := NewForumFixture(45, 20)
	if fx.LastPage != 3 {
		t.Errorf("last page %d, want 3", fx.LastPage)
	}
	seen := map[string]bool{}
	for _, k := range fx.Keys() {
		if len(k) < 32 || seen[k] {
			t.Errorf("key %q too short or repeated", k)
		}
		seen[k] = true
	}
	data, err := fx.SeedJSON()
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Options       map[string]int   `json:"options"`
		Users         []map[string]any `json:"users"`
		Conversations []struct {
			ConversationID int64            `json:"conversation_id"`
			Messages       []map[string]any `json:"messages"`
		} `json:"conversations"`
		APIKeys []map[string]any `json:"api_keys"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if f.Options["messagesPerPage"] != 20 || len(f.Users) != fx.Users || len(f.APIKeys) != len(fx.Keys()) {
		t.Errorf("seed: %v options, %d users, %d keys", f.Options, len(f.Users), len(f.APIKeys))
	}
	if len(f.Conversations) != 2+fx.ExtraConvs || f.Conversations[0].ConversationID != fx.Own || len(f.Conversations[0].Messages) != 45 {
		t.Errorf("seed conversations wrong: %d", len(f.Conversations))
	}
}

func TestStatsFixtureImport(t *testing.T) {
	now := time.Date(2026, 3, 1, 22, 30, 0, 0, time.UTC) // already 2 March in Moscow
	fx := StatsFixture{Servers: 3, Channels: 2, Days: 5, Now: now}
	if got := fx.Today().Format("2006-01-02"); got != "2026-03-02" {
		t.Fatalf("today %s, want 2026-03-02", got)
	}
	data, err := fx.ImportJSON()
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Catalog []map[string]any `json:"catalog"`
		Daily   []struct {
			Date          string `json:"date"`
			TotalMessages int64  `json:"totalMessages"`
			Channels      []struct {
				Messages int64 `json:"messages"`
			} `json:"channels"`
		} `json:"daily"`
		Monthly []struct {
			Month string `json:"month"`
		} `json:"monthly"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Catalog) != 3 || len(f.Daily) != 15 || len(f.Monthly) != 6 {
		t.Fatalf("%d servers, %d daily, %d monthly", len(f.Catalog), len(f.Daily), len(f.Monthly))
	}
	if f.Daily[0].Date != "2026-03-02" || f.Daily[4].Date != "2026-02-26" || f.Monthly[1].Month != "2026-02" {
		t.Errorf("dates %s %s %s", f.Daily[0].Date, f.Daily[4].Date, f.Monthly[1].Month)
	}
	for _, d := range f.Daily {
		var sum int64
		for _, c := range d.Channels {
			sum += c.Messages
		}
		if d.TotalMessages < sum {
			t.Errorf("%s: total %d below the channels' sum %d", d.Date, d.TotalMessages, sum)
		}
	}
}

func TestRunAndProc(t *testing.T) {
	out, err := Run(context.Background(), 5*time.Second, "sh", []string{"X=1"}, "-c", "echo $X; echo err >&2")
	if err != nil || !strings.Contains(out, "1") || !strings.Contains(out, "err") {
		t.Fatalf("Run: %q %v", out, err)
	}
	if _, err := Run(context.Background(), 100*time.Millisecond, "sleep", nil, "5"); err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("Run timeout: %v", err)
	}
	p, err := StartProc("sleeper", "sh", nil, "-c", "echo started; exec sleep 30")
	if err != nil {
		t.Fatal(err)
	}
	if _, done := p.Wait(100 * time.Millisecond); done {
		t.Fatal("exited early")
	}
	p.Stop(2 * time.Second)
	if _, done := p.Wait(time.Second); !done || !strings.Contains(p.Output(), "started") {
		t.Fatalf("Stop: done %v output %q", done, p.Output())
	}
}
