// Package store reads the reports database (never writes it) and composes
// answers from it: it is the uncached source the cache decorates.
package store

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"time"

	"gorm.io/gorm"

	"forumstats.local/shared/db"
	"forumstats.local/shared/reports"
	"forumstats.local/stats-svc/internal/answers"
	"forumstats.local/stats-svc/internal/query"
)

// Store answers statistics and icons requests from the database.
type Store struct {
	db      *gorm.DB
	links   answers.Links
	dialect db.Dialect
	// splits bounds the aggregates running on a second connection: a
	// request holding its first connection never waits for a second one
	// unless it holds a slot, so the pool cannot deadlock.
	splits chan struct{}
	// reads routes the reads to a replica when one is set (RouteReads); nil: all on db.
	reads *db.Reads
}

// RouteReads sends the reads to r's replica (while it answers; to the primary otherwise).
// Call it before the first read.
func (s *Store) RouteReads(r *db.Reads) { s.reads = r }

// New returns a Store over a migrated reports database.
func New(gdb *gorm.DB, links answers.Links) *Store {
	// Fewer slots than connections: some request without a slot can always
	// finish and free its connection.
	slots := 4
	if sqlDB, err := gdb.DB(); err == nil {
		if n := sqlDB.Stats().MaxOpenConnections; n > 0 {
			slots = min(slots, n-1)
		}
	}
	return &Store{db: gdb, links: links, dialect: db.DialectOf(gdb), splits: make(chan struct{}, max(slots, 0))}
}

// Generation returns the current data generation.
func (s *Store) Generation(ctx context.Context) (int64, error) {
	// From where the data comes: a generation newer than the data read would cache old data
	// under it.
	gen, err := db.ReadValue(ctx, s.reads, s.db, db.NoKey, func(gdb *gorm.DB) (int64, error) {
		return reports.Generation(ctx, gdb)
	})
	return gen, unavailable(err)
}

// unavailable marks an error that means the database could not be reached (refused, dropped or
// timed-out connection, server shutting down: db.IsConnectionError) as
// answers.ErrDatabaseUnavailable, so that the cache may answer from its stale copies and the
// client gets 503, never 500; any other error (a statement's) stays as it is.
func unavailable(err error) error {
	if err == nil || !db.IsConnectionError(err) {
		return err
	}
	return fmt.Errorf("%w: %w", answers.ErrDatabaseUnavailable, err)
}

// Statistics composes the statistics answer for q at the moment now.
func (s *Store) Statistics(ctx context.Context, q query.Query, now time.Time) (answers.Answer, error) {
	return s.answer(ctx, q.Server, func(v view, st reports.ReaderState, servers []answers.Server, guild string) (answers.Answer, error) {
		data := answers.Data{RefreshMinutes: st.RefreshMinutes, Servers: servers}
		if len(servers) > 0 {
			var err error
			if q.Composite() {
				err = s.loadDays(ctx, v, &data, guild, q)
			} else {
				err = loadMonth(v, &data, guild, q.Month.String())
			}
			if err != nil {
				return answers.Answer{}, err
			}
		}
		return answers.Statistics(q, now, data, s.links)
	})
}

// Catalog reads the catalog's numbers and guild ids, and the generation they belong to, in one
// consistent view.
func (s *Store) Catalog(ctx context.Context) (answers.Catalog, error) {
	var out answers.Catalog
	err := s.read(ctx, func(v view) error {
		st, err := reports.ReadState(v.tx)
		if err != nil {
			return err
		}
		var entries []answers.CatalogEntry
		if err := v.tx.Raw("SELECT number, guild_id FROM catalog_servers").Scan(&entries).Error; err != nil {
			return fmt.Errorf("read catalog: %w", err)
		}
		out = answers.NewCatalog(st.Generation, entries)
		return nil
	})
	return out, err
}

// Icons composes the icons answer for one server, or all when server is "".
func (s *Store) Icons(ctx context.Context, server string) (answers.Answer, error) {
	return s.answer(ctx, server, func(_ view, _ reports.ReaderState, servers []answers.Server, _ string) (answers.Answer, error) {
		return answers.Icons(servers, server != "", s.links)
	})
}

