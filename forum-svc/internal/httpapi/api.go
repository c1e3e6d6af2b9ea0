// Package httpapi is forum-svc's HTTP interface: the routes, the authentication middleware, the
// single error table and the OpenAPI document.
package httpapi

import (
	"context"
	_ "embed"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"forumstats.local/forum-svc/internal/attachment"
	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/forum-svc/internal/decimal"
	"forumstats.local/shared/config"
	"forumstats.local/shared/form"
	"forumstats.local/shared/ratelimit"
	"forumstats.local/shared/server"
)

// openAPI is generated from its YAML source in openapi/: edit the source, then run go generate.
//
//go:generate go run forumstats.local/shared/openapigen/cmd/openapigen -o openapi.json openapi/openapi.yaml
//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the service's OpenAPI 3 document.
func OpenAPI() []byte { return openAPI }

// Limiter decides whether the bucket named key (an API key's hash) has a token for one more
// request.
type Limiter interface {
	Allow(ctx context.Context, key string) ratelimit.Decision
}

// Deps are what the API serves from.
type Deps struct {
	Conversations *conversation.Service
	Attachments   *attachment.Service
	Auth          *auth.Authenticator
	// Limiter holds the API keys' request buckets (named by the key's hash).
	Limiter Limiter
	// AuthFailures holds the client addresses' buckets of failed authentications (named by the
	// address).
	AuthFailures Limiter
	Logger       *slog.Logger
	Ready        []server.Check
	Now          func() time.Time // the clock (time.Now when nil)
	HTTP         config.HTTP      // the server's read timeout and trusted proxies
	// Events serves the event stream and its tickets; nil: no such routes.
	Events *Events
}

type api struct {
	conv     *conversation.Service
	att      *attachment.Service
	auth     *auth.Authenticator
	limiter  Limiter
	failures *failedAuth
	allow    map[string]string // route path -> Allow header
	events   *Events
	now      func() time.Time
}

// route is one endpoint. GET routes answer HEAD too. Routes with an {id} check it before anything
// else (a malformed id is no route at all); routes with a scope then authenticate.
type route struct {
	method  string
	path    string
	scope   string
	withID  bool
	handler echo.HandlerFunc
}

func (a *api) routes() []route {
	return []route{
		{http.MethodGet, "/api/conversations", auth.ScopeConversationRead, false, a.listConversations},
		{http.MethodPost, "/api/conversations", auth.ScopeConversationWrite, false, creating(a.startConversation)},
		{http.MethodGet, "/api/conversations/:id", auth.ScopeConversationRead, true, a.getConversation},
		{http.MethodPost, "/api/conversations/:id", auth.ScopeConversationWrite, true, onObject(a.updateConversation)},
		{http.MethodDelete, "/api/conversations/:id", auth.ScopeConversationWrite, true, onObject(a.leaveConversation)},
		{http.MethodGet, "/api/conversations/:id/messages", auth.ScopeConversationRead, true, a.listMessages},
		{http.MethodPost, "/api/conversations/:id/mark-read", auth.ScopeConversationWrite, true, a.markRead},
		{http.MethodPost, "/api/conversations/:id/mark-unread", auth.ScopeConversationWrite, true, a.markUnread},
		{http.MethodPost, "/api/conversations/:id/invite", auth.ScopeConversationWrite, true, onObject(a.invite)},
		{http.MethodPost, "/api/conversations/:id/star", auth.ScopeConversationWrite, true, onObject(a.star)},
		{http.MethodPost, "/api/conversation-messages", auth.ScopeConversationWrite, false, creating(a.reply)},
		{http.MethodGet, "/api/conversation-messages/:id", auth.ScopeConversationRead, true, getOne("message", a.conv.Message)},
		{http.MethodPost, "/api/conversation-messages/:id", auth.ScopeConversationWrite, true, onObject(a.editMessage)},
		{http.MethodPost, "/api/conversation-messages/:id/react", auth.ScopeConversationWrite, true, a.react},
		{http.MethodPost, pathNewKey, auth.ScopeAttachmentWrite, false, a.newKey},
		{http.MethodPost, pathAttachments, auth.ScopeAttachmentWrite, false, a.upload},
		{http.MethodGet, pathAttachments, auth.ScopeAttachmentRead, false, a.listAttachments},
		{http.MethodGet, "/api/attachments/:id", auth.ScopeAttachmentRead, true, a.getAttachment},
		{http.MethodDelete, "/api/attachments/:id", auth.ScopeAttachmentWrite, true, a.deleteAttachment},
		{http.MethodGet, "/api/attachments/:id/data", auth.ScopeAttachmentRead, true, a.attachmentData},
		{http.MethodGet, "/api/attachments/:id/thumbnail", auth.ScopeAttachmentRead, true, a.attachmentThumbnail},
		{http.MethodGet, "/api/me", registeredUser, false, a.me},
		{http.MethodGet, "/api/openapi.json", "", false, serveOpenAPI},
	}
}

