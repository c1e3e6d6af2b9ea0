package live

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"forumstats.local/collector-svc/internal/discord"
)

// Key is one hourly count: the messages of a server in one UTC hour, in one channel or, for
// Channel 0, in the whole server.
type Key struct {
	Guild   uint64
	Hour    int64
	Channel uint64 // 0: the server's total
}

// ChannelKey names a channel of a server.
type ChannelKey struct{ Guild, Channel uint64 }

// ChannelState is what the gateway last said of a channel.
type ChannelState struct {
	Name    string
	Thread  bool
	Deleted bool
	Type    int // the gateway's channel type
}

// Checkpoint is where a shard's session stands: the gateway resumes it from Seq. FlushedAt is
// when every event up to Seq had been received.
type Checkpoint struct {
	SessionID string
	Seq       int64
	ResumeURL string
	FlushedAt time.Time
}

// Batch is what one flush writes in one transaction: the count deltas and the rest learned since
// the previous batch, and the checkpoint that moves with them.
type Batch struct {
	Shard, NumShards int
	// Prev is the checkpoint the store must hold for this batch to follow it, Next the one it
	// stores. NewSession: Prev's session could not resume, Next is a new one (only Prev's session
	// is checked, and Gaps hold the time between).
	Prev, Next Checkpoint
	NewSession bool
	Counts     map[Key]int64
	Guilds     map[uint64]uint64 // servers first seen: the since id of their counting
	Channels   map[ChannelKey]ChannelState
	Listed     map[uint64][]uint64 // a GUILD_CREATE's channels: the server's others are deleted
	Gaps       map[uint64][]Gap
	Fills      []Fill
}

// Fill is a search's count of a gap of a server, per hour (and channel), to add to the hourly
// counts as the gap is marked filled.
type Fill struct {
	Guild  uint64
	Gap    Gap
	Counts map[Key]int64
}

// Empty reports whether the batch holds nothing but its checkpoint.
func (b Batch) Empty() bool {
	return len(b.Counts) == 0 && len(b.Guilds) == 0 && len(b.Channels) == 0 && len(b.Listed) == 0 && len(b.Gaps) == 0 && len(b.Fills) == 0
}

// State is what a shard's counting resumes from: its stored checkpoint (zero when none), the
// coverage of its servers and the threads known.
type State struct {
	Checkpoint Checkpoint
	Coverage   map[uint64]Coverage
	Threads    []ChannelKey
}

// Accumulator applies one shard's gateway events to hourly count deltas. It does no I/O and is
// not safe for concurrent use (Flusher serialises it).
type Accumulator struct {
	shard, numShards int
	cutoffID         uint64
	flushed          Checkpoint // the last checkpoint known stored
	taken            Checkpoint // Next of the last batch taken: Prev of the next
	cur              Checkpoint // the session of the events applied
	newSession       bool
	readyAt          time.Time      // when the new session's READY came
	provisional      map[uint64]Gap // the gaps of the new session until Take
	coverage         map[uint64]*Coverage
	threads          map[ChannelKey]bool
	b                Batch
}

// NewAccumulator starts counting shard of numShards from st.
func NewAccumulator(shard, numShards int, st State) *Accumulator {
	a := &Accumulator{
		shard: shard, numShards: numShards,
		flushed: st.Checkpoint, taken: st.Checkpoint, cur: st.Checkpoint,
		coverage: map[uint64]*Coverage{},
		threads:  map[ChannelKey]bool{},

		provisional: map[uint64]Gap{},
	}
	for g, c := range st.Coverage {
		c.Gaps = append([]Gap(nil), c.Gaps...)
		a.coverage[g] = &c
	}
	for _, k := range st.Threads {
		a.threads[k] = true
	}
	a.reset()
	return a
}

func (a *Accumulator) reset() {
	a.b = Batch{Shard: a.shard, NumShards: a.numShards, Counts: map[Key]int64{}, Guilds: map[uint64]uint64{},
		Channels: map[ChannelKey]ChannelState{}, Listed: map[uint64][]uint64{}, Gaps: map[uint64][]Gap{}}
	a.newSession = false
}

