package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"

	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/forum-svc/internal/event"
	"forumstats.local/shared/form"
	"forumstats.local/shared/server"
)

// The event stream (GET /api/events) and its browser tickets (POST /api/events/ticket).

const (
	pathEvents = "/api/events"
	pathTicket = "/api/events/ticket"
)

// TicketStore keeps the one-time stream tickets (the store implements it).
type TicketStore interface {
	CreateTicket(ctx context.Context, ticketHash, keyHash string, userID, expiresAt int64) error
	UseTicket(ctx context.Context, ticketHash string, now int64) (keyHash string, userID int64, found bool, err error)
}

// Events is what the event stream serves from; nil Deps.Events: no stream routes.
type Events struct {
	Hub     *event.Hub
	Tickets TicketStore
	// Render reads the objects of the events for their user; its reads must go to the primary,
	// since an event may name an object the replica does not have yet.
	Render *conversation.Service
	Stream event.StreamOptions
	// TicketTTL is how long a ticket may wait for its stream (DefaultTicketTTL when 0).
	TicketTTL time.Duration
	// AllowedOrigins are the browser origins that may open the stream and ask for a ticket
	// (CORS); none: no cross-origin page may.
	AllowedOrigins []string
}

// DefaultTicketTTL is how long a ticket is good for: the time for a page to open its EventSource.
const DefaultTicketTTL = 60 * time.Second

// ticketQuery names the ticket in the stream's query string.
const ticketQuery = "ticket"

// Ticket is POST /api/events/ticket's answer.
type Ticket struct {
	Ticket    string `json:"ticket"`
	ExpiresAt int64  `json:"expires_at"`
}

// eventRoutes are the stream's routes. They are registered whatever Deps.Events (the route list
// is the OpenAPI document's); without it they answer 404.
func (a *api) eventRoutes() []route {
	return []route{
		{http.MethodGet, pathEvents, auth.ScopeConversationRead, false, a.withEvents(a.streamEvents)},
		{http.MethodPost, pathTicket, auth.ScopeConversationRead, false, a.withEvents(a.newTicket)},
	}
}

func (a *api) withEvents(h echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if a.events == nil {
			return echo.ErrNotFound
		}
		return h(c)
	}
}

// newTicket answers a one-time ticket bound to the key and the acting user.
func (a *api) newTicket(c echo.Context) error {
	if _, err := readForm(c.Request()); err != nil {
		return err
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	ticket := base64.RawURLEncoding.EncodeToString(raw)
	ttl := a.events.TicketTTL
	if ttl <= 0 {
		ttl = DefaultTicketTTL
	}
	expires := a.now().Add(ttl).Unix()
	if err := a.events.Tickets.CreateTicket(c.Request().Context(), auth.Hash(ticket), c.Get(ctxKey).(string),
		c.Get(ctxUser).(int64), expires); err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, Ticket{Ticket: ticket, ExpiresAt: expires})
}

// authenticateStream is the stream's authentication: a ticket in the query string (a browser's
// EventSource sends no header) or, without one, the API key as every route takes it. A ticket
// unknown, used or expired is refused as an unknown key (401), and counts as a failed
// authentication of the address; a ticket is used once, whatever follows.
func (a *api) authenticateStream(scope string) echo.MiddlewareFunc {
	byKey := a.authenticate(scope)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		withKey := byKey(next)
		return func(c echo.Context) error {
			tickets := form.Parse(c.Request().URL.RawQuery)[ticketQuery]
			if a.events == nil || len(tickets) == 0 || (len(tickets) == 1 && tickets[0] == "") {
				return withKey(c)
			}
			ctx := c.Request().Context()
			addr := c.RealIP()
			if refusal, refused := a.failures.refused(addr); refused {
				return refusal
			}
			if len(tickets) > 1 || len(tickets[0]) > auth.MaxKeyLength {
				return a.failures.failed(ctx, addr, auth.ErrAPIKeyNotFound)
			}
			keyHash, userID, found, err := a.events.Tickets.UseTicket(ctx, auth.Hash(tickets[0]), a.now().Unix())
			if err != nil {
				return err
			}
			if !found {
				return a.failures.failed(ctx, addr, auth.ErrAPIKeyNotFound)
			}
			key, err := a.auth.KeyByHash(ctx, keyHash)
			if err != nil {
				return a.failures.failed(ctx, addr, err)
			}
			if d := a.limiter.Allow(ctx, key.Hash); !d.Allowed {
				return &rateLimitedError{retryAfter: d.RetryAfterSeconds()}
			}
			if !key.HasScope(scope) {
				return &auth.MissingScopeError{Scope: scope}
			}
			c.Set(ctxUser, userID)
			c.Set(ctxKey, key.Hash)
			r := c.Request()
			c.SetRequest(r.WithContext(conversation.WithAttachmentWrite(ctx, key.HasScope(auth.ScopeAttachmentWrite))))
			return next(c)
		}
	}
}

