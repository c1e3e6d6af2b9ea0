package fakediscord

import (
	"math"
	"sort"

	"forumstats.local/collector-svc/internal/discord"
)

// The messages of a channel are a deterministic sequence, never stored: hour h
// (Unix milliseconds [h·H, (h+1)·H)) holds n(h) messages, a pure function of the
// seed, the channel and h, and its message k (0 ≤ k < n) is stamped at
// h·H + ⌊k·H/n⌋ ms, with snowflake low bits derived from (channel, h, k). So
// any count is arithmetic over the hours of the window, and exact to the
// snowflake: no message is ever materialised to be counted.

const (
	hourMs  = int64(3_600_000)
	lowBits = 22
	lowMask = uint64(1)<<lowBits - 1
	// lastMs is the Unix millisecond of the last snowflake timestamp (year 2154).
	lastMs = discord.Epoch + int64(1)<<(64-lowBits) - 1
)

// diurnal is the activity of each Moscow hour of the day, in percent.
var diurnal = [24]uint64{
	30, 18, 10, 6, 5, 6, 12, 25, 45, 60, 70, 80,
	85, 90, 90, 95, 100, 110, 125, 140, 150, 140, 100, 60,
}

// weekly is the activity of each Moscow weekday (Sunday first), in percent: communities talk
// more on Friday evenings and at weekends.
var weekly = [7]uint64{115, 90, 95, 100, 100, 110, 125}

// stream is the message sequence of one channel (or thread).
type stream struct {
	key       uint64 // hash key of the channel
	startHour int64  // first hour that holds messages (the first whole hour after creation)
	rate      uint64 // messages per hour at 100 % activity, before noise
}

func newStream(seed int64, channelID uint64, createdMs int64, rate uint64) stream {
	return stream{
		key:       mix(uint64(seed), channelID),
		startHour: floorDiv(createdMs, hourMs) + 1,
		rate:      rate,
	}
}

// perHour is n(h): the number of messages in hour h.
func (s stream) perHour(h int64) int64 {
	if h < s.startHour {
		return 0
	}
	w := diurnal[(h+3)%24] // UTC+3
	// Day 0 of the Unix epoch (Moscow hours shifted likewise) was a Thursday.
	wd := weekly[(floorDiv(h+3, 24)+4)%7]
	noise := mix(s.key, uint64(h)) & 1023
	return int64(s.rate * w * wd * (512 + noise) / (100 * 100 * 1024))
}

// before returns how many messages of hour h (holding n) are stamped at an
// offset below d ms: #{k : ⌊k·H/n⌋ < d} = #{k : k·H < d·n} = ⌈d·n/H⌉.
func before(n, d int64) int64 {
	if d <= 0 || n == 0 {
		return 0
	}
	if d >= hourMs {
		return n
	}
	return (d*n + hourMs - 1) / hourMs
}

// countMs counts the messages stamped in [a, b) (Unix milliseconds).
func (s stream) countMs(a, b int64) int64 {
	b = min(b, lastMs+1) // no snowflake is stamped later
	if b <= a {
		return 0
	}
	first := s.startHour * hourMs
	if b <= first {
		return 0
	}
	a = max(a, first)
	ha, hb := floorDiv(a, hourMs), floorDiv(b, hourMs)
	var total int64
	for h := ha; h < hb; h++ {
		total += s.perHour(h)
	}
	total += before(s.perHour(hb), b-hb*hourMs)
	total -= before(s.perHour(ha), a-ha*hourMs)
	return total
}

// at returns the low bits of the message stamped at millisecond ms, if any
// (a channel never has two messages in one millisecond: n(h) < H).
func (s stream) at(ms int64) (low uint64, ok bool) {
	h := floorDiv(ms, hourMs)
	n := s.perHour(h)
	if n == 0 {
		return 0, false
	}
	d := ms - h*hourMs
	k := before(n, d) // the first message at offset >= d
	if k >= n || k*hourMs/n != d {
		return 0, false
	}
	return s.low(h, k), true
}

// low is the part of the snowflake below the timestamp: 5 bits of worker, 5 of
// process, 12 of increment, as Discord's. Few workers and small increments make
// all-zero low bits common enough (1 in 64) for tests of the window edges.
func (s stream) low(h, k int64) uint64 {
	r := mix(s.key, uint64(h), uint64(k))
	return (r&3)<<17 | (r>>2&3)<<12 | (r >> 4 & 3)
}

// snowflake builds the id of a message stamped at ms (Unix) with the given low bits.
func snowflake(ms int64, low uint64) uint64 {
	return uint64(ms-discord.Epoch)<<lowBits | low
}

// idMs splits a snowflake into Unix milliseconds and low bits.
func idMs(id uint64) (ms int64, low uint64) {
	return int64(id>>lowBits) + discord.Epoch, id & lowMask
}

// countIDs counts the messages whose snowflake lies strictly between minID and
// maxID: the search's exclusive min_id and max_id.
func (s stream) countIDs(minID, maxID uint64) int64 {
	if minID == math.MaxUint64 || maxID <= minID+1 {
		return 0
	}
	lo, hi := minID+1, maxID // [lo, hi)
	loMs, loLow := idMs(lo)
	hiMs, hiLow := idMs(hi)
	n := s.countMs(loMs, hiMs)
	if l, ok := s.at(loMs); ok && l < loLow {
		n-- // stamped in loMs but below lo
	}
	if l, ok := s.at(hiMs); ok && l < hiLow {
		n++ // stamped in hiMs and below hi
	}
	return n
}

// Message is one synthetic message.
type Message struct {
	ID        uint64
	ChannelID uint64
	Ms        int64 // Unix milliseconds
}

// latest returns up to limit messages of the stream with lo <= id < hi, newest first.
func (s stream) latest(channelID, lo, hi uint64, limit int) []Message {
	if hi <= lo || limit <= 0 {
		return nil
	}
	loMs, _ := idMs(lo)
	hiMs, _ := idMs(hi)
	var out []Message
	for h := floorDiv(hiMs, hourMs); h >= floorDiv(loMs, hourMs) && h >= s.startHour; h-- {
		n := s.perHour(h)
		for k := n - 1; k >= 0; k-- {
			ms := h*hourMs + k*hourMs/n
			id := snowflake(ms, s.low(h, k))
			if id >= hi {
				continue
			}
			if id < lo {
				return out
			}
			out = append(out, Message{ID: id, ChannelID: channelID, Ms: ms})
			if len(out) == limit {
				return out
			}
		}
	}
	return out
}

// newest merges the newest messages of several streams.
func newest(lists [][]Message, limit int) []Message {
	var all []Message
	for _, l := range lists {
		all = append(all, l...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID > all[j].ID })
	if len(all) > limit {
		all = all[:limit]
	}
	return all
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// mix hashes its arguments (splitmix64 finaliser over each word).
func mix(words ...uint64) uint64 {
	h := uint64(0x9E3779B97F4A7C15)
	for _, w := range words {
		h ^= w
		h += 0x9E3779B97F4A7C15
		h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9
		h = (h ^ (h >> 27)) * 0x94D049BB133111EB
		h ^= h >> 31
	}
	return h
}