// answer reads, in one consistent view, the collector state and the servers that server names
// ("" = the catalog), then composes the answer with compose, which may read more; guild is the
// one server's guild id, "" for all (all servers need no filter: rows of servers that left the
// catalog are few, and the composers ignore them). The answer carries the generation read.
func (s *Store) answer(ctx context.Context, server string,
	compose func(v view, st reports.ReaderState, servers []answers.Server, guild string) (answers.Answer, error)) (answers.Answer, error) {
	var out answers.Answer
	err := s.read(ctx, func(v view) error {
		st, err := reports.ReadState(v.tx)
		if err != nil {
			return err
		}
		servers, err := s.loadServers(v.tx, server)
		if err != nil {
			return err
		}
		var guild string
		if server != "" {
			guild = servers[0].GuildID // loadServers found exactly one
		}
		out, err = compose(v, st, servers, guild)
		out.Generation = st.Generation
		return err
	})
	return out, err
}

// view is one consistent read: tx, and under it, where the driver is pgx, the connection the
// big scans decode raw (pgscan.go).
type view struct {
	tx   *gorm.DB
	conn *sql.Conn // nil: every scan through database/sql
	// pool is the database tx runs on (the replica or the primary): a second connection of it
	// (loadDays) must come from the same server as the snapshot it imports.
	pool *gorm.DB
}

// read runs fn on one consistent view. With snapshot reads (PostgreSQL) that
// is a read-only repeatable-read transaction, so the generation read first
// names exactly the data read after it. SQLite (one connection, BEGIN
// IMMEDIATE per the shared DSN, which would block the collector) reads
// without one: the generation is still read first, so the data is never older
// than the generation it is cached under.
func (s *Store) read(ctx context.Context, fn func(v view) error) error {
	return unavailable(db.ReadOn(ctx, s.reads, s.db, db.NoKey, func(gdb *gorm.DB) error {
		if !s.dialect.SnapshotReads {
			return fn(view{tx: gdb.WithContext(ctx), pool: gdb})
		}
		return s.snapshot(ctx, gdb, "", fn)
	}))
}