// SetCutoff sets the oldest time whose hours are still refreshed: deleting a message made before
// it changes no count, since no report of its hour will be written again. Gaps that end before it
// are forgotten for the same reason (a new message is never that old).
func (a *Accumulator) SetCutoff(t time.Time) {
	a.cutoffID = discord.SnowflakeAt(t)
	for g, c := range a.coverage {
		c.Gaps = slices.DeleteFunc(c.Gaps, func(gap Gap) bool { return gap.MaxID <= a.cutoffID && a.provisional[g] != gap })
	}
}

// Checkpoint is the session and sequence of the events applied, for the gateway to resume from.
func (a *Accumulator) Checkpoint() Checkpoint { return a.cur }

// NewSession reports whether the events since the last Take began a new session.
func (a *Accumulator) NewSession() bool { return a.newSession }

// Coverage returns what live counting owns of guild; ok false when it does not count it.
func (a *Accumulator) Coverage(guild uint64) (Coverage, bool) {
	c, ok := a.coverage[guild]
	if !ok {
		return Coverage{}, false
	}
	return Coverage{SinceID: c.SinceID, Gaps: append([]Gap(nil), c.Gaps...)}, true
}

// Apply applies ev, received at at. A dispatch whose sequence number is not past the session's
// (a replay after resuming) changes nothing.
func (a *Accumulator) Apply(ev Event, at time.Time) {
	if ev.Type == TypeReady {
		a.ready(ev, at)
		return
	}
	if ev.Seq <= a.cur.Seq {
		return
	}
	a.cur.Seq = ev.Seq
	switch ev.Type {
	case TypeGuildCreate:
		if ev.GuildID == 0 {
			return
		}
		if _, ok := a.coverage[ev.GuildID]; !ok {
			since := discord.SnowflakeAt(at)
			a.coverage[ev.GuildID] = &Coverage{SinceID: since}
			a.b.Guilds[ev.GuildID] = since
		}
		// A GUILD_CREATE that lists no channel (a server still unavailable) deletes none.
		if len(ev.Channels) == 0 {
			return
		}
		ids := make([]uint64, 0, len(ev.Channels))
		for _, c := range ev.Channels {
			a.channel(ev.GuildID, c, false)
			ids = append(ids, c.ID)
		}
		a.b.Listed[ev.GuildID] = ids
	case TypeChannelCreate, TypeChannelUpdate, TypeThreadCreate:
		for _, c := range ev.Channels {
			a.channel(ev.GuildID, Channel{ID: c.ID, Name: c.Name, Thread: c.Thread || ev.Type == TypeThreadCreate, Type: c.Type}, false)
		}
	case TypeChannelDelete:
		for _, c := range ev.Channels {
			a.channel(ev.GuildID, c, true)
		}
	case TypeMessageCreate:
		a.messages(ev, 1)
	case TypeMessageDelete, TypeMessageDeleteBulk:
		a.messages(ev, -1)
	}
}

func (a *Accumulator) channel(guild uint64, c Channel, deleted bool) {
	k := ChannelKey{guild, c.ID}
	a.b.Channels[k] = ChannelState{Name: c.Name, Thread: c.Thread, Deleted: deleted, Type: c.Type}
	if c.Thread {
		a.threads[k] = true
	} else {
		delete(a.threads, k)
	}
}

// messages adds delta for each message of ev that live counting owns: to the server's total of
// its hour and, unless its channel is a thread, to its channel's.
func (a *Accumulator) messages(ev Event, delta int64) {
	cov, ok := a.coverage[ev.GuildID]
	if !ok {
		return // not counting this server yet: search owns its messages
	}
	thread := ev.ParentID != 0 || a.threads[ChannelKey{ev.GuildID, ev.ChannelID}]
	for _, id := range ev.IDs {
		if delta > 0 && !cov.countsCreate(id) || delta < 0 && !cov.countsDelete(id, a.cutoffID) {
			continue
		}
		h := HourOf(id)
		a.b.Counts[Key{ev.GuildID, h, 0}] += delta
		if !thread && ev.ChannelID != 0 {
			a.b.Counts[Key{ev.GuildID, h, ev.ChannelID}] += delta
		}
	}
}

