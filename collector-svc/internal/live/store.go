package live

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"forumstats.local/collector-svc/internal/discord"
)

// batchSize bounds the rows of one INSERT: a few thousand bind parameters, well under the
// limits of both PostgreSQL (65535) and SQLite (32766).
const batchSize = 500

// ErrCheckpointMoved is returned by Flush when the stored checkpoint is not the one the batch
// follows: another process flushed the shard, or the batches are out of order. Nothing is
// written.
var ErrCheckpointMoved = errors.New("the stored checkpoint is not the one the batch follows")

// Store keeps live counts in the reports database (shared/reports, tables live_*).
type Store struct{ db *gorm.DB }

// NewStore returns a Store over a migrated reports database.
func NewStore(gdb *gorm.DB) *Store { return &Store{db: gdb} }

// storedTime is how an instant is written: UTC at PostgreSQL's microsecond precision, so that
// both dialects read back what was written.
func storedTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func id(v uint64) string { return strconv.FormatUint(v, 10) }

// dbID is a snowflake as a bigint column holds it; snowflakes reach 2^63 only in 2084.
func dbID(v uint64) int64 { return int64(min(v, math.MaxInt64)) }

func parseID(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) }

// shardOf is the gateway shard of a server: (guild_id >> 22) % num_shards.
func shardOf(guild uint64, numShards int) int { return int((guild >> 22) % uint64(numShards)) }

type checkpointRow struct {
	Shard     int
	NumShards int
	SessionID string
	Seq       int64
	ResumeURL string
	FlushedAt time.Time
}

// Load reads what shard of numShards resumes from: its checkpoint, and the coverage and threads of
// the servers it holds. Gaps that end before keepFrom are left out: no count they concern is
// refreshed any more. The checkpoint is the shard number's whatever the number of shards it was
// written with: after a change of that number its session cannot resume, and the new session's
// READY leaves gaps from its last flush.
func (s *Store) Load(ctx context.Context, shard, numShards int, keepFrom time.Time) (State, error) {
	tx := s.db.WithContext(ctx)
	st := State{Coverage: map[uint64]Coverage{}}
	var cps []checkpointRow
	if err := tx.Table("live_checkpoints").Where("shard = ?", shard).Find(&cps).Error; err != nil {
		return st, fmt.Errorf("read live checkpoint: %w", err)
	}
	if len(cps) == 1 {
		c := cps[0]
		st.Checkpoint = Checkpoint{SessionID: c.SessionID, Seq: c.Seq, ResumeURL: c.ResumeURL, FlushedAt: c.FlushedAt.UTC()}
	}
	var guilds []struct {
		GuildID string
		SinceID int64
	}
	if err := tx.Table("live_guilds").Find(&guilds).Error; err != nil {
		return st, fmt.Errorf("read live guilds: %w", err)
	}
	for _, g := range guilds {
		gid, err := parseID(g.GuildID)
		if err != nil {
			return st, fmt.Errorf("live guild %q: %w", g.GuildID, err)
		}
		if shardOf(gid, numShards) == shard {
			st.Coverage[gid] = Coverage{SinceID: uint64(g.SinceID)}
		}
	}
	var gaps []struct {
		GuildID      string
		MinID, MaxID int64
		Filled       bool
	}
	err := tx.Table("live_gaps").Where("max_id > ?", dbID(discord.SnowflakeAt(keepFrom))).Order("guild_id, min_id").Find(&gaps).Error
	if err != nil {
		return st, fmt.Errorf("read live gaps: %w", err)
	}
	for _, g := range gaps {
		gid, err := parseID(g.GuildID)
		if err != nil {
			return st, fmt.Errorf("live gap of %q: %w", g.GuildID, err)
		}
		if c, ok := st.Coverage[gid]; ok {
			c.Gaps = append(c.Gaps, Gap{MinID: uint64(g.MinID), MaxID: uint64(g.MaxID), Filled: g.Filled})
			st.Coverage[gid] = c
		}
	}
	var threads []struct{ GuildID, ChannelID string }
	if err := tx.Table("live_channels").Where("thread AND NOT deleted").Find(&threads).Error; err != nil {
		return st, fmt.Errorf("read live threads: %w", err)
	}
	for _, t := range threads {
		gid, err1 := parseID(t.GuildID)
		cid, err2 := parseID(t.ChannelID)
		if err := errors.Join(err1, err2); err != nil {
			return st, fmt.Errorf("live thread %s/%s: %w", t.GuildID, t.ChannelID, err)
		}
		if shardOf(gid, numShards) == shard {
			st.Threads = append(st.Threads, ChannelKey{gid, cid})
		}
	}
	return st, nil
}