// lastEventID reads where the client resumes: the Last-Event-ID header (EventSource sends it when
// it reconnects), else the last_event_id query parameter (a page's first connection).
func lastEventID(r *http.Request) (event.Resume, error) {
	values := r.Header.Values("Last-Event-ID")
	if len(values) == 0 {
		values = form.Parse(r.URL.RawQuery)["last_event_id"]
	}
	switch len(values) {
	case 0:
		return event.Resume{}, nil
	case 1:
	default:
		return event.Resume{}, event.ErrInvalidLastEventID
	}
	id, given, err := event.ParseLastEventID(strings.TrimSpace(values[0]))
	return event.Resume{LastEventID: id, Given: given}, err
}

// streamEvents answers the user's event stream: text/event-stream until the client goes, the
// server stops, the key is deactivated or the client falls behind.
func (a *api) streamEvents(c echo.Context) error {
	from, err := lastEventID(c.Request())
	if err != nil {
		return err
	}
	userID, keyHash := c.Get(ctxUser).(int64), c.Get(ctxKey).(string)
	render := renderer{conv: a.events.Render, attachmentWrite: conversation.AttachmentWrite(c.Request().Context())}
	setHeaders := func() {
		h := c.Response().Header()
		h.Set(echo.HeaderContentType, "text/event-stream")
		h.Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	}
	if c.Request().Method == http.MethodHead {
		// What the stream's first event reads: a HEAD fails where the stream would.
		if _, _, err := render.Unread(c.Request().Context(), userID); err != nil {
			return err
		}
		setHeaders()
		c.Response().WriteHeader(http.StatusOK)
		return nil
	}
	opts := a.events.Stream
	opts.Check = func(ctx context.Context) error {
		_, err := a.auth.KeyByHash(ctx, keyHash)
		if errors.Is(err, auth.ErrAPIKeyNotFound) || errors.Is(err, auth.ErrAPIKeyInactive) {
			return err
		}
		return nil // a lookup that failed (busy, the database) is tried again at the next check
	}
	log := server.Logger(c)
	reqCtx := c.Request().Context()
	// The stream runs on a goroutine of its own. Once its answer starts, on an HTTP/1.x
	// connection it takes the connection over (Hijack) and the handler returns: an idle stream then
	// holds its goroutine, near the bottom of its stack, and its connection, without net/http's
	// buffers and goroutines for the request (measured by BenchmarkIdleStreams). A closed client is
	// then noticed at the next write, a heartbeat at the latest. Where the connection cannot be
	// taken (HTTP/2, a test's recorder) the stream is written through the ResponseWriter and ends
	// with the request.
	// The stream's context holds nothing of the request's (which would keep the request and its
	// buffers): what the objects' rendering reads from it, the renderer holds.
	ctx, cancel := context.WithCancel(context.Background())
	conn := &streamConn{w: c.Response().Writer, setHeaders: setHeaders, started: make(chan bool, 1)}
	done := make(chan error, 1)
	go func() {
		err := a.events.Hub.Serve(ctx, conn, userID, from, render, opts)
		cancel()
		if conn.raw != nil {
			_ = conn.raw.Close()
			logStreamEnd(log, err)
		}
		done <- err
	}()
	select {
	case err := <-done: // it failed before its answer started
		return err
	case hijacked := <-conn.started:
		if hijacked {
			return nil // the stream's goroutine owns the connection now
		}
	}
	stop := context.AfterFunc(reqCtx, cancel) // the client went
	defer stop()
	err = <-done
	if reqCtx.Err() == nil {
		logStreamEnd(log, err)
	}
	return nil // the answer has started: nothing else can be sent
}

// logStreamEnd logs why a stream ended, unless the client or the server ended it. Kept out of
// the stream's goroutine function (noinline), whose frame an idle stream's stack holds.
//
//go:noinline
func logStreamEnd(log *slog.Logger, err error) {
	switch {
	case err == nil, errors.Is(err, event.ErrStreamClosed), errors.Is(err, context.Canceled):
	case errors.Is(err, auth.ErrAPIKeyNotFound), errors.Is(err, auth.ErrAPIKeyInactive):
		log.Info("event stream ended: the API key is no longer usable")
	case errors.Is(err, event.ErrSlowConsumer):
		log.Info("event stream cut off: the client fell behind")
	case errors.Is(err, net.ErrClosed), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNRESET):
		log.Debug("event stream ended: the client went", "err", err)
	default:
		log.Warn("event stream failed", "err", err)
	}
}

// streamConn is the stream's connection: the ResponseWriter until the answer starts, then the
// connection taken over from net/http when it can be (raw), the ResponseWriter otherwise.
type streamConn struct {
	w          http.ResponseWriter
	setHeaders func()
	started    chan bool // Start's outcome: true when the connection was taken over
	raw        net.Conn
	head       []byte // the answer's head, sent with the first write on raw
}

