package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/forum-svc/internal/event"
	"forumstats.local/shared/db"
)

// Recorder takes the changes of a write inside the write's transaction, after the change (at the
// end of the transaction, right before its commit): what it writes commits with the write, and
// its error rolls the write back (the write then answers that error). The event log and the
// webhooks' outbox are recorders.
type Recorder interface {
	Record(tx *gorm.DB, changes []event.Change) error
}

// AddRecorder makes r take the changes of every later write, after the recorders added before
// it. Call it before serving: the list is not guarded against concurrent writes.
func (s *Store) AddRecorder(r Recorder) { s.recorders = append(s.recorders, r) }

// AddCommitted makes fn take every write's changes inside its transaction, after the recorders,
// right before the commit, and run what it returns (when not nil) once the write has committed, in
// the writing goroutine: the event stream's fan-out, which renders the events before the commit
// and must never announce a change a reader cannot find yet, nor one that rolled back. The store's
// reads with fn's ctx (Message, Conversation, Me) go through the transaction, so they see the
// write. Call it before serving.
func (s *Store) AddCommitted(fn func(ctx context.Context, changes []event.Change) (committed func())) {
	s.committed = append(s.committed, fn)
}

// txKey names, in the context AddCommitted's functions get, the write's transaction.
type txKey struct{}

// read runs fn on the write's transaction when ctx names one (AddCommitted's functions read what
// the write leaves), and otherwise as the store's reads run (db.ReadOn: the replica when routed).
func (s *Store) read(ctx context.Context, userID int64, fn func(*gorm.DB) error) error {
	if tx, ok := ctx.Value(txKey{}).(*gorm.DB); ok {
		return fn(tx)
	}
	return db.ReadOn(ctx, s.reads, s.db, userID, fn)
}

// pendingKey names, in a write transaction's context, the changes it recorded so far.
type pendingKey struct{}

type pendingChanges struct {
	changes []event.Change
	// final is set once the write's own statements are over (writeDone, or its function
	// returned): from then on the transaction changes none of the rows its answer and its events'
	// renderings read (the recorders write tables of their own), so each of those reads is made
	// once and reused (a reply's answer is its author's rendering too; every participant's
	// rendering shows the same recipients).
	final *finalReads
}

// finalReads are the reads of a write's transaction made after its last change (pendingChanges).
type finalReads struct {
	messages      map[[2]int64]messageRead                  // by message and user
	conversations map[[2]int64]conversation.ConversationRow // by conversation and user
	recipients    map[int64][]conversation.Recipient        // by conversation
}

type messageRead struct {
	m conversation.MessageRow
	c conversation.ConversationRow
}

// writeDone marks the write's changes over: the reads on tx from here on are kept for the rest of
// the transaction (pendingChanges.final). Call it after the write's last statement that changes
// a message, a conversation or a participant, and only then.
func writeDone(tx *gorm.DB) {
	if p, ok := tx.Statement.Context.Value(pendingKey{}).(*pendingChanges); ok && p.final == nil {
		p.final = &finalReads{messages: map[[2]int64]messageRead{}, conversations: map[[2]int64]conversation.ConversationRow{},
			recipients: map[int64][]conversation.Recipient{}}
	}
}

// finalOf is q's transaction's reads after its last change; nil outside a recording transaction,
// or before writeDone.
func finalOf(q *gorm.DB) *finalReads {
	if p, ok := q.Statement.Context.Value(pendingKey{}).(*pendingChanges); ok {
		return p.final
	}
	return nil
}

