package stack

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// discordEpoch is the first millisecond of 2015 (UTC), Discord's snowflake epoch.
const discordEpoch = 1420070400000

// SnowflakeTime is the millisecond a Discord id was made at.
func SnowflakeTime(id uint64) time.Time { return time.UnixMilli(int64(id>>22) + discordEpoch).UTC() }

// LiveCheckpoint is a shard's stored checkpoint (live_checkpoints).
type LiveCheckpoint struct {
	Shard     int
	SessionID string
	Seq       int64
}

// LiveCheckpoints reads the stored checkpoints, by shard.
func LiveCheckpoints(ctx context.Context, conn *pgx.Conn) (map[int]LiveCheckpoint, error) {
	rows, err := conn.Query(ctx, `SELECT shard, session_id, seq FROM live_checkpoints`)
	if err != nil {
		return nil, err
	}
	out := map[int]LiveCheckpoint{}
	for rows.Next() {
		var c LiveCheckpoint
		if err := rows.Scan(&c.Shard, &c.SessionID, &c.Seq); err != nil {
			return nil, err
		}
		out[c.Shard] = c
	}
	return out, rows.Err()
}

// LiveCheck is the comparison of the stored live counts with the fake's: every server's total and
// every channel's count since the server's counting began, up to a moment.
type LiveCheck struct {
	Servers, Channels int
	Stored, Fake      int64 // the servers' totals, summed
	// SameMillisecond counts the servers whose counting began in the millisecond of their
	// session's IDENTIFY (CountedFrom): compared from the session's start.
	SameMillisecond int
	Diffs           []string // what differs; none when the counts are exact
}

// Exact reports whether every count equals the fake's.
func (c LiveCheck) Exact() bool { return len(c.Diffs) == 0 }

func (c LiveCheck) String() string {
	s := fmt.Sprintf("%d servers, %d channels: stored %d, fake %d", c.Servers, c.Channels, c.Stored, c.Fake)
	if c.SameMillisecond > 0 {
		s += fmt.Sprintf(" (%d began counting in the millisecond of their session's IDENTIFY)", c.SameMillisecond)
	}
	if len(c.Diffs) > 0 {
		s += "; differ: " + strings.Join(c.Diffs[:min(len(c.Diffs), 10)], "; ")
	}
	return s
}

// CountedFrom is where a server's live counts begin: its start of counting (since, the moment
// its first GUILD_CREATE was received), unless the session that delivered it began later. The
// fake's session begins the millisecond after its IDENTIFY, and a local collector may receive the
// GUILD_CREATE within that same millisecond: the messages of that millisecond came before the
// session, which never delivers them. began lists when the fake's sessions began; the one that
// counts is the latest that began by since's next millisecond.
func CountedFrom(since time.Time, began []time.Time) time.Time {
	from := since
	var session time.Time
	for _, b := range began {
		if !b.After(since.Add(time.Millisecond)) && b.After(session) {
			session = b
		}
	}
	if session.After(from) {
		from = session
	}
	return from
}

// LiveSince reads each server's start of counting (live_guilds).
func LiveSince(ctx context.Context, conn *pgx.Conn) (map[string]time.Time, error) {
	since := map[string]time.Time{}
	rows, err := conn.Query(ctx, `SELECT guild_id, since_id FROM live_guilds`)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var g string
		var id int64
		if err := rows.Scan(&g, &id); err != nil {
			return nil, err
		}
		since[g] = SnowflakeTime(uint64(id))
	}
	return since, rows.Err()
}

// CheckLiveCounts compares the live counts stored in the reports database (conn) with the fake's
// exact counts of the messages stamped from each server's start of counting (CountedFrom, began:
// when the fake's sessions began) to until: the server's total (threads included) and each
// channel's own count (live_channels, not threads). Every server of guilds must be counted.
func CheckLiveCounts(ctx context.Context, conn *pgx.Conn, fake *FakeDiscord, guilds []string, began []time.Time, until time.Time) (LiveCheck, error) {
	var c LiveCheck
	since, err := LiveSince(ctx, conn)
	if err != nil {
		return c, err
	}
	stored := map[[2]string]int64{}
	rows, err := conn.Query(ctx, `SELECT guild_id, channel_id, SUM(messages) FROM live_counts GROUP BY guild_id, channel_id`)
	if err != nil {
		return c, err
	}
	for rows.Next() {
		var g, ch string
		var n int64
		if err := rows.Scan(&g, &ch, &n); err != nil {
			return c, err
		}
		stored[[2]string{g, ch}] = n
	}
	if err := rows.Err(); err != nil {
		return c, err
	}
	channels := map[string][]string{}
	rows, err = conn.Query(ctx, `SELECT guild_id, channel_id FROM live_channels WHERE NOT thread AND NOT deleted ORDER BY guild_id, channel_id`)
	if err != nil {
		return c, err
	}
	for rows.Next() {
		var g, ch string
		if err := rows.Scan(&g, &ch); err != nil {
			return c, err
		}
		channels[g] = append(channels[g], ch)
	}
	if err := rows.Err(); err != nil {
		return c, err
	}
	for _, g := range guilds {
		s, ok := since[g]
		if !ok {
			c.Diffs = append(c.Diffs, "server "+g+" not counted")
			continue
		}
		from := CountedFrom(s, began)
		if !from.Equal(s) {
			c.SameMillisecond++
		}
		c.Servers++
		want, err := fake.Count(ctx, g, "", from, until)
		if err != nil {
			return c, err
		}
		got := stored[[2]string{g, ""}]
		c.Stored += got
		c.Fake += want
		if got != want {
			c.Diffs = append(c.Diffs, fmt.Sprintf("server %s: stored %d, fake %d", g, got, want))
		}
		for _, ch := range channels[g] {
			c.Channels++
			want, err := fake.Count(ctx, g, ch, from, until)
			if err != nil {
				return c, err
			}
			if got := stored[[2]string{g, ch}]; got != want {
				c.Diffs = append(c.Diffs, fmt.Sprintf("channel %s of %s: stored %d, fake %d", ch, g, got, want))
			}
		}
	}
	return c, nil
}

// Metric sums the samples of the metric name that carry every label of labels (name="value"),
// from the Prometheus text exposition at url.
func Metric(ctx context.Context, url, name string, labels ...string) (sum float64, err error) {
	err = Get(ctx, url, func(body io.Reader) (err error) {
		sum, err = sumMetric(bufio.NewScanner(body), name, labels)
		return err
	})
	return sum, err
}

// Get fetches url and has read take its body; an answer other than 200 is an error.
func Get(ctx context.Context, url string, read func(body io.Reader) error) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return read(resp.Body)
}

func sumMetric(sc *bufio.Scanner, name string, labels []string) (float64, error) {
	var sum float64
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		var set string
		switch {
		case strings.HasPrefix(rest, "{"):
			end := strings.Index(rest, "} ")
			if end < 0 {
				continue
			}
			set, rest = rest[1:end], rest[end+2:]
		case strings.HasPrefix(rest, " "):
			rest = rest[1:]
		default:
			continue // another metric whose name starts with name
		}
		ok := true
		for _, l := range labels {
			if !strings.Contains(","+set+",", ","+l+",") {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0, fmt.Errorf("%s: %q: no value", name, line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q: %w", name, line, err)
		}
		sum += v
	}
	return sum, sc.Err()
}
