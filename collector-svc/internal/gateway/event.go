// Package gateway is the collector's connection to Discord's gateway: one websocket per shard,
// identified within Discord's session start limits, kept alive with heartbeats, and resumed
// (session id, last sequence number, resume_gateway_url) after every failure Discord allows to
// resume, including a process restart from a stored Checkpoint. Each dispatch reaches the caller
// as an Event carrying its sequence number, once and in order per session.
package gateway

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Event is one dispatch of a shard, reduced to what counting needs.
type Event struct {
	Shard int
	Seq   int64  // the dispatch's sequence number s
	Type  string // MESSAGE_CREATE, MESSAGE_DELETE, MESSAGE_DELETE_BULK, GUILD_CREATE, CHANNEL_*, THREAD_*, READY, RESUMED, or any other
	// GuildID is the event's guild (GUILD_CREATE: the guild itself); ChannelID the message's
	// channel, or the channel or thread a CHANNEL_* or THREAD_* event is about.
	GuildID, ChannelID uint64
	// ParentID is a thread's parent channel, on CHANNEL_* and THREAD_* events (the gateway does
	// not name it on messages: a consumer learns it from GUILD_CREATE and THREAD_CREATE).
	ParentID uint64
	IDs      []uint64 // message ids: one for MESSAGE_CREATE and MESSAGE_DELETE, many for MESSAGE_DELETE_BULK
	// SessionID and ResumeURL are set on READY: with Seq they make the Checkpoint.
	SessionID, ResumeURL string
	// Channels lists a GUILD_CREATE's channels and active threads, or the one channel or thread
	// of a CHANNEL_* or THREAD_* event.
	Channels []Channel
}

// Channel is a channel or thread as a dispatch describes it.
type Channel struct {
	ID, ParentID uint64
	Type         int
	Name         string
	Thread       bool // a thread (types 10, 11, 12): counted in its server's total, not in a listed channel
}

// channelJSON is a channel in a dispatch.
type channelJSON struct {
	ID       snowflake `json:"id"`
	ParentID snowflake `json:"parent_id"`
	Type     int       `json:"type"`
	Name     string    `json:"name"`
}

func (c channelJSON) channel() Channel {
	return Channel{ID: uint64(c.ID), ParentID: uint64(c.ParentID), Type: c.Type, Name: c.Name, Thread: c.Type >= 10 && c.Type <= 12}
}

// snowflake decodes Discord's ids, which JSON carries as strings; null and absent are 0.
type snowflake uint64

func (s *snowflake) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = 0
		return nil
	}
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return fmt.Errorf("snowflake %s: %w", b, err)
	}
	v, err := strconv.ParseUint(str, 10, 64)
	if err != nil {
		return fmt.Errorf("snowflake %q: %w", str, err)
	}
	*s = snowflake(v)
	return nil
}

// dispatchData holds the fields of every dispatch type the collector reads.
type dispatchData struct {
	ID        snowflake     `json:"id"`
	IDs       []snowflake   `json:"ids"`
	ChannelID snowflake     `json:"channel_id"`
	GuildID   snowflake     `json:"guild_id"`
	ParentID  snowflake     `json:"parent_id"`
	Type      int           `json:"type"`
	Name      string        `json:"name"`
	SessionID string        `json:"session_id"`
	ResumeURL string        `json:"resume_gateway_url"`
	Channels  []channelJSON `json:"channels"`
	Threads   []channelJSON `json:"threads"`
}

// decodeEvent builds the Event of a dispatch. The types the collector counts with must decode;
// any other type passes with its sequence number only, so that the caller still sees every seq.
func decodeEvent(shard int, seq int64, typ string, d json.RawMessage) (Event, error) {
	ev := Event{Shard: shard, Seq: seq, Type: typ}
	switch typ {
	case "MESSAGE_CREATE", "MESSAGE_DELETE", "MESSAGE_DELETE_BULK", "GUILD_CREATE", "READY",
		"CHANNEL_CREATE", "CHANNEL_UPDATE", "CHANNEL_DELETE", "THREAD_CREATE", "THREAD_UPDATE", "THREAD_DELETE":
	default:
		return ev, nil
	}
	var v dispatchData
	if err := json.Unmarshal(d, &v); err != nil {
		return ev, fmt.Errorf("%s: %w", typ, err)
	}
	switch typ {
	case "MESSAGE_CREATE", "MESSAGE_DELETE":
		if v.ID == 0 || v.ChannelID == 0 {
			return ev, fmt.Errorf("%s without id or channel_id", typ)
		}
		ev.GuildID, ev.ChannelID, ev.IDs = uint64(v.GuildID), uint64(v.ChannelID), []uint64{uint64(v.ID)}
	case "MESSAGE_DELETE_BULK":
		if len(v.IDs) == 0 || v.ChannelID == 0 {
			return ev, fmt.Errorf("%s without ids or channel_id", typ)
		}
		ev.GuildID, ev.ChannelID = uint64(v.GuildID), uint64(v.ChannelID)
		ev.IDs = make([]uint64, len(v.IDs))
		for i, id := range v.IDs {
			ev.IDs[i] = uint64(id)
		}
	case "GUILD_CREATE":
		if v.ID == 0 {
			return ev, fmt.Errorf("%s without id", typ)
		}
		ev.GuildID = uint64(v.ID)
		for _, c := range append(v.Channels, v.Threads...) {
			ev.Channels = append(ev.Channels, c.channel())
		}
	case "READY":
		if v.SessionID == "" || v.ResumeURL == "" {
			return ev, fmt.Errorf("%s without session_id or resume_gateway_url", typ)
		}
		ev.SessionID, ev.ResumeURL = v.SessionID, v.ResumeURL
	default: // CHANNEL_* and THREAD_*
		if v.ID == 0 {
			return ev, fmt.Errorf("%s without id", typ)
		}
		ev.GuildID, ev.ChannelID, ev.ParentID = uint64(v.GuildID), uint64(v.ID), uint64(v.ParentID)
		ev.Channels = []Channel{channelJSON{ID: v.ID, ParentID: v.ParentID, Type: v.Type, Name: v.Name}.channel()}
	}
	return ev, nil
}
