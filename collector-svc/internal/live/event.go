// Package live counts messages from Discord's gateway as they are posted: per server, channel and
// UTC hour, flushed with the gateway shard's checkpoint in one transaction, so that a restart
// resumes without losing or doubling a message. The rules (Accumulator, Compose) are pure; Store
// is their database and Flusher runs them on a clock.
package live

import (
	"time"

	"forumstats.local/collector-svc/internal/discord"
)

// Gateway dispatch types that live counting reads; others are ignored (their sequence numbers
// still move the checkpoint).
const (
	TypeReady             = "READY"
	TypeResumed           = "RESUMED"
	TypeGuildCreate       = "GUILD_CREATE"
	TypeChannelCreate     = "CHANNEL_CREATE"
	TypeChannelUpdate     = "CHANNEL_UPDATE"
	TypeChannelDelete     = "CHANNEL_DELETE"
	TypeThreadCreate      = "THREAD_CREATE"
	TypeMessageCreate     = "MESSAGE_CREATE"
	TypeMessageDelete     = "MESSAGE_DELETE"
	TypeMessageDeleteBulk = "MESSAGE_DELETE_BULK"
)

// Event is one gateway dispatch as live counting reads it. The gateway client adapts its own
// decoding to it.
type Event struct {
	Shard int
	Seq   int64 // the dispatch's sequence number s
	Type  string
	// GuildID and ChannelID locate a message event; ParentID, when not 0, says its channel is a
	// thread of that channel.
	GuildID, ChannelID, ParentID uint64
	// IDs are the message ids: one for MESSAGE_CREATE and MESSAGE_DELETE, many for DELETE_BULK.
	IDs []uint64
	// Channels are what the event says of channels: all of the server's channels and active
	// threads for GUILD_CREATE (the server's other channels are then taken as deleted, unless it
	// lists none), the one channel for CHANNEL_* and THREAD_CREATE.
	Channels []Channel
	// SessionID and ResumeURL come with READY.
	SessionID, ResumeURL string
}

// Channel is a channel or thread as a gateway event describes it.
type Channel struct {
	ID     uint64
	Name   string
	Thread bool
	// Type is the gateway's channel type (0 text, 2 voice, 4 category, 5 announcement, 11 a
	// thread, ...): reports list the channels that can hold messages (discord.MessageBearing).
	Type int
}

// hourMillis is one hour in milliseconds.
const hourMillis = int64(time.Hour / time.Millisecond)

// HourOf is the UTC hour (hours since the Unix epoch) in which the snowflake id was made: a
// message belongs to the hour of its id, never to the hour it was received in.
func HourOf(id uint64) int64 {
	return (int64(id>>22) + discord.Epoch) / hourMillis
}

// HourStart is the first instant of hour.
func HourStart(hour int64) time.Time { return time.UnixMilli(hour * hourMillis).UTC() }

// HourAt is the hour that holds t.
func HourAt(t time.Time) int64 {
	ms := t.UnixMilli()
	if ms < 0 {
		return (ms - hourMillis + 1) / hourMillis
	}
	return ms / hourMillis
}
