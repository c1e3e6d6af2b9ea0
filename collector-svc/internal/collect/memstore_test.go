package collect

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"forumstats.local/collector-svc/internal/catalog"
	"forumstats.local/shared/reports"
)

// memStore is the Store of the tests: the reports database's rules (a report written whole, a
// stale mark that keeps the counts and leaves a missing report missing) over maps.
type memStore struct {
	mu       sync.Mutex
	catalog  []catalog.Entry
	guilds   map[string]reports.Guild
	reports  map[reportKey]memReport
	state    reports.CollectorState
	stale    []reportKey // every MarkStale call that found its report, in order
	saveFail func(kind reports.Kind, r reports.Row) error
}

type reportKey struct {
	kind            reports.Kind
	guildID, period string
}

// memReport is a stored report: its row and its channels by id.
type memReport struct {
	reports.Row
	channels map[string]reports.ChannelRow
}

func newMemStore() *memStore {
	return &memStore{
		guilds:  map[string]reports.Guild{},
		reports: map[reportKey]memReport{},
		state:   reports.CollectorState{ID: 1, RefreshMinutes: 10},
	}
}

func (m *memStore) RecordPassStart(_ context.Context, start time.Time, refreshMinutes int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state.PassStartedAt, m.state.RefreshMinutes = &start, refreshMinutes
	return nil
}

func (m *memStore) RecordPassEnd(_ context.Context, finish time.Time, passErr error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.state.PassFinishedAt = &finish
	if passErr == nil {
		m.state.LastGoodPassAt, m.state.LastError = &finish, nil
		return nil
	}
	msg := passErr.Error()
	m.state.LastError = &msg
	return nil
}

func (m *memStore) State(context.Context) (reports.CollectorState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state, nil
}

func (m *memStore) SyncCatalog(_ context.Context, entries []catalog.Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.catalog = slices.Clone(entries)
	slices.SortFunc(m.catalog, func(a, b catalog.Entry) int { return cmp.Compare(a.Number, b.Number) })
	return nil
}

func (m *memStore) Catalog(context.Context) ([]catalog.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.catalog), nil
}

func (m *memStore) SaveGuild(_ context.Context, guildID string, icon, banner *string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.guilds[guildID] = reports.Guild{GuildID: guildID, Icon: icon, Banner: banner, BannerKnown: true, MetadataAt: &at}
	return nil
}

func (m *memStore) MissingDays(_ context.Context, guildID string, days []string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var missing []string
	for _, d := range days {
		if _, ok := m.reports[reportKey{reports.KindDay, guildID, d}]; !ok {
			missing = append(missing, d)
		}
	}
	return missing, nil
}

func (m *memStore) SaveReport(_ context.Context, kind reports.Kind, r reports.Row, channels []reports.ChannelRow) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.saveFail != nil {
		if err := m.saveFail(kind, r); err != nil {
			return err
		}
	}
	rep := memReport{Row: r, channels: map[string]reports.ChannelRow{}}
	for _, c := range channels {
		rep.channels[c.ChannelID] = c
	}
	m.reports[reportKey{kind, r.GuildID, r.Period}] = rep
	return nil
}

func (m *memStore) Report(_ context.Context, kind reports.Kind, guildID, period string) (reports.Row, []reports.ChannelRow, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rep, ok := m.reports[reportKey{kind, guildID, period}]
	if !ok {
		return reports.Row{}, nil, false, nil
	}
	channels := make([]reports.ChannelRow, 0, len(rep.channels))
	for _, c := range rep.channels {
		channels = append(channels, c)
	}
	slices.SortFunc(channels, func(a, b reports.ChannelRow) int { return cmp.Compare(a.ChannelID, b.ChannelID) })
	return rep.Row, channels, true, nil
}

func (m *memStore) MarkStale(_ context.Context, kind reports.Kind, guildID, period, code, message string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := reportKey{kind, guildID, period}
	rep, ok := m.reports[key]
	if !ok {
		return false, nil
	}
	rep.Status, rep.ErrorCode, rep.ErrorMessage = reports.StatusStale, &code, &message
	m.reports[key] = rep
	m.stale = append(m.stale, key)
	return true, nil
}

// report returns the stored report of kind for the guild and period.
func (m *memStore) report(kind reports.Kind, guildID, period string) (memReport, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.reports[reportKey{kind, guildID, period}]
	return r, ok
}

// count is how many reports are stored with status.
func (m *memStore) count(status string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, r := range m.reports {
		if r.Status == status {
			n++
		}
	}
	return n
}

func (m *memStore) guild(id string) (reports.Guild, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.guilds[id]
	return g, ok
}