// ready starts a session. When it is not the session of the checkpoint, that session could not
// resume: the counts applied since the last stored flush are dropped, and every server counted
// gets a gap from that flush (or from when its counting began, if later) to now, which search
// fills. Which flush was the last stored is known only once the flushes under way have ended, so
// the gap is provisional until Take; meanwhile it already keeps the new session from counting a
// message made before now.
func (a *Accumulator) ready(ev Event, at time.Time) {
	if ev.SessionID == a.cur.SessionID {
		return
	}
	clear(a.b.Counts)
	a.readyAt = at
	a.setGaps()
	a.cur = Checkpoint{SessionID: ev.SessionID, Seq: ev.Seq, ResumeURL: ev.ResumeURL}
	a.newSession = true
}

// setGaps replaces the provisional gaps by those from the last stored flush to readyAt. A gap
// starts no earlier than the server's counting began, nor than its last gap ended (a session
// lost before the gap of the previous one was stored: the flush between stored no counts).
func (a *Accumulator) setGaps() {
	for g, c := range a.coverage {
		if old, ok := a.provisional[g]; ok {
			c.Gaps = slices.DeleteFunc(c.Gaps, func(o Gap) bool { return o == old })
			delete(a.provisional, g)
		}
		// A server whose counting began in the READY's millisecond or later was first seen in
		// this session: nothing of it was missed. Its start is a whole millisecond and the READY
		// an instant within one, so that a GUILD_CREATE applied in the READY's millisecond would
		// otherwise seem to begin before it, and leave a gap of that millisecond: its messages
		// searched once more when the gap is filled, after being counted live (or, arriving
		// later, held back until the fill), and the reports stale until then.
		if c.SinceID >= discord.SnowflakeAt(a.readyAt) {
			continue
		}
		from := discord.SnowflakeTime(c.SinceID)
		if a.flushed.FlushedAt.After(from) {
			from = a.flushed.FlushedAt
		}
		for _, o := range c.Gaps {
			if end := discord.SnowflakeTime(o.MaxID); end.After(from) {
				from = end
			}
		}
		if gap, ok := GapBetween(from, a.readyAt); ok {
			c.addGap(gap)
			a.provisional[g] = gap
		}
	}
}

// ErrFill is returned by Fill for a fill that does not match an unfilled gap of the server.
var ErrFill = errors.New("not a fill of an unfilled gap")

// Fill adds a search's counts of an unfilled gap of guild to the next batch and counts the gap
// as filled from now on: a later deletion of one of its messages is subtracted. Every count must
// be of guild, not negative, and in an hour the gap overlaps.
func (a *Accumulator) Fill(guild uint64, gap Gap, counts map[Key]int64) error {
	c, ok := a.coverage[guild]
	if !ok {
		return fmt.Errorf("%w: server %d is not counted", ErrFill, guild)
	}
	i := slices.IndexFunc(c.Gaps, func(g Gap) bool { return g.MinID == gap.MinID && g.MaxID == gap.MaxID })
	if i < 0 || c.Gaps[i].Filled || a.provisional[guild] == c.Gaps[i] {
		return fmt.Errorf("%w: server %d has no unfilled gap %d-%d", ErrFill, guild, gap.MinID, gap.MaxID)
	}
	pieces := ByHour(gap.span())
	for k, n := range counts {
		inGap := slices.ContainsFunc(pieces, func(p HourSpan) bool { return p.Hour == k.Hour })
		if k.Guild != guild || n < 0 || !inGap {
			return fmt.Errorf("%w: count %+v = %d", ErrFill, k, n)
		}
	}
	c.Gaps[i].Filled = true
	a.b.Fills = append(a.b.Fills, Fill{Guild: guild, Gap: gap, Counts: maps.Clone(counts)})
	return nil
}

// Take returns the batch of everything applied since the last Take, checkpointed at the last
// event applied and received by at, and starts a new one. The batch taken before must have been
// written or failed (Committed or not) by then: flushes run one at a time.
func (a *Accumulator) Take(at time.Time) Batch {
	if a.newSession {
		a.setGaps()
		for g, gap := range a.provisional {
			a.b.Gaps[g] = append(a.b.Gaps[g], gap)
		}
		clear(a.provisional)
	}
	b := a.b
	b.Prev = a.taken
	b.Next = a.cur
	b.Next.FlushedAt = at
	b.NewSession = a.newSession
	a.taken = b.Next
	a.reset()
	return b
}

// Committed records that b is stored: a session that cannot resume leaves a gap from its
// FlushedAt.
func (a *Accumulator) Committed(b Batch) { a.flushed = b.Next }