// Flush writes b in one transaction: its checkpoint, servers, gaps, fills, channels and count
// deltas, after checking that the stored checkpoint is b.Prev (only its session for a new
// session). A batch whose checkpoint is already stored was committed by an attempt whose answer
// was lost: it is not written twice. A failed Flush writes nothing.
func (s *Store) Flush(ctx context.Context, b Batch) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		done, err := moveCheckpoint(tx, b)
		if err != nil || done {
			return err
		}
		for _, step := range []func(*gorm.DB, Batch) error{writeGuilds, writeGaps, writeFills, writeChannels} {
			if err := step(tx, b); err != nil {
				return err
			}
		}
		return addCounts(tx, b.Counts)
	})
}

// moveCheckpoint stores b.Next where b.Prev is stored (the conditional UPDATE also locks the
// row, so that two writers of one shard take turns); done reports that b.Next was already there.
func moveCheckpoint(tx *gorm.DB, b Batch) (done bool, err error) {
	next := map[string]any{"num_shards": b.NumShards, "session_id": b.Next.SessionID, "seq": b.Next.Seq,
		"resume_url": b.Next.ResumeURL, "flushed_at": storedTime(b.Next.FlushedAt)}
	q := tx.Table("live_checkpoints").Where("shard = ? AND session_id = ?", b.Shard, b.Prev.SessionID)
	if !b.NewSession {
		q = q.Where("seq = ?", b.Prev.Seq)
	}
	res := q.Updates(next)
	if res.Error != nil {
		return false, fmt.Errorf("move live checkpoint of shard %d: %w", b.Shard, res.Error)
	}
	if res.RowsAffected == 1 {
		return false, nil
	}
	var stored []checkpointRow
	if err := tx.Table("live_checkpoints").Where("shard = ?", b.Shard).Find(&stored).Error; err != nil {
		return false, fmt.Errorf("read live checkpoint of shard %d: %w", b.Shard, err)
	}
	switch {
	case len(stored) == 0 && b.Prev.SessionID == "":
		next["shard"] = b.Shard
		if err := tx.Table("live_checkpoints").Create(next).Error; err != nil {
			return false, fmt.Errorf("write live checkpoint of shard %d: %w", b.Shard, err)
		}
		return false, nil
	case len(stored) == 1 && stored[0].SessionID == b.Next.SessionID && stored[0].Seq == b.Next.Seq:
		return true, nil
	case len(stored) == 1:
		return false, fmt.Errorf("%w: shard %d holds session %q seq %d, the batch follows %q seq %d", ErrCheckpointMoved,
			b.Shard, stored[0].SessionID, stored[0].Seq, b.Prev.SessionID, b.Prev.Seq)
	default:
		return false, fmt.Errorf("%w: shard %d has none, the batch follows %q seq %d", ErrCheckpointMoved,
			b.Shard, b.Prev.SessionID, b.Prev.Seq)
	}
}

func writeGuilds(tx *gorm.DB, b Batch) error {
	var rows []map[string]any
	for _, g := range slices.Sorted(maps.Keys(b.Guilds)) {
		rows = append(rows, map[string]any{"guild_id": id(g), "since_id": dbID(b.Guilds[g])})
	}
	if len(rows) == 0 {
		return nil
	}
	// A server is counted from its first GUILD_CREATE: a later one keeps the stored start.
	err := tx.Table("live_guilds").Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(rows, batchSize).Error
	if err != nil {
		return fmt.Errorf("write live guilds: %w", err)
	}
	return nil
}

