package webhook

import (
	"context"
	"errors"

	"forumstats.local/forum-svc/internal/conversation"
)

// APIReader is what APIRenderer reads: the conversation service, as the API reads for a user.
type APIReader interface {
	Message(ctx context.Context, userID, messageID int64) (conversation.Message, error)
	Conversation(ctx context.Context, userID, conversationID int64) (conversation.Conversation, error)
}

// APIRenderer renders a delivery's data as the API shows the change's object to the user who
// made the change: a webhook is an integration with no user of its own, and the actor is the one
// participant sure to have seen the change. The message (with its conversation) when the change
// names one, else the conversation; neither when the actor can no longer see it (they left), the
// ids then being all the delivery says. It reads the primary, so that a change just committed is
// there to read.
type APIRenderer struct{ Reader APIReader }

// Data implements Renderer.
func (r APIRenderer) Data(ctx context.Context, c Change) (Data, error) {
	d := Data{ConversationID: c.ConversationID, MessageID: c.MessageID, ActorID: c.ActorID}
	if c.MessageID != 0 {
		m, err := r.Reader.Message(ctx, c.ActorID, c.MessageID)
		if err == nil {
			d.Message = m
		}
		return d, hidden(err)
	}
	conv, err := r.Reader.Conversation(ctx, c.ActorID, c.ConversationID)
	if err == nil {
		d.Conversation = conv
	}
	return d, hidden(err)
}

// hidden drops the errors that say the actor cannot see the object.
func hidden(err error) error {
	if errors.Is(err, conversation.ErrConversationNotFound) || errors.Is(err, conversation.ErrMessageNotFound) {
		return nil
	}
	return err
}
