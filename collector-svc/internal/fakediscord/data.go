package fakediscord

import (
	"fmt"
	"strconv"
	"time"

	"forumstats.local/collector-svc/internal/discord"
)

// Channel types of the synthetic guilds.
const (
	typeText         = 0
	typeVoice        = 2
	typeCategory     = 4
	typeAnnouncement = 5
	typePublicThread = 11
	typeStage        = 13
	typeForum        = 15
)

type channelSpec struct {
	typ  int
	name string
}

// layout is the channel list of a guild, in Discord's order; guilds take a
// prefix of it (6 to 8 channels by default), larger datasets continue with filler.
var layout = []channelSpec{
	{typeCategory, "Text Channels"},
	{typeText, "general"},
	{typeAnnouncement, "announcements"},
	{typeCategory, "Voice Channels"},
	{typeVoice, "Lounge"},
	{typeStage, "Town Hall"},
	{typeText, "off-topic"},
	{typeForum, "help"},
}

var fillerTypes = []int{typeText, typeText, typeVoice, typeAnnouncement, typeText, typeStage, typeCategory, typeText, typeForum, typeText}

var guildNames = []string{
	"Aurora Hub", "Birch Collective", "Cobalt Lounge", "Driftwood Guild", "Ember Workshop",
	"Fjord Society", "Granite Lab", "Harbor Commons", "Indigo Circle", "Juniper House",
}

type channel struct {
	id     uint64
	name   string
	typ    int
	parent uint64 // 0: none
	thread bool   // not listed by /channels; counted by the guild search
	msgs   stream // unused for categories and forums
}

type guild struct {
	number   int
	id       uint64
	name     string
	icon     *string
	banner   *string
	channels []*channel // listed ones, then the hidden threads
	byID     map[uint64]*channel
}

// holdsMessages reports whether the guild search counts the channel's own messages.
func (c *channel) holdsMessages() bool {
	return c.thread || discord.MessageBearing(c.typ)
}

// buildGuilds creates the deterministic dataset. Guild i (from 0):
// icon "a_…" (animated) when i%3 == 0, no icon when i%5 == 4, else a static icon;
// a static banner when i%3 == 0, none when i%3 == 1, an animated one when i%3 == 2.
// Every channel's hourly rate is multiplied by rateScale.
// Each guild also has two hidden public threads (under its first text channel
// and under its forum, or the text channel again), which the guild-wide
// search counts but /channels does not list, as on Discord.
func buildGuilds(seed int64, guilds, channelsPerGuild int, rateScale uint64) []*guild {
	from := time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	span := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() - from
	out := make([]*guild, 0, guilds)
	for i := range guilds {
		r := mix(uint64(seed), 0x6775696c64, uint64(i)) // "guild"
		createdMs := from + int64(r%uint64(span))
		g := &guild{
			number: i + 1,
			id:     snowflake(createdMs, (r>>42)&lowMask),
			byID:   map[uint64]*channel{},
		}
		if i < len(guildNames) {
			g.name = guildNames[i]
		} else {
			g.name = fmt.Sprintf("Server %d", i+1)
		}
		icon := imageHash(r, 1)
		switch {
		case i%3 == 0:
			icon = "a_" + icon
			g.icon = &icon
		case i%5 == 4:
		default:
			g.icon = &icon
		}
		switch i % 3 {
		case 0:
			b := imageHash(r, 2)
			g.banner = &b
		case 2:
			b := "a_" + imageHash(r, 2)
			g.banner = &b
		}
		n := channelsPerGuild
		if n <= 0 {
			n = 6 + i%3
		}
		g.channels = buildChannels(seed, g, createdMs, n, rateScale)
		for _, c := range g.channels {
			g.byID[c.id] = c
		}
		out = append(out, g)
	}
	return out
}

func buildChannels(seed int64, g *guild, guildMs int64, n int, rateScale uint64) []*channel {
	var (
		out          []*channel
		category     uint64
		textCategory uint64
		text         *channel
		forum        *channel
		ms           = guildMs
	)
	add := func(typ int, name string, parent uint64, thread bool) *channel {
		r := mix(uint64(seed), g.id, uint64(len(out)))
		ms += 1000 + int64(r%uint64(40*24*time.Hour/time.Millisecond)) // up to 40 days after the previous one
		c := &channel{id: snowflake(ms, (r>>20)&lowMask), name: name, typ: typ, parent: parent, thread: thread}
		rate := 1 + (r>>40)%24
		if thread {
			rate = 1 + rate/4
		}
		c.msgs = newStream(seed, c.id, ms, rate*rateScale)
		out = append(out, c)
		return c
	}
	for j := range n {
		spec := channelSpec{fillerTypes[(j-len(layout)+len(fillerTypes))%len(fillerTypes)], ""}
		if j < len(layout) {
			spec = layout[j]
		}
		if spec.name == "" {
			spec.name = fillerName(spec.typ, j)
		}
		// Text-like channels go to the first category, voice-like ones to the latest.
		parent := category
		switch spec.typ {
		case typeCategory:
			parent = 0
		case typeText, typeAnnouncement, typeForum:
			if textCategory != 0 {
				parent = textCategory
			}
		}
		c := add(spec.typ, spec.name, parent, false)
		switch {
		case spec.typ == typeCategory:
			category = c.id
			if textCategory == 0 {
				textCategory = c.id
			}
		case spec.typ == typeText && text == nil:
			text = c
		case spec.typ == typeForum && forum == nil:
			forum = c
		}
	}
	if text != nil {
		add(typePublicThread, "welcome-thread", text.id, true)
		if forum == nil {
			forum = text
		}
		add(typePublicThread, "how do I start?", forum.id, true)
	}
	return out
}

func fillerName(typ, j int) string {
	switch typ {
	case typeVoice:
		return "voice-" + strconv.Itoa(j)
	case typeCategory:
		return "Category " + strconv.Itoa(j)
	case typeAnnouncement:
		return "news-" + strconv.Itoa(j)
	case typeStage:
		return "stage-" + strconv.Itoa(j)
	case typeForum:
		return "forum-" + strconv.Itoa(j)
	}
	return "chat-" + strconv.Itoa(j)
}

// imageHash returns 32 hex digits, the form of Discord's image hashes.
func imageHash(r uint64, salt uint64) string {
	return fmt.Sprintf("%016x%016x", mix(r, salt), mix(r, salt, 1))
}
