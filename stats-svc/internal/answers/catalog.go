package answers

import "forumstats.local/stats-svc/internal/query"

// Catalog is who the catalog's servers are, as of a data generation: enough to tell which guild
// a server parameter names without reading the reports.
type Catalog struct {
	// Generation is the data generation the catalog was read at.
	Generation int64
	guilds     map[string]bool
	numbers    map[int]string // catalog number → guild id
}

// CatalogEntry is one catalog server: its number and guild id.
type CatalogEntry struct {
	Number  int
	GuildID string
}

// NewCatalog indexes the entries read at generation gen.
func NewCatalog(gen int64, entries []CatalogEntry) Catalog {
	c := Catalog{Generation: gen, guilds: make(map[string]bool, len(entries)), numbers: make(map[int]string, len(entries))}
	for _, e := range entries {
		c.guilds[e.GuildID] = true
		c.numbers[e.Number] = e.GuildID
	}
	return c
}

// Resolve returns the guild id of the server a well-formed server parameter names: a guild id
// that matches exactly wins, else the parameter is read as a catalog number, leading zeros
// allowed (so "2", "02" and server 2's guild id name one server). ok is false when it names none.
func (c Catalog) Resolve(server string) (guild string, ok bool) {
	if c.guilds[server] {
		return server, true
	}
	if n, isNumber := query.ServerNumber(server); isNumber {
		guild, ok = c.numbers[n]
	}
	return guild, ok
}
