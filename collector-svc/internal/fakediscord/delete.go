package fakediscord

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Deleted messages leave the streams' arithmetic alone: the fake keeps them in a set per channel
// that search, Count and /_fake/count subtract and the gateway announces, so that every reader
// of the store sees one truth.

var errUnknownMessage = &apiErr{http.StatusNotFound, 10008, "Unknown Message"}

// Delete removes messages of a channel: the search and Count stop counting them, and every
// gateway session of the guild's shard gets MESSAGE_DELETE (one id) or MESSAGE_DELETE_BULK (more).
// Each id must be a message of the channel already stamped (by the fake's clock) and not deleted
// yet, else nothing is deleted and the error is Discord's Unknown Message (or Unknown Channel).
func (s *Server) Delete(channelID uint64, ids ...uint64) error {
	g := s.chanGuild[channelID]
	if g == nil || !g.byID[channelID].holdsMessages() {
		return errUnknownChannel
	}
	if len(ids) == 0 {
		return errUnknownMessage
	}
	c := g.byID[channelID]
	// The gateway's lock is held across the check, the record and the announcement, so that
	// every session dispatches a message's MESSAGE_CREATE before its deletion, and a message is
	// deleted once.
	s.gw.mu.Lock()
	defer s.gw.mu.Unlock()
	now := s.now().UnixMilli()
	s.catchUpGuild(g, now)
	s.dmu.Lock()
	set := s.deleted[channelID]
	seen := map[uint64]bool{}
	for _, id := range ids {
		ms, low := idMs(id)
		l, ok := c.msgs.at(ms)
		if !ok || l != low || ms > now || set[id] || seen[id] {
			s.dmu.Unlock()
			return errUnknownMessage
		}
		seen[id] = true
	}
	if set == nil {
		set = map[uint64]bool{}
		s.deleted[channelID] = set
	}
	for _, id := range ids {
		set[id] = true
	}
	s.dmu.Unlock()
	s.announceDelete(g, channelID, ids)
	return nil
}

// isDeleted reports whether the message was deleted.
func (s *Server) isDeleted(channelID, id uint64) bool {
	s.dmu.RLock()
	defer s.dmu.RUnlock()
	return s.deleted[channelID][id]
}

// deletedCount counts the deleted messages of the channel with lo <= id < hi.
func (s *Server) deletedCount(channelID, lo, hi uint64) int64 {
	s.dmu.RLock()
	defer s.dmu.RUnlock()
	var n int64
	for id := range s.deleted[channelID] {
		if id >= lo && id < hi {
			n++
		}
	}
	return n
}

// deletedMs counts the deleted messages of the channel stamped in [a, b) (Unix milliseconds).
func (s *Server) deletedMs(channelID uint64, a, b int64) int64 {
	s.dmu.RLock()
	defer s.dmu.RUnlock()
	var n int64
	for id := range s.deleted[channelID] {
		if ms, _ := idMs(id); ms >= a && ms < b {
			n++
		}
	}
	return n
}

// liveLatest is stream.latest without the deleted messages.
func (s *Server) liveLatest(c *channel, lo, hi uint64, limit int) []Message {
	s.dmu.RLock()
	gone := len(s.deleted[c.id])
	s.dmu.RUnlock()
	if gone == 0 {
		return c.msgs.latest(c.id, lo, hi, limit)
	}
	out := c.msgs.latest(c.id, lo, hi, limit+gone)
	out = slices.DeleteFunc(out, func(m Message) bool { return s.isDeleted(c.id, m.ID) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// serveDelete answers POST /_fake/delete?channel_id=C&ids=I[,I...].
func (s *Server) serveDelete(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	cid, err := strconv.ParseUint(q.Get("channel_id"), 10, 64)
	if err != nil {
		writeErr(w, errUnknownChannel)
		return
	}
	var ids []uint64
	for _, f := range strings.Split(q.Get("ids"), ",") {
		id, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"message": "ids must be message ids separated by commas", "code": 50035})
			return
		}
		ids = append(ids, id)
	}
	if err := s.Delete(cid, ids...); err != nil {
		var e *apiErr
		if errors.As(err, &e) {
			writeErr(w, e)
			return
		}
		writeErr(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
