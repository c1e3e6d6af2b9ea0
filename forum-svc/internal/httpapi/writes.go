package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/shared/form"
)

// The handlers of the conversations API beyond reading one conversation.

func (a *api) listConversations(c echo.Context) error {
	userID := c.Get(ctxUser).(int64)
	list, err := a.conv.List(c.Request().Context(), userID, conversation.Fields(form.Parse(c.Request().URL.RawQuery)))
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, list)
}

// writeForm reads a write's retry key (Idempotency-Key; none: nil) and form. The key is checked
// first: it is about the request, whatever its fields.
func writeForm(c echo.Context) (conversation.Fields, *conversation.Retry, error) {
	r := c.Request()
	key, err := parseIdempotencyKey(r.Header.Values(HeaderIdempotencyKey))
	if err != nil {
		return nil, nil, err
	}
	form, err := readForm(r)
	if err != nil || key == "" {
		return form, nil, err
	}
	return form, &conversation.Retry{
		Owner:       c.Get(ctxKey).(string),
		UserID:      c.Get(ctxUser).(int64),
		Key:         key,
		Fingerprint: fingerprint(r.Method, r.URL.Path, form),
	}, nil
}

// writeAnswer sends a write's answer, fresh or replayed (marked by Idempotent-Replayed).
func writeAnswer(c echo.Context, ans conversation.Answer) error {
	if ans.Replayed {
		c.Response().Header().Set("Idempotent-Replayed", "true")
	}
	c.Response().Header().Set(echo.HeaderContentLength, strconv.Itoa(len(ans.Body)))
	return c.Blob(ans.Status, echo.MIMEApplicationJSON, ans.Body)
}

type conversationAnswer struct {
	Success      bool                      `json:"success"`
	Conversation conversation.Conversation `json:"conversation"`
}

type messageAnswer struct {
	Success bool                 `json:"success"`
	Message conversation.Message `json:"message"`
}

// creating is a write that creates (a conversation, a message) and honours Idempotency-Key: op
// returns its answer, fresh or replayed.
func creating(op func(ctx context.Context, userID int64, form conversation.Fields, retry *conversation.Retry) (conversation.Answer, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		form, retry, err := writeForm(c)
		if err != nil {
			return err
		}
		ans, err := op(c.Request().Context(), c.Get(ctxUser).(int64), form, retry)
		if err != nil {
			return err
		}
		return writeAnswer(c, ans)
	}
}

func (a *api) startConversation(ctx context.Context, userID int64, form conversation.Fields, retry *conversation.Retry) (conversation.Answer, error) {
	return a.conv.Start(ctx, userID, form, retry, func(conv conversation.Conversation) ([]byte, error) {
		return json.Marshal(conversationAnswer{true, conv})
	})
}

func (a *api) reply(ctx context.Context, userID int64, form conversation.Fields, retry *conversation.Retry) (conversation.Answer, error) {
	return a.conv.Reply(ctx, userID, form, retry, func(m conversation.Message) ([]byte, error) {
		return json.Marshal(messageAnswer{true, m})
	})
}

// react answers a reaction to the message of the path; it honours Idempotency-Key.
func (a *api) react(c echo.Context) error {
	userID, id := ids(c)
	form, retry, err := writeForm(c)
	if err != nil {
		return err
	}
	ans, err := a.conv.React(c.Request().Context(), userID, id, form, retry, func(r conversation.ReactAnswer) ([]byte, error) {
		return json.Marshal(r)
	})
	if err != nil {
		return err
	}
	return writeAnswer(c, ans)
}

// onObject is a write on the object of the path ({id}): its fields, then op, whose result is the
// answer.
func onObject(op func(ctx context.Context, userID, id int64, form conversation.Fields) (any, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		userID, id := ids(c)
		form, err := readForm(c.Request())
		if err != nil {
			return err
		}
		answer, err := op(c.Request().Context(), userID, id, form)
		if err != nil {
			return err
		}
		return writeJSON(c, http.StatusOK, answer)
	}
}

func (a *api) editMessage(ctx context.Context, userID, id int64, form conversation.Fields) (any, error) {
	m, err := a.conv.Edit(ctx, userID, id, form)
	return messageAnswer{true, m}, err
}

func (a *api) updateConversation(ctx context.Context, userID, id int64, form conversation.Fields) (any, error) {
	conv, err := a.conv.Update(ctx, userID, id, form)
	return conversationAnswer{true, conv}, err
}

func (a *api) leaveConversation(ctx context.Context, userID, id int64, form conversation.Fields) (any, error) {
	return success{true}, a.conv.Leave(ctx, userID, id, form)
}

func (a *api) invite(ctx context.Context, userID, id int64, form conversation.Fields) (any, error) {
	return success{true}, a.conv.Invite(ctx, userID, id, form)
}

func (a *api) star(ctx context.Context, userID, id int64, form conversation.Fields) (any, error) {
	starred, err := a.conv.Star(ctx, userID, id, form)
	return struct {
		Success   bool `json:"success"`
		IsStarred bool `json:"is_starred"`
	}{true, starred}, err
}

func (a *api) me(c echo.Context) error {
	me, err := a.conv.Me(c.Request().Context(), c.Get(ctxUser).(int64))
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, struct {
		Me conversation.Me `json:"me"`
	}{me})
}
