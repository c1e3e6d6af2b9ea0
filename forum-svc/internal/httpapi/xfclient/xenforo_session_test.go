package xfclient_test

import (
	"context"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"forumstats.local/forum-svc/internal/httpapi/xfclient/xenforo"
)

// xenforoSession drives the conversation through the client generated from XenForo's own
// document, whose base URL is the forum's /api/, as a XenForo client's is its forum's.
type xenforoSession struct {
	doc *openapi3.T
	c   *xenforo.ClientWithResponses
}

func newXenForoSession(t *testing.T, doc *openapi3.T, baseURL string, rec *recorder) session {
	c, err := xenforo.NewClientWithResponses(baseURL+"/api/", xenforo.WithHTTPClient(rec))
	if err != nil {
		t.Fatal(err)
	}
	return &xenforoSession{doc: doc, c: c}
}

// xenforoExtras are the fields the service adds to XenForo's answers, by operation; a XenForo
// client, reading what it knows, never sees them. The star's answer tells the new state, which
// XenForo's leaves to another read (a star without the field toggles).
var xenforoExtras = map[string][]string{"post /conversations/{id}/star": {"is_starred"}}

func (s *xenforoSession) extra(op string) []string { return xenforoExtras[op] }

func as(user int64) xenforo.RequestEditorFn { return actingAs(user) }

func (s *xenforoSession) start(t *testing.T, user int64, recipients []int64, title, message string) conv {
	t.Helper()
	body := xenforo.PostConversationsFormdataRequestBody{Title: title, Message: message}
	for _, r := range recipients {
		body.RecipientIds = append(body.RecipientIds, int(r))
	}
	r, err := s.c.PostConversationsWithFormdataBodyWithResponse(context.Background(), body, as(user))
	return xenforoConv(answer(t, s.doc, "post /conversations/", s.extra("post /conversations/"), err, r.HTTPResponse, r.Body, r.JSON200).Conversation)
}

func (s *xenforoSession) newKey(t *testing.T, user, conversationID int64) string {
	t.Helper()
	id := int(conversationID)
	body := xenforo.PostAttachmentsNewKeyFormdataRequestBody{Type: "conversation_message"}
	body.Context = &struct {
		ConversationId *int `json:"conversation_id,omitempty"`
		MessageId      *int `json:"message_id,omitempty"`
	}{ConversationId: &id}
	r, err := s.c.PostAttachmentsNewKeyWithFormdataBodyWithResponse(context.Background(), body, as(user))
	return val(answer(t, s.doc, "post /attachments/new-key", s.extra("post /attachments/new-key"), err, r.HTTPResponse, r.Body, r.JSON200).Key)
}

func (s *xenforoSession) upload(t *testing.T, user int64, key, filename string, data []byte) string {
	t.Helper()
	contentType, body := multipartBody(t, [][2]string{{"key", key}}, filename, data)
	r, err := s.c.PostAttachmentsWithBodyWithResponse(context.Background(), contentType, body, as(user))
	a := answer(t, s.doc, "post /attachments/", s.extra("post /attachments/"), err, r.HTTPResponse, r.Body, r.JSON200).Attachment
	if a == nil {
		t.Fatalf("upload: no attachment: %s", r.Body)
	}
	return val(a.Filename)
}

func (s *xenforoSession) reply(t *testing.T, user, conversationID int64, message, attachmentKey string) msg {
	t.Helper()
	body := xenforo.PostConversationMessagesFormdataRequestBody{ConversationId: int(conversationID), Message: message}
	if attachmentKey != "" {
		body.AttachmentKey = &attachmentKey
	}
	r, err := s.c.PostConversationMessagesWithFormdataBodyWithResponse(context.Background(), body, as(user))
	return xenforoMsg(answer(t, s.doc, "post /conversation-messages/", s.extra("post /conversation-messages/"), err, r.HTTPResponse, r.Body, r.JSON200).Message)
}

func (s *xenforoSession) react(t *testing.T, user, messageID, reactionID int64) string {
	t.Helper()
	body := xenforo.PostConversationMessagesIdReactFormdataRequestBody{ReactionId: int(reactionID)}
	r, err := s.c.PostConversationMessagesIdReactWithFormdataBodyWithResponse(context.Background(), int(messageID), body, as(user))
	return val(answer(t, s.doc, "post /conversation-messages/{id}/react", s.extra("post /conversation-messages/{id}/react"), err, r.HTTPResponse, r.Body, r.JSON200).Action)
}

func (s *xenforoSession) list(t *testing.T, user int64, starred bool) []conv {
	t.Helper()
	params := &xenforo.GetConversationsParams{}
	if starred {
		params.Starred = &starred
	}
	r, err := s.c.GetConversationsWithResponse(context.Background(), params, as(user))
	var out []conv
	for _, c := range val(answer(t, s.doc, "get /conversations/", s.extra("get /conversations/"), err, r.HTTPResponse, r.Body, r.JSON200).Conversations) {
		out = append(out, xenforoConv(&c))
	}
	return out
}

func (s *xenforoSession) withMessages(t *testing.T, user, conversationID, page int64) (conv, []msg, pagination) {
	t.Helper()
	with, p := true, int(page)
	params := &xenforo.GetConversationsIdParams{WithMessages: &with, Page: &p}
	r, err := s.c.GetConversationsIdWithResponse(context.Background(), int(conversationID), params, as(user))
	a := answer(t, s.doc, "get /conversations/{id}/", s.extra("get /conversations/{id}/"), err, r.HTTPResponse, r.Body, r.JSON200)
	var msgs []msg
	for _, m := range val(a.Messages) {
		msgs = append(msgs, xenforoMsg(&m))
	}
	if a.Pagination == nil {
		t.Fatalf("with_messages: no pagination: %s", r.Body)
	}
	pg := pagination{current: int64(val(a.Pagination.CurrentPage)), last: int64(val(a.Pagination.LastPage)), total: int64(val(a.Pagination.Total))}
	return xenforoConv(a.Conversation), msgs, pg
}

