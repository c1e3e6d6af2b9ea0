package xfclient_test

import (
	"context"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"forumstats.local/forum-svc/internal/httpapi/xfclient/forum"
)

// forumSession drives the conversation through the client generated from forum-svc's own
// document, whose paths hold /api/: its base URL is the server's.
type forumSession struct {
	doc *openapi3.T
	c   *forum.ClientWithResponses
}

func newForumSession(t *testing.T, doc *openapi3.T, baseURL string, rec *recorder) session {
	c, err := forum.NewClientWithResponses(baseURL, forum.WithHTTPClient(rec))
	if err != nil {
		t.Fatal(err)
	}
	return &forumSession{doc: doc, c: c}
}

func forumAs(user int64) forum.RequestEditorFn { return actingAs(user) }

func (s *forumSession) start(t *testing.T, user int64, recipients []int64, title, message string) conv {
	t.Helper()
	body := forum.PostConversationFormdataRequestBody{RecipientIds: recipients, Title: title, Message: message}
	r, err := s.c.PostConversationWithFormdataBodyWithResponse(context.Background(), &forum.PostConversationParams{}, body, forumAs(user))
	return forumConv(answer(t, s.doc, "post /conversations/", nil, err, r.HTTPResponse, r.Body, r.JSON200).Conversation)
}

func (s *forumSession) newKey(t *testing.T, user, conversationID int64) string {
	t.Helper()
	body := forum.PostAttachmentNewKeyFormdataRequestBody{Type: forum.PostAttachmentNewKeyFormdataBodyTypeConversationMessage, ContextConversationId: &conversationID}
	r, err := s.c.PostAttachmentNewKeyWithFormdataBodyWithResponse(context.Background(), &forum.PostAttachmentNewKeyParams{}, body, forumAs(user))
	return answer(t, s.doc, "post /attachments/new-key", nil, err, r.HTTPResponse, r.Body, r.JSON200).Key
}

func (s *forumSession) upload(t *testing.T, user int64, key, filename string, data []byte) string {
	t.Helper()
	contentType, body := multipartBody(t, [][2]string{{"key", key}}, filename, data)
	r, err := s.c.PostAttachmentWithBodyWithResponse(context.Background(), &forum.PostAttachmentParams{}, contentType, body, forumAs(user))
	return answer(t, s.doc, "post /attachments/", nil, err, r.HTTPResponse, r.Body, r.JSON200).Attachment.Filename
}

func (s *forumSession) reply(t *testing.T, user, conversationID int64, message, attachmentKey string) msg {
	t.Helper()
	body := forum.PostConversationMessageFormdataRequestBody{ConversationId: conversationID, Message: message}
	if attachmentKey != "" {
		body.AttachmentKey = &attachmentKey
	}
	r, err := s.c.PostConversationMessageWithFormdataBodyWithResponse(context.Background(), &forum.PostConversationMessageParams{}, body, forumAs(user))
	return forumMsg(answer(t, s.doc, "post /conversation-messages/", nil, err, r.HTTPResponse, r.Body, r.JSON200).Message)
}

func (s *forumSession) react(t *testing.T, user, messageID, reactionID int64) string {
	t.Helper()
	body := forum.PostReactFormdataRequestBody{ReactionId: forum.PostReactFormdataBodyReactionId(reactionID)}
	r, err := s.c.PostReactWithFormdataBodyWithResponse(context.Background(), messageID, &forum.PostReactParams{}, body, forumAs(user))
	return string(answer(t, s.doc, "post /conversation-messages/{id}/react", nil, err, r.HTTPResponse, r.Body, r.JSON200).Action)
}

func (s *forumSession) list(t *testing.T, user int64, starred bool) []conv {
	t.Helper()
	params := &forum.GetConversationsParams{}
	if starred {
		only := forum.GetConversationsParamsStarredN1
		params.Starred = &only
	}
	r, err := s.c.GetConversationsWithResponse(context.Background(), params, forumAs(user))
	var out []conv
	for _, c := range answer(t, s.doc, "get /conversations/", nil, err, r.HTTPResponse, r.Body, r.JSON200).Conversations {
		out = append(out, forumConv(c))
	}
	return out
}

func (s *forumSession) withMessages(t *testing.T, user, conversationID, page int64) (conv, []msg, pagination) {
	t.Helper()
	with := forum.GetConversationParamsWithMessagesN1
	params := &forum.GetConversationParams{WithMessages: &with, Page: &page}
	r, err := s.c.GetConversationWithResponse(context.Background(), conversationID, params, forumAs(user))
	a := answer(t, s.doc, "get /conversations/{id}/", nil, err, r.HTTPResponse, r.Body, r.JSON200)
	if a.Messages == nil || a.Pagination == nil {
		t.Fatalf("with_messages: no messages or pagination: %s", r.Body)
	}
	var msgs []msg
	for _, m := range *a.Messages {
		msgs = append(msgs, forumMsg(m))
	}
	pg := pagination{current: a.Pagination.CurrentPage, last: a.Pagination.LastPage, total: a.Pagination.Total}
	return forumConv(a.Conversation), msgs, pg
}