// snapshot runs fn in a read-only repeatable-read transaction on one connection of pool,
// importing the exported snapshot snap unless it is "".
func (s *Store) snapshot(ctx context.Context, pool *gorm.DB, snap string, fn func(v view) error) error {
	return pool.WithContext(ctx).Connection(func(c *gorm.DB) error {
		conn, _ := c.Statement.ConnPool.(*sql.Conn)
		return c.Transaction(func(tx *gorm.DB) error {
			if snap != "" {
				// Must be the transaction's first statement; the caller checked the id.
				if err := tx.Exec("SET TRANSACTION SNAPSHOT '" + snap + "'").Error; err != nil {
					return fmt.Errorf("import snapshot: %w", err)
				}
			}
			if err := tx.Exec(workMem).Error; err != nil {
				return err
			}
			v := view{tx: tx, pool: pool}
			if s.dialect.NativeConn {
				v.conn = conn
			}
			return fn(v)
		}, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	})
}

// workMem lets the channel aggregate hash in memory: with the default 4 MB
// the planner, misjudging the number of groups, sorts 155k rows on disk.
const workMem = "SET LOCAL work_mem = '64MB'"

type serverRow struct {
	Number      int
	Name        string
	GuildID     string
	Icon        *string
	Banner      *string
	BannerKnown *bool
}

const serversSQL = `SELECT c.number, c.name, c.guild_id, g.icon, g.banner, g.banner_known
FROM catalog_servers c LEFT JOIN guilds g ON g.guild_id = c.guild_id`

// loadServers returns the catalog ordered by number, or the one server the
// parameter names: an exact guildId match first, else the catalog number.
func (s *Store) loadServers(tx *gorm.DB, server string) ([]answers.Server, error) {
	var rows []serverRow
	var err error
	switch n, isNumber := query.ServerNumber(server); {
	case server == "":
		err = tx.Raw(serversSQL + " ORDER BY c.number").Scan(&rows).Error
	case isNumber:
		err = tx.Raw(serversSQL+" WHERE c.guild_id = ? OR c.number = ?", server, n).Scan(&rows).Error
	default:
		err = tx.Raw(serversSQL+" WHERE c.guild_id = ?", server).Scan(&rows).Error
	}
	if err != nil {
		return nil, fmt.Errorf("read catalog: %w", err)
	}
	if server != "" {
		// Both a guildId and a number may match (different servers): the catalog's rule picks.
		entries := make([]answers.CatalogEntry, len(rows))
		for i, r := range rows {
			entries[i] = answers.CatalogEntry{Number: r.Number, GuildID: r.GuildID}
		}
		guild, ok := answers.NewCatalog(0, entries).Resolve(server)
		if !ok {
			return nil, answers.ErrServerNotFound
		}
		for _, r := range rows {
			if r.GuildID == guild {
				rows = []serverRow{r}
				break
			}
		}
	}
	out := make([]answers.Server, len(rows))
	for i, r := range rows {
		out[i] = answers.Server{Number: r.Number, Name: r.Name, GuildID: r.GuildID, Icon: r.Icon, Banner: r.Banner,
			BannerKnown: r.BannerKnown != nil && *r.BannerKnown}
	}
	return out, nil
}

// reportsSQL selects the reports of kind whose period matches cond.
func reportsSQL(kind reports.Kind, cond string) string {
	t := kind.Tables()
	return "SELECT " + kind.ReportColumns() + " FROM " + t.Reports + " WHERE " + t.Period + " " + cond
}

// loadMonth reads the monthly reports of month and their channels, by the
// (month, guild_id) indexes (or the primary keys for one server).
func loadMonth(v view, data *answers.Data, guild, month string) error {
	filter, args := guildFilter(guild, month)
	reps, err := v.reports(len(data.Servers), reportsSQL(reports.KindMonth, "= ?")+filter, args...)
	if err != nil {
		return fmt.Errorf("read monthly reports: %w", err)
	}
	chans, err := v.channels(len(data.Servers)*channelsPerServer, `SELECT guild_id, channel_id, name, messages
FROM `+reports.KindMonth.Tables().Channels+` WHERE month = ?`+filter, args...)
	if err != nil {
		return fmt.Errorf("read monthly channels: %w", err)
	}
	data.Reports, data.Channels = reps, chans
	return nil
}

// channelsPerServer sizes the channel rows' slice before the scan (tens of channels a server is
// typical); growing it row by row cost more than the scan itself.
const channelsPerServer = 64

// loadDays reads the daily reports of from..to (at most 31 per server, small
// rows) and the channel sums, aggregated in the database: an all-servers
// range is up to 155k channel rows that must not travel to Go.
func (s *Store) loadDays(ctx context.Context, v view, data *answers.Data, guild string, q query.Query) error {
	var other chan partResult
	from, to := q.From, q.To
	days := from.DaysUntil(to) + 1
	if s.dialect.ExportSnapshot && guild == "" && days >= splitDays && s.trySplit() {
		defer func() { <-s.splits }()
		// A long all-servers range is aggregated in two halves at once, on
		// two connections sharing this transaction's snapshot, so that the
		// answer stays consistent with the generation read above.
		var snap string
		if err := v.tx.Raw("SELECT pg_export_snapshot()").Scan(&snap).Error; err != nil {
			return fmt.Errorf("export snapshot: %w", err)
		}
		if !snapshotID.MatchString(snap) {
			return fmt.Errorf("export snapshot: unexpected id %q", snap)
		}
		// This connection also reads the daily reports: it takes the shorter half.
		mid := from.AddDays(days/2 - 1)
		secondFrom, secondTo := mid.AddDays(1).String(), to.String()
		other = make(chan partResult, 1)
		go func() {
			var r partResult
			r.err = s.snapshot(ctx, v.pool, snap, func(v2 view) error {
				r.rows, r.err = s.channelSums(v2, len(data.Servers), guild, secondFrom, secondTo)
				return r.err
			})
			other <- r
		}()
		to = mid
	}

	filter, args := guildFilter(guild, q.From.String(), q.To.String())
	reps, err := v.reports(len(data.Servers)*days, reportsSQL(reports.KindDay, "BETWEEN ? AND ?")+filter, args...)
	if err != nil {
		err = fmt.Errorf("read daily reports: %w", err)
	}
	var chans []answers.Channel
	if err == nil {
		chans, err = s.channelSums(v, len(data.Servers), guild, from.String(), to.String())
	}
	if other != nil {
		r := <-other // always waited for: the exported snapshot lives as long as tx
		if err == nil && r.err != nil {
			err = r.err
		}
		chans = mergeChannels(chans, r.rows)
	}
	if err != nil {
		return err
	}
	for i := range chans {
		if len(chans[i].Name) >= len("YYYY-MM-DD") {
			chans[i].Name = chans[i].Name[len("YYYY-MM-DD"):]
		}
	}
	data.Reports, data.Channels = reps, chans
	return nil
}

// splitDays is the shortest range aggregated in two parallel halves.
const splitDays = 8

func (s *Store) trySplit() bool {
	select {
	case s.splits <- struct{}{}:
		return true
	default:
		return false // busy: aggregate on this connection alone
	}
}

var snapshotID = regexp.MustCompile(`^[0-9A-Fa-f-]+$`)

type partResult struct {
	rows []answers.Channel
	err  error
}

// channelSums sums each channel over from..to. Name is MAX(day || name): the
// name of the newest day, days being fixed-width text (the caller strips the
// day), compared in byte order whatever the database collation (cheaper, and
// the day prefix decides). The covering index (day, guild_id, channel_id,
// messages, name) makes it an index-only scan.
func (s *Store) channelSums(v view, servers int, guild, from, to string) ([]answers.Channel, error) {
	filter, args := guildFilter(guild, from, to)
	chans, err := v.channels(servers*channelsPerServer, `SELECT guild_id, channel_id, MAX((day || name)`+s.dialect.ByteOrderCollation+`), CAST(SUM(messages) AS BIGINT)
FROM `+reports.KindDay.Tables().Channels+` WHERE day BETWEEN ? AND ?`+filter+`
GROUP BY guild_id, channel_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("read daily channels: %w", err)
	}
	return chans, nil
}

// guildFilter restricts a query to one server ("" = all) after its own args.
func guildFilter(guild string, args ...any) (string, []any) {
	if guild == "" {
		return "", args
	}
	return " AND guild_id = ?", append(args, guild)
}

// reports reads report rows (ReportColumns' order), capacity of them expected.
func (v view) reports(capacity int, query string, args ...any) ([]reports.Row, error) {
	if v.conn != nil {
		return rawReports(v, capacity, query, args)
	}
	return scanAll(v.tx.Raw(query, args...), capacity, func(rows *sql.Rows, r *reports.Row) error {
		return rows.Scan(&r.GuildID, &r.Period, &r.GeneratedAt, &r.Status, &r.ErrorCode, &r.ErrorMessage, &r.TotalMessages)
	})
}

// channels reads channel rows (guild, id, name, messages), capacity of them expected.
func (v view) channels(capacity int, query string, args ...any) ([]answers.Channel, error) {
	if v.conn != nil {
		return rawChannels(v, capacity, query, args)
	}
	return scanAll(v.tx.Raw(query, args...), capacity, func(rows *sql.Rows, r *answers.Channel) error {
		return rows.Scan(&r.GuildID, &r.ID, &r.Name, &r.Messages)
	})
}

// scanAll runs a query and scans each row with scan into a slice made for
// capacity rows: the hot queries return thousands of rows, for which GORM's
// reflective Scan costs several ms.
func scanAll[T any](q *gorm.DB, capacity int, scan func(*sql.Rows, *T) error) ([]T, error) {
	rows, err := q.Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]T, 0, capacity)
	for rows.Next() {
		var r T
		if err := scan(rows, &r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// mergeChannels adds the sums of b into a; names still carry their day.
func mergeChannels(a, b []answers.Channel) []answers.Channel {
	type key struct{ guild, id string }
	at := make(map[key]int, len(a))
	for i, r := range a {
		at[key{r.GuildID, r.ID}] = i
	}
	for _, r := range b {
		i, ok := at[key{r.GuildID, r.ID}]
		if !ok {
			a = append(a, r)
			continue
		}
		a[i].Messages += r.Messages
		if r.Name > a[i].Name {
			a[i].Name = r.Name
		}
	}
	return a
}
