package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"forumstats.local/tools/bench"
	"forumstats.local/tools/stack"
)

// benchEnv is the fake Discord, the proxy in front of it, the bench database and the built
// collector-svc that collects into it.
type benchEnv struct {
	bin      string
	dbURL    string
	fakeURL  string // the fake itself: its own endpoints and the plan's channel lists
	proxyURL string // what the collector is told Discord is
	proxy    *recorder
	catalog  string // the CATALOG_FILE the fake wrote
	plan     *plan
	latency  time.Duration // the fake's, before every answer
	http     *http.Client
	bench.Cleanups
}

// setup creates a database (named by o.DB and n), starts the fake with latency and the
// proxy, and reads the plan from the fake unless one is given (every scenario has the same
// dataset).
func setup(ctx context.Context, o options, bin, dir string, n int, latency time.Duration, p *plan) (_ *benchEnv, err error) {
	e := &benchEnv{bin: bin, http: &http.Client{Timeout: 30 * time.Second}, latency: latency}
	defer e.CloseOnError(&err)
	if e.dbURL, err = e.CreateDatabase(ctx, o.Flags, fmt.Sprintf("%s_%d", o.DB, n)); err != nil {
		return nil, err
	}
	e.catalog = filepath.Join(dir, fmt.Sprintf("catalog_%d.json", n))
	if err := e.startFake(o); err != nil {
		return nil, err
	}
	if err := e.startProxy(); err != nil {
		return nil, err
	}
	e.plan = p
	if p == nil {
		e.plan, err = e.readPlan(ctx)
	}
	return e, err
}

// startFake runs `collector-svc fake-discord` with the bench's dataset and limits, no index
// warm-up, and its clock frozen now, so that today's counts cannot move between a pass and the
// verification.
func (e *benchEnv) startFake(o options) error {
	addr, err := stack.FreeAddr()
	if err != nil {
		return err
	}
	p, err := stack.StartProc("fake-discord", e.bin, []string{"LOG_FORMAT=text", "LOG_LEVEL=warn"}, "fake-discord",
		"--addr", addr, "--catalog", e.catalog, "--frozen-at", o.frozenAt.Format(time.RFC3339Nano),
		"--guilds", strconv.Itoa(o.guilds), "--channels", strconv.Itoa(o.channels), "--seed", strconv.FormatInt(o.seed, 10),
		"--rate-limit", strconv.Itoa(o.rate), "--bucket-limit", strconv.Itoa(max(o.bucketLimit, 0)),
		"--search-bucket-limit", strconv.Itoa(max(o.searchBucket, 0)),
		"--latency", e.latency.String(), "--index-warmup", "0")
	if err != nil {
		return err
	}
	e.Add(func() { p.Stop(5 * time.Second) })
	e.fakeURL = "http://" + addr
	// The fake's own endpoint refuses a question without a period: the fake is up.
	return stack.WaitHTTP(e.fakeURL+"/_fake/count", http.StatusBadRequest, 30*time.Second, p)
}

func (e *benchEnv) startProxy() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	rec, err := newRecorder(e.fakeURL)
	if err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{Handler: rec, ConnState: rec.connState, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	e.Add(func() { _ = srv.Close() })
	e.proxy, e.proxyURL = rec, "http://"+ln.Addr().String()
	return nil
}

// plan is the fake's dataset as its /channels lists it, read before the passes straight from
// the fake: what the windows need, found without the collector.
type plan struct {
	guilds []planGuild
}

type planGuild struct {
	id      string
	bearing []planChannel // message-bearing channels (types 0, 2, 5, 13)
}

type planChannel struct {
	id, name string
	created  time.Time // from the snowflake
}

const discordEpochMs = 1420070400000

func (e *benchEnv) readPlan(ctx context.Context) (*plan, error) {
	data, err := os.ReadFile(e.catalog)
	if err != nil {
		return nil, err
	}
	var catalog []struct {
		GuildID string `json:"guildId"`
	}
	if err := json.Unmarshal(data, &catalog); err != nil {
		return nil, fmt.Errorf("the fake's catalog: %w", err)
	}
	// All at once: the fake's latency applies to these too.
	p := &plan{guilds: make([]planGuild, len(catalog))}
	errs := make([]error, len(catalog))
	var wg sync.WaitGroup
	for i, c := range catalog {
		wg.Go(func() { p.guilds[i], errs[i] = e.readGuild(ctx, c.GuildID) })
	}
	wg.Wait()
	return p, errors.Join(errs...)
}

func (e *benchEnv) readGuild(ctx context.Context, guildID string) (planGuild, error) {
	var chans []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
		Type int    `json:"type"`
	}
	if err := e.getFake(ctx, "/api/v10/guilds/"+guildID+"/channels", &chans); err != nil {
		return planGuild{}, fmt.Errorf("channels of %s: %w", guildID, err)
	}
	g := planGuild{id: guildID}
	for _, c := range chans {
		switch c.Type {
		case 0, 2, 5, 13: // text, voice, announcement, stage
		default:
			continue
		}
		v, err := strconv.ParseUint(c.ID, 10, 64)
		if err != nil {
			return planGuild{}, fmt.Errorf("channel id %q", c.ID)
		}
		g.bearing = append(g.bearing, planChannel{id: c.ID, name: c.Name, created: time.UnixMilli(int64(v>>22) + discordEpochMs)})
	}
	return g, nil
}

// getFake GETs path from the fake itself and decodes its JSON answer, waiting out the fake's
// own rate limit.
func (e *benchEnv) getFake(ctx context.Context, path string, out any) error {
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.fakeURL+path, nil)
		if err != nil {
			return err
		}
		resp, err := e.http.Do(req)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode == http.StatusTooManyRequests {
			var rl struct {
				RetryAfter float64 `json:"retry_after"`
			}
			_ = json.Unmarshal(body, &rl)
			time.Sleep(time.Duration(rl.RetryAfter*float64(time.Second)) + time.Millisecond)
			continue
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		return json.Unmarshal(body, out)
	}
}