func (s *forumSession) edit(t *testing.T, user, messageID int64, message string) msg {
	t.Helper()
	body := forum.PostConversationMessageEditFormdataRequestBody{Message: message}
	r, err := s.c.PostConversationMessageEditWithFormdataBodyWithResponse(context.Background(), messageID, &forum.PostConversationMessageEditParams{}, body, forumAs(user))
	return forumMsg(answer(t, s.doc, "post /conversation-messages/{id}/", nil, err, r.HTTPResponse, r.Body, r.JSON200).Message)
}

func (s *forumSession) update(t *testing.T, user, conversationID int64, title string) conv {
	t.Helper()
	body := forum.PostConversationUpdateFormdataRequestBody{Title: &title}
	r, err := s.c.PostConversationUpdateWithFormdataBodyWithResponse(context.Background(), conversationID, &forum.PostConversationUpdateParams{}, body, forumAs(user))
	return forumConv(answer(t, s.doc, "post /conversations/{id}/", nil, err, r.HTTPResponse, r.Body, r.JSON200).Conversation)
}

func (s *forumSession) star(t *testing.T, user, conversationID int64) {
	t.Helper()
	star := forum.PostStarFormdataBodyStarTrue
	body := forum.PostStarFormdataRequestBody{Star: &star}
	r, err := s.c.PostStarWithFormdataBodyWithResponse(context.Background(), conversationID, &forum.PostStarParams{}, body, forumAs(user))
	if a := answer(t, s.doc, "post /conversations/{id}/star", nil, err, r.HTTPResponse, r.Body, r.JSON200); !a.Success || !a.IsStarred {
		t.Fatalf("star: %s", r.Body)
	}
}

func (s *forumSession) message(t *testing.T, user, messageID int64) (msg, conv) {
	t.Helper()
	r, err := s.c.GetMessageWithResponse(context.Background(), messageID, &forum.GetMessageParams{}, forumAs(user))
	m := answer(t, s.doc, "get /conversation-messages/{id}/", nil, err, r.HTTPResponse, r.Body, r.JSON200).Message
	out := msg{id: m.MessageId, conversationID: m.ConversationId, author: m.UserId, attachCount: m.AttachCount,
		reactionScore: m.ReactionScore, message: m.Message, parsed: m.MessageParsed}
	if m.Attachments != nil {
		for _, a := range *m.Attachments {
			out.files = append(out.files, a.Filename)
		}
	}
	return out, forumConv(m.Conversation)
}

func (s *forumSession) invite(t *testing.T, user, conversationID int64, users []int64) {
	t.Helper()
	body := forum.PostInviteFormdataRequestBody{RecipientIds: users}
	r, err := s.c.PostInviteWithFormdataBodyWithResponse(context.Background(), conversationID, &forum.PostInviteParams{}, body, forumAs(user))
	if !answer(t, s.doc, "post /conversations/{id}/invite", nil, err, r.HTTPResponse, r.Body, r.JSON200).Success {
		t.Fatalf("invite: %s", r.Body)
	}
}

func (s *forumSession) leave(t *testing.T, user, conversationID int64) {
	t.Helper()
	r, err := s.c.DeleteConversationWithFormdataBodyWithResponse(context.Background(), conversationID, &forum.DeleteConversationParams{}, forum.DeleteConversationFormdataRequestBody{}, forumAs(user))
	if !answer(t, s.doc, "delete /conversations/{id}/", nil, err, r.HTTPResponse, r.Body, r.JSON200).Success {
		t.Fatalf("leave: %s", r.Body)
	}
}

func (s *forumSession) status(t *testing.T, user, conversationID int64) int {
	t.Helper()
	r, err := s.c.GetConversationWithResponse(context.Background(), conversationID, &forum.GetConversationParams{}, forumAs(user))
	if err != nil {
		t.Fatal(err)
	}
	return r.StatusCode()
}

func forumConv(c forum.Conversation) conv {
	return conv{
		id: c.ConversationId, starter: c.UserId, title: c.Title, recipientCount: c.RecipientCount,
		replyCount: c.ReplyCount, recipients: c.Recipients,
	}
}

func forumMsg(m forum.ConversationMessage) msg {
	out := msg{
		id: m.MessageId, conversationID: m.ConversationId, author: m.UserId, attachCount: m.AttachCount,
		reactionScore: m.ReactionScore, message: m.Message, parsed: m.MessageParsed,
	}
	if m.Attachments != nil {
		for _, a := range *m.Attachments {
			out.files = append(out.files, a.Filename)
		}
	}
	return out
}