func writeGaps(tx *gorm.DB, b Batch) error {
	var rows []map[string]any
	for _, g := range slices.Sorted(maps.Keys(b.Gaps)) {
		for _, gap := range b.Gaps[g] {
			rows = append(rows, map[string]any{"guild_id": id(g), "min_id": dbID(gap.MinID), "max_id": dbID(gap.MaxID),
				"filled": false, "recorded_at": storedTime(b.Next.FlushedAt)})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	err := tx.Table("live_gaps").Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(rows, batchSize).Error
	if err != nil {
		return fmt.Errorf("write live gaps: %w", err)
	}
	return nil
}

// writeFills marks each filled gap and adds its counts; a gap not stored unfilled gets nothing,
// so that no search count is added twice.
func writeFills(tx *gorm.DB, b Batch) error {
	for _, f := range b.Fills {
		res := tx.Table("live_gaps").Where("guild_id = ? AND min_id = ? AND max_id = ? AND NOT filled",
			id(f.Guild), dbID(f.Gap.MinID), dbID(f.Gap.MaxID)).Update("filled", true)
		if res.Error != nil {
			return fmt.Errorf("fill live gap: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			continue
		}
		if err := addCounts(tx, f.Counts); err != nil {
			return err
		}
	}
	return nil
}

func writeChannels(tx *gorm.DB, b Batch) error {
	for _, g := range slices.Sorted(maps.Keys(b.Listed)) {
		// A GUILD_CREATE lists every channel and active thread: the others were deleted while
		// the gateway was not listening.
		q := tx.Table("live_channels").Where("guild_id = ? AND NOT deleted", id(g))
		if ids := b.Listed[g]; len(ids) > 0 {
			strs := make([]string, len(ids))
			for i, c := range ids {
				strs[i] = id(c)
			}
			q = q.Where("channel_id NOT IN ?", strs)
		}
		if err := q.Update("deleted", true).Error; err != nil {
			return fmt.Errorf("write live channels: %w", err)
		}
		// From now on live_channels holds every channel of the server with its type: reports
		// take their channels from it rather than from a REST listing.
		err := tx.Table("live_guilds").Where("guild_id = ? AND NOT channels_listed", id(g)).Update("channels_listed", true).Error
		if err != nil {
			return fmt.Errorf("write live guilds: %w", err)
		}
	}
	keys := slices.SortedFunc(maps.Keys(b.Channels), func(x, y ChannelKey) int {
		return cmp.Or(cmp.Compare(x.Guild, y.Guild), cmp.Compare(x.Channel, y.Channel))
	})
	rows := make([]map[string]any, 0, len(keys))
	for _, k := range keys {
		c := b.Channels[k]
		rows = append(rows, map[string]any{"guild_id": id(k.Guild), "channel_id": id(k.Channel), "name": c.Name,
			"thread": c.Thread, "deleted": c.Deleted, "channel_type": c.Type})
	}
	if len(rows) == 0 {
		return nil
	}
	err := tx.Table("live_channels").Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "guild_id"}, {Name: "channel_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"name", "thread", "deleted", "channel_type"}),
	}).CreateInBatches(rows, batchSize).Error
	if err != nil {
		return fmt.Errorf("write live channels: %w", err)
	}
	return nil
}

func compareKeys(x, y Key) int {
	return cmp.Or(cmp.Compare(x.Guild, y.Guild), cmp.Compare(x.Hour, y.Hour), cmp.Compare(x.Channel, y.Channel))
}

// addCounts adds the deltas to the stored counts, in key order (two writers lock rows in one
// order). A count never goes below zero: a deletion of a message the store never counted (sent
// before a flush that was lost with its process, or before the row began) must not take away
// another message's count. An increase is an upsert that adds; a decrease updates the row only,
// clamped at zero, since a row that does not exist holds zero already.
func addCounts(tx *gorm.DB, counts map[Key]int64) error {
	var rows []map[string]any
	var down []Key
	for _, k := range slices.SortedFunc(maps.Keys(counts), compareKeys) {
		switch d := counts[k]; {
		case d > 0:
			rows = append(rows, map[string]any{"guild_id": id(k.Guild), "hour": k.Hour, "channel_id": channelID(k.Channel), "messages": d})
		case d < 0:
			down = append(down, k)
		}
	}
	if len(rows) > 0 {
		err := tx.Table("live_counts").Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "guild_id"}, {Name: "hour"}, {Name: "channel_id"}},
			DoUpdates: clause.Assignments(map[string]any{"messages": gorm.Expr("live_counts.messages + excluded.messages")}),
		}).CreateInBatches(rows, batchSize).Error
		if err != nil {
			return fmt.Errorf("add live counts: %w", err)
		}
	}
	for _, k := range down {
		// CASE rather than GREATEST (PostgreSQL) or two-argument MAX (SQLite): one statement for both.
		d := counts[k]
		err := tx.Exec(`UPDATE live_counts SET messages = CASE WHEN messages + ? < 0 THEN 0 ELSE messages + ? END
			WHERE guild_id = ? AND hour = ? AND channel_id = ?`, d, d, id(k.Guild), k.Hour, channelID(k.Channel)).Error
		if err != nil {
			return fmt.Errorf("subtract live counts: %w", err)
		}
	}
	return nil
}

// channelID is a count's channel_id: ” for the server's total.
func channelID(c uint64) string {
	if c == 0 {
		return ""
	}
	return id(c)
}

// Counts reads the stored counts of guild over the hours [from, to).
func (s *Store) Counts(ctx context.Context, guild uint64, from, to int64) (map[Key]int64, error) {
	var rows []struct {
		Hour      int64
		ChannelID string
		Messages  int64
	}
	err := s.db.WithContext(ctx).Table("live_counts").Select("hour, channel_id, messages").
		Where("guild_id = ? AND hour >= ? AND hour < ?", id(guild), from, to).Find(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read live counts: %w", err)
	}
	out := make(map[Key]int64, len(rows))
	for _, r := range rows {
		var c uint64
		if r.ChannelID != "" {
			if c, err = parseID(r.ChannelID); err != nil {
				return nil, fmt.Errorf("live count channel %q: %w", r.ChannelID, err)
			}
		}
		out[Key{Guild: guild, Hour: r.Hour, Channel: c}] = r.Messages
	}
	return out, nil
}