func (s *streamConn) Start() {
	s.setHeaders()
	rc := http.NewResponseController(s.w)
	raw, rw, err := rc.Hijack()
	if err != nil {
		s.w.WriteHeader(http.StatusOK)
		s.started <- false
		return
	}
	_ = rw // nothing buffered matters: a GET has no body, and the stream reads nothing more
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 200 OK\r\n")
	h := s.w.Header().Clone()
	h.Del("Content-Length")
	h.Set("Connection", "close") // the body ends with the connection
	_ = h.Write(&b)
	b.WriteString("\r\n")
	s.raw, s.head = raw, b.Bytes()
	// Nothing of the request stays referenced: net/http's buffers for it go with them.
	s.w, s.setHeaders = nil, nil
	s.started <- true
}

func (s *streamConn) Write(p []byte) (int, error) {
	if s.raw == nil {
		return s.w.Write(p)
	}
	if s.head != nil {
		p = append(s.head, p...)
		s.head = nil
	}
	return s.raw.Write(p)
}

// Direct reports whether the stream writes straight to the connection (taken over): a hand-over
// may then write to it from the writing request, within a bound (event.Sub's inline writes).
func (s *streamConn) Direct() bool { return s.raw != nil }

func (s *streamConn) Flush() error {
	if s.raw == nil {
		return http.NewResponseController(s.w).Flush()
	}
	return nil // written straight to the connection
}

func (s *streamConn) SetWriteDeadline(t time.Time) error {
	if s.raw == nil {
		return http.NewResponseController(s.w).SetWriteDeadline(t)
	}
	return s.raw.SetWriteDeadline(t)
}

// renderer renders the events as the GET operations show their objects to the stream's key. It
// holds what the objects depend on besides the user (whether the key may upload attachments):
// the hub renders a committed write's events once per distinct renderer of a user's streams, with
// a context of its own.
type renderer struct {
	conv            *conversation.Service
	attachmentWrite bool
}

func (r renderer) Render(ctx context.Context, userID int64, e event.Entry) ([]byte, bool, error) {
	ctx = conversation.WithAttachmentWrite(ctx, r.attachmentWrite)
	var (
		v   any
		err error
	)
	switch e.Type {
	case event.TypeConversationCreated, event.TypeConversationUpdated, event.TypeReadStateChanged:
		var conv conversation.Conversation
		conv, err = r.conv.Conversation(ctx, userID, e.ConversationID)
		v = map[string]conversation.Conversation{"conversation": conv}
	case event.TypeMessageCreated, event.TypeMessageUpdated, event.TypeReactionChanged:
		var m conversation.Message
		m, err = r.conv.Message(ctx, userID, e.MessageID)
		v = map[string]conversation.Message{"message": m}
	case event.TypeParticipantLeft:
		v = map[string]int64{"conversation_id": e.ConversationID}
	default:
		return nil, false, nil
	}
	if errors.Is(err, conversation.ErrConversationNotFound) || errors.Is(err, conversation.ErrMessageNotFound) {
		return nil, false, nil // no longer visible to the user: left, or deleted
	}
	if err != nil {
		return nil, false, err
	}
	b, err := json.Marshal(v)
	return b, err == nil, err
}

func (r renderer) Unread(ctx context.Context, userID int64) ([]byte, int64, error) {
	ctx = conversation.WithAttachmentWrite(ctx, r.attachmentWrite)
	me, err := r.conv.Me(ctx, userID)
	if err != nil {
		return nil, 0, err
	}
	b, err := json.Marshal(struct {
		Me conversation.Me `json:"me"`
	}{me})
	return b, me.ConversationsUnread, err
}

// cors lets the allowed origins read the stream's and the ticket's answers (and the errors),
// and answers their preflight requests: a browser asks before it sends a ticket request with
// Forum-Api-Key. A request from any other origin, or with none, is answered as usual, with no
// CORS header, so that the browser keeps it from the page.
func (a *api) cors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		origin := c.Request().Header.Get("Origin")
		if a.events == nil || origin == "" || !slices.Contains(a.events.AllowedOrigins, origin) {
			return next(c)
		}
		h := c.Response().Header()
		h.Add(echo.HeaderVary, "Origin")
		h.Set(echo.HeaderAccessControlAllowOrigin, origin)
		if c.Request().Method == http.MethodOptions && c.Request().Header.Get("Access-Control-Request-Method") != "" {
			h.Set(echo.HeaderAccessControlAllowMethods, a.allowed(c.Path()))
			h.Set(echo.HeaderAccessControlAllowHeaders, strings.Join([]string{auth.HeaderAPIKey, auth.HeaderAPIUser, "Last-Event-ID"}, ", "))
			h.Set(echo.HeaderAccessControlMaxAge, strconv.Itoa(600))
			return c.NoContent(http.StatusNoContent)
		}
		return next(c)
	}
}
