// Package livegw counts messages live: it holds gateway shards, each under a lock that one
// replica at a time can hold, and feeds each held shard's dispatches to live counting, resumed
// from the shard's stored checkpoint and flushed with it every flush interval.
package livegw

import (
	"strconv"

	"forumstats.local/collector-svc/internal/gateway"
	"forumstats.local/collector-svc/internal/live"
)

// Event is the gateway's dispatch as live counting reads it, field by field.
func Event(ev gateway.Event) live.Event {
	out := live.Event{
		Shard:     ev.Shard,
		Seq:       ev.Seq,
		Type:      ev.Type,
		GuildID:   ev.GuildID,
		ChannelID: ev.ChannelID,
		ParentID:  ev.ParentID,
		IDs:       ev.IDs,
		SessionID: ev.SessionID,
		ResumeURL: ev.ResumeURL,
	}
	if len(ev.Channels) > 0 {
		out.Channels = make([]live.Channel, len(ev.Channels))
		for i, c := range ev.Channels {
			out.Channels[i] = live.Channel{ID: c.ID, Name: c.Name, Thread: c.Thread, Type: c.Type}
		}
	}
	return out
}

// resumeFrom is the gateway checkpoint of a stored one: the session and sequence number the
// shard resumes from (none: it identifies).
func resumeFrom(cp live.Checkpoint) gateway.Checkpoint {
	return gateway.Checkpoint{SessionID: cp.SessionID, Seq: cp.Seq, ResumeURL: cp.ResumeURL}
}

func parseGuild(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) }
