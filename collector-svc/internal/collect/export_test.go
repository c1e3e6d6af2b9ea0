package collect

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/collector-svc/internal/discord"
	"forumstats.local/shared/reports"
)

// Sim is the simulation's Discord (simDiscord), the client over it (cap 50) and an in-memory
// store, for the tests of package collect_test: they may import the reporter of live counts,
// which imports this package.
type Sim struct {
	Discord *simDiscord
	Client  *discord.Client
	// Reports is the store: the catalog holds the servers; Pass sees them with their backfill
	// days (the steady state), through Store.
	Reports *memStore
	Store   Store
}

// NewSim builds a Sim of servers × channels answering after latency. Call it inside the synctest
// bubble, whose clock it starts from.
func NewSim(servers, channels int, latency time.Duration) (*Sim, error) {
	st := newMemStore()
	entries := make([]catalog.Entry, servers)
	for i := range entries {
		entries[i] = catalog.Entry{Number: i + 1, Name: "s" + strconv.Itoa(i), GuildID: strconv.Itoa(100000 + i)}
	}
	if err := st.SyncCatalog(context.Background(), entries); err != nil {
		return nil, err
	}
	sim := newSimDiscord(latency, channels)
	client := discord.New(discord.Config{BaseURL: "http://discord.sim/api/v10", GlobalRate: 50,
		HTTPClient: &http.Client{Transport: sim}})
	return &Sim{Discord: sim, Client: client, Reports: st, Store: noBackfill{st}}, nil
}

// Requests is how many requests reached the simulated Discord, and Limited how many were 429.
func (s *simDiscord) Requests() (requests, limited int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests, s.limited
}

// Stored is the stored report of kind for the guild and period.
func (m *memStore) Stored(kind reports.Kind, guildID, period string) (reports.Row, bool) {
	r, ok := m.report(kind, guildID, period)
	return r.Row, ok
}

// RaceEnabled tells whether the race detector is on (it makes each simulated request some five
// times dearer).
const RaceEnabled = raceEnabled