// tx runs fn in a transaction on the primary. The changes fn records (record) go to the
// recorders at its end, still in the transaction, right before the commit: a recorder's rows (the
// event log's per-user counters) stay locked for as short a time as the commit allows, since
// every write that touches one of the same users waits for them. Once committed, the changes go to
// the AddCommitted functions.
func (s *Store) tx(ctx context.Context, fn func(tx *gorm.DB) error) error {
	if !s.recording() {
		return s.db.WithContext(ctx).Transaction(fn)
	}
	p := &pendingChanges{}
	var after []func()
	err := s.db.WithContext(context.WithValue(ctx, pendingKey{}, p)).Transaction(func(tx *gorm.DB) error {
		if err := fn(tx); err != nil {
			return err
		}
		if len(p.changes) == 0 {
			return nil
		}
		writeDone(tx)
		for _, r := range s.recorders {
			if err := r.Record(tx, p.changes); err != nil {
				return fmt.Errorf("record changes: %w", err)
			}
		}
		txCtx := context.WithValue(tx.Statement.Context, txKey{}, tx)
		for _, f := range s.committed {
			if a := f(txCtx, p.changes); a != nil {
				after = append(after, a)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, a := range after {
		a()
	}
	return nil
}

// record adds changes to the write's list, which the recorders take at the end of its
// transaction (tx), in the order they were recorded.
func (s *Store) record(tx *gorm.DB, changes ...event.Change) error {
	if p, ok := tx.Statement.Context.Value(pendingKey{}).(*pendingChanges); ok {
		p.changes = append(p.changes, changes...)
	}
	return nil
}

// recording reports whether a write needs to build its changes (some recorder takes them): the
// participants' query costs a statement.
func (s *Store) recording() bool { return len(s.recorders) > 0 || len(s.committed) > 0 }

// nowUnix is the date of a write whose input carries none.
func (s *Store) nowUnix() int64 {
	if s.now != nil {
		return s.now().Unix()
	}
	return time.Now().Unix()
}

// SetClock makes the writes without a date of their own date their changes by now (tests).
func (s *Store) SetClock(now func() time.Time) { s.now = now }

// activeParticipants lists, in ascending order, the users in the conversation who have not left
// it: those who see its changes.
func activeParticipants(tx *gorm.DB, conversationID int64) ([]int64, error) {
	var ids []int64
	err := tx.Raw(`SELECT user_id FROM conversation_participants WHERE conversation_id = ? AND left_state = 0 ORDER BY user_id`,
		conversationID).Scan(&ids).Error
	if err != nil {
		return nil, fmt.Errorf("read participants: %w", err)
	}
	return ids, nil
}

// participantsIn runs q, a statement on a conversation's participants RETURNING user_id and
// left_state, and lists, in ascending order, those it leaves in the conversation (not left).
func participantsIn(tx *gorm.DB, q string, args ...any) ([]int64, error) {
	rows, err := tx.Raw(q, args...).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id, state int64
		if err := rows.Scan(&id, &state); err != nil {
			return nil, err
		}
		if state == stateIn {
			ids = append(ids, id)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.Sort(ids)
	return ids, nil
}

// recordForParticipants records one change of the conversation for its active participants.
func (s *Store) recordForParticipants(tx *gorm.DB, c event.Change) error {
	if !s.recording() {
		return nil
	}
	users, err := activeParticipants(tx, c.ConversationID)
	if err != nil {
		return err
	}
	c.UserIDs = users
	return s.record(tx, c)
}

// The lookups and keeps of finalReads do nothing on nil (no transaction, or its changes not over).
// What they return is the caller's: the slices are copied.

func (f *finalReads) message(messageID, userID int64) (messageRead, bool) {
	if f == nil {
		return messageRead{}, false
	}
	r, ok := f.messages[[2]int64{messageID, userID}]
	r.m.Attachments = slices.Clone(r.m.Attachments)
	r.c.Recipients = slices.Clone(r.c.Recipients)
	return r, ok
}

func (f *finalReads) keepMessage(userID int64, m conversation.MessageRow, c conversation.ConversationRow) {
	if f != nil {
		m.Attachments, c.Recipients = slices.Clone(m.Attachments), slices.Clone(c.Recipients)
		f.messages[[2]int64{m.MessageID, userID}] = messageRead{m, c}
	}
}

func (f *finalReads) conversation(conversationID, userID int64) (conversation.ConversationRow, bool) {
	if f == nil {
		return conversation.ConversationRow{}, false
	}
	c, ok := f.conversations[[2]int64{conversationID, userID}]
	c.Recipients = slices.Clone(c.Recipients)
	return c, ok
}

func (f *finalReads) keepConversation(userID int64, c conversation.ConversationRow) {
	if f != nil {
		c.Recipients = slices.Clone(c.Recipients)
		f.conversations[[2]int64{c.ConversationID, userID}] = c
	}
}

func (f *finalReads) recipientsOf(conversationID int64) ([]conversation.Recipient, bool) {
	if f == nil {
		return nil, false
	}
	r, ok := f.recipients[conversationID]
	return slices.Clone(r), ok
}

func (f *finalReads) keepRecipients(conversationID int64, r []conversation.Recipient) {
	if f != nil && r != nil {
		f.recipients[conversationID] = slices.Clone(r)
	}
}
