package webhook

import (
	"time"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/event"
)

// Recorder is the store's recorder of the webhooks' outbox: it writes each change's deliveries
// in the change's transaction (Enqueue). Every change goes to every webhook subscribed to its
// type, whoever may see it: a webhook is the forum's integration, not a user's.
type Recorder struct {
	Now func() time.Time // nil: time.Now
}

// Record implements store.Recorder.
func (r Recorder) Record(tx *gorm.DB, changes []event.Change) error {
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	cs := make([]Change, len(changes))
	for i, c := range changes {
		cs[i] = Change{Type: c.Type, ConversationID: c.ConversationID, MessageID: c.MessageID, ActorID: c.ActorID, At: c.At}
	}
	return Enqueue(tx, cs, now())
}
