package store

import (
	"context"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/shared/db"
)

// The conversation list. A user's conversations are read from conversation_participants_inbox
// (user_id, last_message_date DESC, conversation_id DESC, starred, last_read_date) WHERE left_state
// = 0: the page is an index range in the list's order, skipped to by OFFSET over the index alone
// (no conversation row is read for the pages before), and only its rows are joined to their
// conversations (their recipients in one more statement). The count reads the same index.

// listWhere is the WHERE clause of the user's conversations matching f, and its arguments. The
// join to conversations (alias c) is needed only by the starter and receiver filters.
func listWhere(userID int64, f conversation.ListFilter) (from, where string, args []any) {
	from = "conversation_participants p"
	conds := []string{"p.user_id = ?", "p.left_state = 0"}
	args = []any{userID}
	if f.StarterID != 0 || f.ReceiverID != 0 {
		from += " JOIN conversations c ON c.conversation_id = p.conversation_id"
	}
	if f.StarterID != 0 {
		conds = append(conds, "c.user_id = ?")
		args = append(args, f.StarterID)
	}
	if f.ReceiverID != 0 {
		conds = append(conds, `EXISTS (SELECT 1 FROM conversation_participants r
  WHERE r.conversation_id = p.conversation_id AND r.user_id = ? AND r.user_id <> c.user_id)`)
		args = append(args, f.ReceiverID)
	}
	if f.Starred != nil {
		conds = append(conds, "p.starred = ?")
		args = append(args, *f.Starred)
	}
	if f.Unread != nil {
		if *f.Unread {
			conds = append(conds, "p.last_message_date > p.last_read_date")
		} else {
			conds = append(conds, "p.last_message_date <= p.last_read_date")
		}
	}
	return from, strings.Join(conds, " AND "), args
}

// ListConversations implements conversation.WriteStore.
func (s *Store) ListConversations(ctx context.Context, userID int64, f conversation.ListFilter, page int64) (conversation.ListRows, error) {
	return db.ReadValue(ctx, s.reads, s.db, userID, func(gdb *gorm.DB) (conversation.ListRows, error) {
		return listConversations(gdb.WithContext(ctx), userID, f, page)
	})
}

func listConversations(q *gorm.DB, userID int64, f conversation.ListFilter, page int64) (conversation.ListRows, error) {
	var out conversation.ListRows
	from, where, args := listWhere(userID, f)
	err := q.Raw(`SELECT COUNT(*), (SELECT discussions_per_page FROM forum_options)
FROM `+from+` WHERE `+where, args...).Row().Scan(&out.Total, &out.PerPage)
	if err != nil {
		return out, fmt.Errorf("count conversations: %w", err)
	}
	offset := (page - 1) * out.PerPage
	out.Conversations = []conversation.ConversationRow{}
	if offset >= out.Total {
		return out, nil // an empty list, or a page past the last (the service says which)
	}
	rows, err := q.Raw(`
SELECT `+conversationColumns+`
FROM (SELECT p.conversation_id, p.last_message_date FROM `+from+` WHERE `+where+`
      ORDER BY p.last_message_date DESC, p.conversation_id DESC LIMIT ? OFFSET ?) page
JOIN conversation_participants p ON p.conversation_id = page.conversation_id AND p.user_id = ?
JOIN conversations c ON c.conversation_id = p.conversation_id
JOIN users cu ON cu.user_id = c.user_id
ORDER BY page.last_message_date DESC, page.conversation_id DESC`, append(args, out.PerPage, offset, userID)...).Rows()
	if err != nil {
		return out, fmt.Errorf("list conversations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var c conversation.ConversationRow
		if err := rows.Scan(scanConversation(nil, &c)...); err != nil {
			return out, fmt.Errorf("list conversations: %w", err)
		}
		out.Conversations = append(out.Conversations, c)
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("list conversations: %w", err)
	}
	return out, pageRecipients(q, out.Conversations)
}

// pageRecipients reads the recipients of a page of conversations in one statement (as recipients
// does for one).
func pageRecipients(q *gorm.DB, convs []conversation.ConversationRow) error {
	if len(convs) == 0 {
		return nil
	}
	at := make(map[int64]int, len(convs))
	ids := make([]int64, len(convs))
	for i := range convs {
		convs[i].Recipients = []conversation.Recipient{}
		at[convs[i].ConversationID] = i
		ids[i] = convs[i].ConversationID
	}
	rows, err := q.Raw(`
SELECT p.conversation_id, p.user_id, u.username
FROM conversation_participants p
JOIN conversations c ON c.conversation_id = p.conversation_id
JOIN users u ON u.user_id = p.user_id
WHERE p.conversation_id IN ? AND p.user_id <> c.user_id
ORDER BY p.conversation_id, p.user_id`, ids).Rows()
	if err != nil {
		return fmt.Errorf("read recipients: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id int64
			r  conversation.Recipient
		)
		if err := rows.Scan(&id, &r.UserID, &r.Username); err != nil {
			return fmt.Errorf("read recipients: %w", err)
		}
		c := &convs[at[id]]
		c.Recipients = append(c.Recipients, r)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read recipients: %w", err)
	}
	return nil
}
