package conversation

import (
	"errors"
	"testing"
)

func TestChangeReaction(t *testing.T) {
	for _, c := range []struct {
		current, id int64
		want        ReactionChange
	}{
		{0, 1, ReactionChange{ReactionInserted, 1, 1}},
		{0, 5, ReactionChange{ReactionInserted, 5, 0}},
		{1, 1, ReactionChange{ReactionDeleted, 0, -1}},
		{6, 6, ReactionChange{ReactionDeleted, 0, 0}},
		{1, 2, ReactionChange{ReactionInserted, 2, 0}},
		{2, 5, ReactionChange{ReactionInserted, 5, -1}},
		{6, 4, ReactionChange{ReactionInserted, 4, 1}},
	} {
		if got := ChangeReaction(c.current, c.id); got != c.want {
			t.Errorf("ChangeReaction(%d, %d) = %+v, want %+v", c.current, c.id, got, c.want)
		}
	}
}

func TestParseReaction(t *testing.T) {
	for _, c := range []struct {
		values []string
		want   int64
		err    error
	}{
		{nil, 0, &MissingInputError{}},
		{[]string{"1"}, 1, nil},
		{[]string{"6"}, 6, nil},
		{[]string{"06"}, 6, nil},
		{[]string{"7"}, 0, &InvalidInputError{}},
		{[]string{"0"}, 0, &InvalidInputError{}},
		{[]string{"-1"}, 0, &InvalidInputError{}},
		{[]string{"1", "1"}, 0, &InvalidInputError{}},
		{[]string{"Like"}, 0, &InvalidInputError{}},
	} {
		f := Fields{}
		if c.values != nil {
			f[FieldReactionID] = c.values
		}
		got, err := ParseReaction(f)
		var missing *MissingInputError
		var invalid *InvalidInputError
		switch c.err.(type) {
		case nil:
			if err != nil || got != c.want {
				t.Errorf("%q: %d, %v; want %d", c.values, got, err, c.want)
			}
		case *MissingInputError:
			if !errors.As(err, &missing) {
				t.Errorf("%q: %v, want missing input", c.values, err)
			}
		case *InvalidInputError:
			if !errors.As(err, &invalid) || invalid.Field != FieldReactionID {
				t.Errorf("%q: %v, want invalid reaction_id", c.values, err)
			}
		}
	}
}

func TestConversationPermissions(t *testing.T) {
	for _, c := range []struct {
		name            string
		open, invite    bool
		user            int64
		attachmentWrite bool
		want            Permissions
	}{
		{"starter, open", true, false, 1, false, Permissions{Edit: true, Reply: true, Invite: true}},
		{"starter, closed", false, true, 1, true, Permissions{Edit: true}},
		{"recipient, open", true, false, 2, false, Permissions{Reply: true}},
		{"recipient, open invite", true, true, 2, false, Permissions{Reply: true, Invite: true}},
		{"recipient, open invite, closed", false, true, 2, true, Permissions{}},
		{"recipient, attachment:write", true, false, 2, true, Permissions{Reply: true, UploadAttachment: true}},
	} {
		got := ConversationPermissions(ConversationRow{UserID: 1, Open: c.open, OpenInvite: c.invite}, c.user, c.attachmentWrite)
		if got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

// Any sequence of reactions by one user leaves the score's running sum equal to the score of the
// reaction that user ends with, and ParseReaction takes exactly the ids of Reactions.
func FuzzReactions(f *testing.F) {
	f.Add([]byte{1, 1, 2, 5, 5, 6, 4})
	f.Add([]byte("06"))
	f.Fuzz(func(t *testing.T, seq []byte) {
		var current, sum int64
		for _, b := range seq {
			raw := string(rune('0' + b%10))
			id, err := ParseReaction(Fields{FieldReactionID: {raw}})
			_, known := ReactionScore(int64(b % 10))
			if (err == nil) != known {
				t.Fatalf("ParseReaction(%q) = %d, %v; known %v", raw, id, err, known)
			}
			if err != nil {
				continue
			}
			c := ChangeReaction(current, id)
			sum += c.Delta
			current = c.Store
			if (c.Action == ReactionDeleted) != (c.Store == 0) {
				t.Fatalf("%+v: action and stored reaction disagree", c)
			}
		}
		if want, _ := ReactionScore(current); sum != want {
			t.Fatalf("running score %d, ending with reaction %d of score %d", sum, current, want)
		}
		// Any text: a reaction id or refused.
		id, err := ParseReaction(Fields{FieldReactionID: {string(seq)}})
		if _, known := ReactionScore(id); err == nil && !known {
			t.Fatalf("ParseReaction(%q) = %d, not a reaction", seq, id)
		}
	})
}
