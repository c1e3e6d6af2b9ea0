// Package event holds forum-svc's live changes: what a write changed and who may see it
// (Change, recorded by the store inside the write's transaction), and the per-user stream that
// delivers them (Hub, Stream).
package event

// Change is one thing a write changed, for the users who may see it. The store builds a write's
// changes inside its transaction, after the change, and hands them to its recorders in order: a
// reply's message_created comes before anything else naming the message.
type Change struct {
	Type           string  // one of the Type* constants
	ConversationID int64   // the conversation changed or holding the changed message
	MessageID      int64   // 0 when none
	ActorID        int64   // the user who made the change
	UserIDs        []int64 // who may see it: the users whose streams get it
	// EventIDs are the ids the event log gave the change, one for each of UserIDs, in the same
	// order (set by the log's recorder in the transaction; nil without it): with them, the hub
	// hands the committed events to this process's streams without their reading the log.
	EventIDs []int64
	At       int64 // unix seconds of the change (the write's date)
}

// The types of change, named as the stream's events are.
const (
	// TypeConversationCreated: a conversation started (for all its participants) or a user invited
	// into one (for the invited).
	TypeConversationCreated = "conversation_created"
	// TypeMessageCreated: a reply (MessageID), for the participants who have not left after it.
	TypeMessageCreated = "message_created"
	// TypeMessageUpdated: a message edited, for the conversation's participants.
	TypeMessageUpdated = "message_updated"
	// TypeReactionChanged: a reaction added, changed or removed on MessageID, for the participants.
	TypeReactionChanged = "reaction_changed"
	// TypeConversationUpdated: the conversation's title or settings changed, or users were invited
	// (for the participants already in it), or the user starred it (for that user only).
	TypeConversationUpdated = "conversation_updated"
	// TypeReadStateChanged: the user marked the conversation read or unread (for that user only).
	TypeReadStateChanged = "read_state_changed"
	// TypeParticipantLeft: the user left the conversation (for that user only: the others see no
	// change when someone leaves).
	TypeParticipantLeft = "participant_left"
)

// Types lists every type of change, in the order above.
var Types = []string{TypeConversationCreated, TypeMessageCreated, TypeMessageUpdated, TypeReactionChanged,
	TypeConversationUpdated, TypeReadStateChanged, TypeParticipantLeft}