// BodyLimit is the largest request body, 1 MiB (1,048,576 bytes): one byte more is refused with
// 413. The uploads' multipart bodies have their own limit (uploadParts). The longest message the options allow (conversation.MaxMessageLength code points of 4
// bytes, each byte percent-encoded: 786,432 bytes) fits with room for the other fields.
const BodyLimit = 1 << 20

// bodyLimit is BodyLimit as Echo's middleware reads it ("MiB": binary, where "M" is 1,000,000).
const bodyLimit = "1MiB"

// registeredUser is the "scope" of a route that needs a registered user but no particular scope.
const registeredUser = "(registered user)"

// New returns the HTTP handler of forum-svc: shared/server's middleware and probes, and the
// API's routes. Only this package knows the router behind it.
func New(d Deps) http.Handler { return newEcho(d) }

// newEcho builds New's handler; the tests read its routes.
func newEcho(d Deps) *echo.Echo {
	now := d.Now
	if now == nil {
		now = time.Now
	}
	a := &api{conv: d.Conversations, att: d.Attachments, auth: d.Auth, limiter: d.Limiter,
		failures: newFailedAuth(d.AuthFailures, d.Now), allow: map[string]string{}, events: d.Events, now: now}
	e := server.New(server.Options{
		Name:         "forum-svc",
		Logger:       d.Logger,
		ErrorHandler: a.errorHandler,
		Ready:        d.Ready,
		BodyLimit:    bodyLimit,
		OwnBodyLimit: ownBodyLimit,
		HTTP:         d.HTTP,
	})
	e.Pre(protect)
	// Every route is served with and without a trailing slash.
	e.Pre(keepTarget(middleware.RemoveTrailingSlash()))
	for _, r := range append(a.routes(), a.eventRoutes()...) {
		var mw, optionsMW []echo.MiddlewareFunc
		stream := r.path == pathEvents || r.path == pathTicket
		if stream {
			mw = append(mw, a.cors)
			optionsMW = append(optionsMW, a.cors)
		}
		if r.withID {
			mw = append(mw, parseID)
		}
		switch {
		case r.path == pathEvents:
			mw = append(mw, a.authenticateStream(r.scope))
		case r.scope != "":
			mw = append(mw, a.authenticate(r.scope))
		}
		methods := []string{r.method}
		if r.method == http.MethodGet {
			methods = append(methods, http.MethodHead)
		}
		e.Match(methods, r.path, r.handler, mw...)
		// Without this, Echo answers OPTIONS itself (204); here it is a wrong method like any other.
		e.OPTIONS(r.path, methodNotAllowed, optionsMW...)
		a.allow[r.path] = strings.TrimPrefix(a.allow[r.path]+", "+strings.Join(methods, ", "), ", ")
	}
	// A static path beside a route with {id} (attachments/new-key beside attachments/{id}) would
	// be routed to the {id} route for the methods it does not serve, and answer 404 for an id
	// that is no number: those methods are refused here instead, as on every other path.
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodTrace} {
		e.Add(method, pathNewKey, methodNotAllowed)
	}
	return e
}

// protect sets the headers every answer carries, errors, probes and the document included: the
// answers are private to the key's user, so no cache (a browser's, a proxy's) may keep one
// (Cache-Control: no-store), and a browser may never read one as anything but its declared type
// (X-Content-Type-Options: nosniff). They are set before anything else runs, so no answer lacks them.
func protect(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set(echo.HeaderCacheControl, "no-store")
		h.Set(echo.HeaderXContentTypeOptions, "nosniff")
		return next(c)
	}
}

// allowed is the Allow header of a route path (the shared probes are GET and HEAD).
func (a *api) allowed(path string) string {
	if v, ok := a.allow[path]; ok {
		return v
	}
	return "GET, HEAD"
}

func methodNotAllowed(echo.Context) error { return echo.ErrMethodNotAllowed }

// keepTarget runs mw and then gives the request back its target as sent (RequestURI). Echo's
// RemoveTrailingSlash rebuilds the target from the decoded path, so a percent-encoded target
// over the head limit (shared/server's 414) would otherwise shrink under it and pass; routing
// reads the path, not the target.
func keepTarget(mw echo.MiddlewareFunc) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			sent := c.Request().RequestURI
			return mw(func(c echo.Context) error {
				c.Request().RequestURI = sent
				return next(c)
			})(c)
		}
	}
}

const (
	ctxID   = "forum.id"
	ctxUser = "forum.user"
	ctxKey  = "forum.key" // the API key's hash
)

// parseID reads the {id} path parameter: a positive decimal integer, else the route does not
// exist (404 endpoint_not_found), whatever the key.
func parseID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, ok := decimal.ParseID(c.Param("id"))
		if !ok {
			return echo.ErrNotFound
		}
		c.Set(ctxID, id)
		return next(c)
	}
}

