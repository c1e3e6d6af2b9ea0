package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// FakeDiscord is `collector-svc fake-discord` run as a process, so that it outlives the
// collectors a test kills, with a client of its own endpoints (/_fake/...): the exact counts, the
// times of the messages, and the gateway's hold and pump.
type FakeDiscord struct {
	*Proc
	Addr    string   // host:port
	URL     string   // http://host:port
	Catalog string   // the CATALOG_FILE it wrote
	Guilds  []string // the catalog's guild ids, by number
	client  *http.Client
}

// StartFakeDiscord runs `bin fake-discord` on a free port with args (--addr and --catalog are
// added; the catalog goes to dir) and waits until it listens.
func StartFakeDiscord(bin, dir string, args ...string) (*FakeDiscord, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	catalog := filepath.Join(dir, "catalog.json")
	p, err := StartProc("fake-discord", bin, []string{"LOG_FORMAT=json", "LOG_LEVEL=warn"},
		append([]string{"fake-discord", "--addr", addr, "--catalog", catalog}, args...)...)
	if err != nil {
		return nil, err
	}
	f := &FakeDiscord{Proc: p, Addr: addr, URL: "http://" + addr, Catalog: catalog, client: &http.Client{Timeout: time.Minute}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-p.Done():
			return nil, fmt.Errorf("fake-discord exited:\n%s", tail(p.Output(), 3000))
		default:
		}
		if time.Now().After(deadline) {
			p.Kill()
			return nil, fmt.Errorf("fake-discord did not listen on %s:\n%s", addr, tail(p.Output(), 3000))
		}
		time.Sleep(20 * time.Millisecond)
	}
	data, err := os.ReadFile(catalog)
	if err != nil {
		p.Kill()
		return nil, fmt.Errorf("fake-discord --catalog: %w", err)
	}
	var entries []struct {
		GuildID string `json:"guildId"`
	}
	if err := json.Unmarshal(data, &entries); err != nil {
		p.Kill()
		return nil, fmt.Errorf("fake-discord --catalog: %w", err)
	}
	for _, e := range entries {
		f.Guilds = append(f.Guilds, e.GuildID)
	}
	return f, nil
}

// APIBase is the DISCORD_API_BASE of a collector that uses the fake.
func (f *FakeDiscord) APIBase() string { return f.URL + "/api/v10" }

// GatewayURL is the fake's gateway websocket (where a client identifies).
func (f *FakeDiscord) GatewayURL() string { return "ws://" + f.Addr + "/gateway" }

func (f *FakeDiscord) do(ctx context.Context, method, path string, q url.Values, want int, v any) error {
	u := f.URL + "/_fake/" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return err
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s /_fake/%s: %w", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("%s /_fake/%s: %d %s", method, path, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			return fmt.Errorf("%s /_fake/%s: %w", method, path, err)
		}
	}
	return nil
}

func window(guildID, channelID string, from, to time.Time) url.Values {
	q := url.Values{"guild_id": {guildID}, "from": {from.UTC().Format(time.RFC3339Nano)}, "to": {to.UTC().Format(time.RFC3339Nano)}}
	if channelID != "" {
		q.Set("channel_id", channelID)
	}
	return q
}

// Count is the exact number of messages of the guild (or of one of its channels) stamped in
// [from, to), deleted ones left out.
func (f *FakeDiscord) Count(ctx context.Context, guildID, channelID string, from, to time.Time) (int64, error) {
	var r struct {
		Count int64 `json:"count"`
	}
	err := f.do(ctx, http.MethodGet, "count", window(guildID, channelID, from, to), http.StatusOK, &r)
	return r.Count, err
}

// Times lists the time of each message of the guild stamped in [from, to), oldest first.
func (f *FakeDiscord) Times(ctx context.Context, guildID string, from, to time.Time) ([]time.Time, error) {
	var r struct {
		Times []int64 `json:"times"`
	}
	if err := f.do(ctx, http.MethodGet, "messages", window(guildID, "", from, to), http.StatusOK, &r); err != nil {
		return nil, err
	}
	out := make([]time.Time, len(r.Times))
	for i, ms := range r.Times {
		out[i] = time.UnixMilli(ms).UTC()
	}
	return out, nil
}

// Hold stops (on) or resumes the gateway's dispatch of the messages the clock passes.
func (f *FakeDiscord) Hold(ctx context.Context, on bool) error {
	return f.do(ctx, http.MethodPost, "gateway/hold", url.Values{"on": {strconv.FormatBool(on)}}, http.StatusNoContent, nil)
}

// Pumped is what Pump dispatched up to: every message stamped before Until is in each session,
// up to its sequence number in Sessions (by session id).
// Began is when each session began (none of its messages is stamped before).
type Pumped struct {
	Until    time.Time            `json:"until"`
	Sessions map[string]int64     `json:"sessions"`
	Began    map[string]time.Time `json:"began"`
}

// BeganTimes lists when the sessions began.
func (p Pumped) BeganTimes() []time.Time {
	out := make([]time.Time, 0, len(p.Began))
	for _, t := range p.Began {
		out = append(out, t)
	}
	return out
}

// Pump dispatches, now, every message the fake's clock has passed, held or not.
func (f *FakeDiscord) Pump(ctx context.Context) (Pumped, error) {
	var p Pumped
	err := f.do(ctx, http.MethodPost, "gateway/pump", nil, http.StatusOK, &p)
	return p, err
}

// GatewayStats are the fake gateway's counters, as much of them as the tests read.
type GatewayStats struct {
	Connections     int64 `json:"connections"`
	Identifies      int64 `json:"identifies"`
	Resumes         int64 `json:"resumes"`
	InvalidSessions int64 `json:"invalid_sessions"`
	Dispatched      int64 `json:"dispatched"`
	Sessions        int   `json:"sessions"`
	Open            int   `json:"open"`
}

// GatewayStats reads the gateway's counters.
func (f *FakeDiscord) GatewayStats(ctx context.Context) (GatewayStats, error) {
	var s GatewayStats
	err := f.do(ctx, http.MethodGet, "gateway/stats", nil, http.StatusOK, &s)
	return s, err
}
