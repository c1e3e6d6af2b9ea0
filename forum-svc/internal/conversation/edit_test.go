package conversation

import (
	"errors"
	"testing"
)

func TestCheckEdit(t *testing.T) {
	const sent = 1_000_000
	open := EditTarget{AuthorID: 1, MessageDate: sent, ConversationOpen: true}
	closed := EditTarget{AuthorID: 1, MessageDate: sent}
	cases := []struct {
		name    string
		target  EditTarget
		user    int64
		date    int64
		limit   int64
		want    error
		minutes int64 // of a *EditTimeLimitError
	}{
		{"author, no limit, years later", open, 1, sent + 100_000_000, 0, nil, 0},
		{"author, at once", open, 1, sent, 10, nil, 0},
		{"author, last second of the limit", open, 1, sent + 600, 10, nil, 0},
		{"author, a second past the limit", open, 1, sent + 601, 10, &EditTimeLimitError{}, 10},
		{"author, one-minute limit, 61 s", open, 1, sent + 61, 1, &EditTimeLimitError{}, 1},
		{"author, a clock behind the message", open, 1, sent - 5, 1, nil, 0},
		{"another user", open, 2, sent, 0, ErrNoPermission, 0},
		{"another user, past the limit", open, 2, sent + 601, 10, ErrNoPermission, 0},
		{"closed, author", closed, 1, sent, 0, ErrConversationClosed, 0},
		{"closed, another user past the limit", closed, 2, sent + 601, 10, ErrConversationClosed, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckEdit(c.target, MessageEdit{UserID: c.user, Date: c.date, TimeLimit: c.limit})
			var late *EditTimeLimitError
			switch {
			case c.want == nil:
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			case c.minutes > 0:
				if !errors.As(err, &late) || late.Minutes != c.minutes {
					t.Fatalf("err %v; want the time limit of %d minutes", err, c.minutes)
				}
			case !errors.Is(err, c.want):
				t.Fatalf("err %v; want %v", err, c.want)
			}
		})
	}
}