// authenticate runs the caller's checks in order, the first failure answering: the key (present, known, usable),
// its rate limit, the acting user, the scope and the registered-user rule. The object comes last,
// in the handler. Before all of them, a client address that has used its failed authentications
// is refused (429), and each failure of the key or the acting user counts against its address.
func (a *api) authenticate(scope string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			ctx := c.Request().Context()
			h := c.Request().Header
			addr := c.RealIP()
			if refusal, refused := a.failures.refused(addr); refused {
				return refusal
			}
			key, err := a.auth.Key(ctx, h.Values(auth.HeaderAPIKey))
			if err != nil {
				return a.failures.failed(ctx, addr, err)
			}
			if d := a.limiter.Allow(ctx, key.Hash); !d.Allowed {
				return &rateLimitedError{retryAfter: d.RetryAfterSeconds()}
			}
			need := scope
			if scope == registeredUser {
				need = ""
			}
			userID, err := a.auth.Principal(ctx, key, h.Values(auth.HeaderAPIUser), need)
			if err != nil {
				return a.failures.failed(ctx, addr, err)
			}
			c.Set(ctxUser, userID)
			c.Set(ctxKey, key.Hash)
			// The objects tell whether this key may upload attachments (can_upload_attachment).
			r := c.Request()
			c.SetRequest(r.WithContext(conversation.WithAttachmentWrite(ctx, key.HasScope(auth.ScopeAttachmentWrite))))
			return next(c)
		}
	}
}

func ids(c echo.Context) (userID, id int64) {
	return c.Get(ctxUser).(int64), c.Get(ctxID).(int64)
}

type success struct {
	Success bool `json:"success"`
}

// getOne answers GET of one object the user reads by its id, as {"name": object}.
func getOne[T any](name string, read func(ctx context.Context, userID, id int64) (T, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		userID, id := ids(c)
		v, err := read(c.Request().Context(), userID, id)
		if err != nil {
			return err
		}
		return writeJSON(c, http.StatusOK, map[string]T{name: v})
	}
}

// getConversation answers GET of a conversation; with_messages adds the page of its messages
// named by page (the first by default) and its pagination, as XenForo does.
func (a *api) getConversation(c echo.Context) error {
	userID, id := ids(c)
	query := conversation.Fields(form.Parse(c.Request().URL.RawQuery))
	withMessages, _, err := query.Bool("with_messages", false)
	if err != nil {
		return err
	}
	page, err := conversation.ParsePage(query["page"])
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if !withMessages {
		conv, err := a.conv.Conversation(ctx, userID, id)
		if err != nil {
			return err
		}
		return writeJSON(c, http.StatusOK, map[string]conversation.Conversation{"conversation": conv})
	}
	p, err := a.conv.ConversationWithMessages(ctx, userID, id, page)
	if err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, p)
}

func (a *api) listMessages(c echo.Context) error {
	userID, id := ids(c)
	// Not Echo's QueryParam: it drops a pair with a broken escape, and `?page=%zz` must be invalid_page.
	page, err := conversation.ParsePage(form.Parse(c.Request().URL.RawQuery)["page"])
	if err != nil {
		return err
	}
	p, err := a.conv.Messages(c.Request().Context(), userID, id, page)
	if err != nil {
		return err
	}
	return writePage(c, &p)
}

func (a *api) markRead(c echo.Context) error {
	userID, id := ids(c)
	date, err := formDate(c.Request())
	if err != nil {
		return err
	}
	if err := a.conv.MarkRead(c.Request().Context(), userID, id, date); err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, success{true})
}

func (a *api) markUnread(c echo.Context) error {
	userID, id := ids(c)
	if _, err := readForm(c.Request()); err != nil {
		return err
	}
	if err := a.conv.MarkUnread(c.Request().Context(), userID, id); err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, success{true})
}

func serveOpenAPI(c echo.Context) error {
	c.Response().Header().Set(echo.HeaderContentLength, strconv.Itoa(len(openAPI)))
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, openAPI)
}

// writeJSON sends v with a Content-Length: one write, no chunked encoding (a page of messages is
// larger than net/http's pre-chunking buffer), and HEAD answers the same headers as GET.
func writeJSON(c echo.Context, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderContentLength, strconv.Itoa(len(b)))
	return c.Blob(status, echo.MIMEApplicationJSON, b)
}

// writePage is writeJSON for a page of messages, encoded by appendMessagePage into a pooled
// buffer (the same bytes as writeJSON).
func writePage(c echo.Context, p *conversation.MessagePage) error {
	bp := getBuf()
	defer putBuf(bp)
	b, ok := appendMessagePage((*bp)[:0], p)
	*bp = b
	if !ok {
		return writeJSON(c, http.StatusOK, p)
	}
	c.Response().Header().Set(echo.HeaderContentLength, strconv.Itoa(len(b)))
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
}
