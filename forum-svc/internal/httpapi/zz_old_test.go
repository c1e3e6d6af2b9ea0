package httpapi

import (
	"strconv"

	"forumstats.local/forum-svc/internal/conversation"
)

func oldAppendMessagePage(b []byte, p *conversation.MessagePage) (_ []byte, ok bool) {
	b = append(b, `{"messages":`...)
	if p.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range p.Messages {
			m := &p.Messages[i]
			if m.Conversation != nil {
				return b, false
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"message_id":`...)
			b = strconv.AppendInt(b, m.MessageID, 10)
			b = append(b, `,"conversation_id":`...)
			b = strconv.AppendInt(b, m.ConversationID, 10)
			b = append(b, `,"message":`...)
			b = appendJSONString(b, m.Message)
			b = append(b, `,"message_date":`...)
			b = strconv.AppendInt(b, m.MessageDate, 10)
			b = append(b, `,"user_id":`...)
			b = strconv.AppendInt(b, m.UserID, 10)
			b = append(b, `,"username":`...)
			b = appendJSONString(b, m.Username)
			b = append(b, `,"is_unread":`...)
			b = strconv.AppendBool(b, m.IsUnread)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	pg := &p.Pagination
	b = append(b, `,"pagination":{"current_page":`...)
	b = strconv.AppendInt(b, pg.CurrentPage, 10)
	b = append(b, `,"last_page":`...)
	b = strconv.AppendInt(b, pg.LastPage, 10)
	b = append(b, `,"per_page":`...)
	b = strconv.AppendInt(b, pg.PerPage, 10)
	b = append(b, `,"shown":`...)
	b = strconv.AppendInt(b, pg.Shown, 10)
	b = append(b, `,"total":`...)
	b = strconv.AppendInt(b, pg.Total, 10)
	b = append(b, "}}"...)
	return b, true
}

