package conversation

import (
	"context"
	"errors"
)

// Reactions to messages, as XenForo has them: one reaction per user and message; reacting with it
// again takes it back, another one replaces it. A reaction's score adds to the message's
// reaction_score (the positive ones count 1, the others 0). Nobody reacts to their own message.

// Reaction is one reaction a user may give.
type Reaction struct {
	ID    int64
	Title string
	Score int64
}

// Reactions are XenForo's default reactions, with its ids and scores.
var Reactions = []Reaction{
	{1, "Like", 1},
	{2, "Love", 1},
	{3, "Haha", 1},
	{4, "Wow", 1},
	{5, "Sad", 0},
	{6, "Angry", 0},
}

// FieldReactionID is the react form's field.
const FieldReactionID = "reaction_id"

// Answers of a reaction, as XenForo names them.
const (
	ReactionInserted = "insert" // given, or replacing another
	ReactionDeleted  = "delete" // taken back
)

// ErrReactOwnContent: a user reacts to their own message.
var ErrReactOwnContent = errors.New("reacting to your own content is considered cheating")

// ReactionScore is the score of reaction id; ok is false for no such reaction.
func ReactionScore(id int64) (score int64, ok bool) {
	for _, r := range Reactions {
		if r.ID == id {
			return r.Score, true
		}
	}
	return 0, false
}

// ParseReaction reads the required `reaction_id`: missing is *MissingInputError, anything but
// the id of a reaction of Reactions is *InvalidInputError.
func ParseReaction(f Fields) (int64, error) {
	if len(f[FieldReactionID]) == 0 {
		return 0, &MissingInputError{Fields: []string{FieldReactionID}}
	}
	id, err := f.ID(FieldReactionID)
	if err != nil {
		return 0, err
	}
	if _, ok := ReactionScore(id); !ok {
		return 0, &InvalidInputError{Field: FieldReactionID}
	}
	return id, nil
}

// CanReact tells whether userID may react to a message by authorID: not to their own.
func CanReact(authorID, userID int64) bool { return authorID != userID }

// ReactionChange is what a reaction does to the stored one.
type ReactionChange struct {
	Action string // ReactionInserted or ReactionDeleted
	Store  int64  // the reaction to store; 0: none
	Delta  int64  // the change of the message's reaction_score
}

// ChangeReaction is the change of reacting with id when the user's stored reaction is current (0:
// none): the same id takes it back, another one replaces it. Both ids are known reactions (or 0).
func ChangeReaction(current, id int64) ReactionChange {
	before, _ := ReactionScore(current)
	if current == id {
		return ReactionChange{Action: ReactionDeleted, Store: 0, Delta: -before}
	}
	after, _ := ReactionScore(id)
	return ReactionChange{Action: ReactionInserted, Store: id, Delta: after - before}
}

// NewReaction is a reaction to apply.
type NewReaction struct {
	MessageID  int64
	UserID     int64
	ReactionID int64
	Date       int64
}

// ReactAnswer is the answer of a reaction.
type ReactAnswer struct {
	Success bool   `json:"success"`
	Action  string `json:"action"`
}

// React applies the reaction of f (`reaction_id`) by userID to the message; render turns the
// action into the answer's body.
func (s *Service) React(ctx context.Context, userID, messageID int64, f Fields, retry *Retry, render func(ReactAnswer) ([]byte, error)) (Answer, error) {
	release, err := s.running.take(retry)
	if err != nil {
		return Answer{}, err
	}
	defer release()
	id, err := ParseReaction(f)
	if err != nil {
		return Answer{}, err
	}
	r := NewReaction{MessageID: messageID, UserID: userID, ReactionID: id, Date: s.now().Unix()}
	retry.stamp(r.Date)
	return s.store.React(ctx, r, retry, func(action string) ([]byte, error) {
		return render(ReactAnswer{Success: true, Action: action})
	})
}