func (s *xenforoSession) edit(t *testing.T, user, messageID int64, message string) msg {
	t.Helper()
	body := xenforo.PostConversationMessagesIdFormdataRequestBody{Message: &message}
	r, err := s.c.PostConversationMessagesIdWithFormdataBodyWithResponse(context.Background(), int(messageID), body, as(user))
	return xenforoMsg(answer(t, s.doc, "post /conversation-messages/{id}/", s.extra("post /conversation-messages/{id}/"), err, r.HTTPResponse, r.Body, r.JSON200).Message)
}

func (s *xenforoSession) update(t *testing.T, user, conversationID int64, title string) conv {
	t.Helper()
	body := xenforo.PostConversationsIdFormdataRequestBody{Title: &title}
	r, err := s.c.PostConversationsIdWithFormdataBodyWithResponse(context.Background(), int(conversationID), body, as(user))
	return xenforoConv(answer(t, s.doc, "post /conversations/{id}/", s.extra("post /conversations/{id}/"), err, r.HTTPResponse, r.Body, r.JSON200).Conversation)
}

func (s *xenforoSession) star(t *testing.T, user, conversationID int64) {
	t.Helper()
	star := true
	body := xenforo.PostConversationsIdStarFormdataRequestBody{Star: &star}
	r, err := s.c.PostConversationsIdStarWithFormdataBodyWithResponse(context.Background(), int(conversationID), body, as(user))
	if !val(answer(t, s.doc, "post /conversations/{id}/star", s.extra("post /conversations/{id}/star"), err, r.HTTPResponse, r.Body, r.JSON200).Success) {
		t.Fatalf("star: %s", r.Body)
	}
}

func (s *xenforoSession) message(t *testing.T, user, messageID int64) (msg, conv) {
	t.Helper()
	r, err := s.c.GetConversationMessagesIdWithResponse(context.Background(), int(messageID), as(user))
	m := answer(t, s.doc, "get /conversation-messages/{id}/", s.extra("get /conversation-messages/{id}/"), err, r.HTTPResponse, r.Body, r.JSON200).Message
	if m == nil {
		t.Fatalf("message: none: %s", r.Body)
	}
	return xenforoMsg(m), xenforoConv(m.Conversation)
}

func (s *xenforoSession) invite(t *testing.T, user, conversationID int64, users []int64) {
	t.Helper()
	var body xenforo.PostConversationsIdInviteFormdataRequestBody
	for _, u := range users {
		body.RecipientIds = append(body.RecipientIds, int(u))
	}
	r, err := s.c.PostConversationsIdInviteWithFormdataBodyWithResponse(context.Background(), int(conversationID), body, as(user))
	if !val(answer(t, s.doc, "post /conversations/{id}/invite", s.extra("post /conversations/{id}/invite"), err, r.HTTPResponse, r.Body, r.JSON200).Success) {
		t.Fatalf("invite: %s", r.Body)
	}
}

func (s *xenforoSession) leave(t *testing.T, user, conversationID int64) {
	t.Helper()
	r, err := s.c.DeleteConversationsIdWithResponse(context.Background(), int(conversationID), &xenforo.DeleteConversationsIdParams{}, as(user))
	if !val(answer(t, s.doc, "delete /conversations/{id}/", s.extra("delete /conversations/{id}/"), err, r.HTTPResponse, r.Body, r.JSON200).Success) {
		t.Fatalf("leave: %s", r.Body)
	}
}

func (s *xenforoSession) status(t *testing.T, user, conversationID int64) int {
	t.Helper()
	r, err := s.c.GetConversationsIdWithResponse(context.Background(), int(conversationID), &xenforo.GetConversationsIdParams{}, as(user))
	if err != nil {
		t.Fatal(err)
	}
	return r.StatusCode()
}

func xenforoConv(c *xenforo.Conversation) conv {
	if c == nil {
		return conv{}
	}
	out := conv{
		id: int64(val(c.ConversationId)), starter: int64(val(c.UserId)), title: val(c.Title),
		recipientCount: int64(val(c.RecipientCount)), replyCount: int64(val(c.ReplyCount)),
	}
	// XenForo types recipients as an object: the user ids as strings, to the usernames.
	for id, name := range val(c.Recipients) {
		if out.recipients == nil {
			out.recipients = map[string]string{}
		}
		out.recipients[id], _ = name.(string)
	}
	return out
}

func xenforoMsg(m *xenforo.ConversationMessage) msg {
	if m == nil {
		return msg{}
	}
	out := msg{
		id: int64(val(m.MessageId)), conversationID: int64(val(m.ConversationId)), author: int64(val(m.UserId)),
		attachCount: int64(val(m.AttachCount)), reactionScore: int64(val(m.ReactionScore)),
		message: val(m.Message), parsed: val(m.MessageParsed),
	}
	for _, a := range val(m.Attachments) {
		out.files = append(out.files, val(a.Filename))
	}
	return out
}

// val is what p points to, or the zero value: XenForo's document requires no field, so every
// field of its generated types is a pointer.
func val[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
