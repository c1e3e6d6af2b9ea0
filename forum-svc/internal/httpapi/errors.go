package httpapi

import (
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/labstack/echo/v4"

	"forumstats.local/forum-svc/internal/attachment"
	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/forum-svc/internal/event"
	"forumstats.local/shared/server"
)

// Error codes, each documented in the README and the OpenAPI document.
const (
	CodeNoAPIKey              = "no_api_key_in_request"
	CodeAPIKeyNotFound        = "api_key_not_found"
	CodeAPIKeyInactive        = "api_key_inactive"
	CodeUserIDNotValid        = "user_id_not_valid"
	CodeUserIDNotAllowed      = "user_id_not_allowed"
	CodeMissingScope          = "missing_scope"
	CodeLoginRequired         = "login_required"
	CodeConversationNotFound  = "requested_conversation_not_found"
	CodeMessageNotFound       = "requested_message_not_found"
	CodeInvalidPage           = "invalid_page"
	CodeInvalidDate           = "invalid_date"
	CodeEndpointNotFound      = "endpoint_not_found"
	CodeMethodNotAllowed      = "method_not_allowed"
	CodeTooManyRequests       = "too_many_requests"
	CodeRequestEntityTooLarge = "request_entity_too_large"
	CodeURITooLong            = "uri_too_long"
	CodeHeadersTooLarge       = "request_header_fields_too_large"
	CodeServerError           = "server_error_occurred"
	// The conversations API's writes and list.
	CodeRequiredInputMissing  = "required_input_missing"
	CodeInvalidRecipients     = "invalid_recipients"
	CodeTooManyRecipients     = "too_many_recipients"
	CodeTitleTooLong          = "title_too_long"
	CodeMessageTooLong        = "message_too_long"
	CodeInvalidInput          = "invalid_input"
	CodeNoPermission          = "no_permission"
	CodeConversationClosed    = "conversation_closed"
	CodeInvalidIdempotencyKey = "invalid_idempotency_key"
	CodeIdempotencyKeyReused  = "idempotency_key_reused"
	CodeRequestInProgress     = "request_in_progress"
	CodeUnsupportedMediaType  = "unsupported_media_type"
	// An author's edit past the forum's editOwnMessageTimeLimit.
	CodeEditTimeLimitExpired = "message_edit_time_limit_expired"
	// A reaction to one's own message, named as XenForo names it.
	CodeReactOwnContent = "reacting_to_your_own_content_is_considered_cheating"
	// Attachments.
	CodeAttachmentNotFound     = "requested_attachment_not_found"
	CodeNoThumbnail            = "attachment_has_no_thumbnail"
	CodeAttachmentKeyNotFound  = "invalid_attachment_key"
	CodeAttachmentKeyUserWrong = "attachment_key_user_wrong"
	CodeAttachmentKeyContext   = "attachment_key_context_wrong"
	CodeFileTooLarge           = "uploaded_file_is_too_large"
	CodeExtensionNotAllowed    = "uploaded_file_does_not_have_an_allowed_extension"
	CodeTooManyAttachments     = "you_may_only_attach_x_files"
	// Client mistakes on the wire (shared/server.ClientError).
	CodeMalformedBody  = "malformed_body"
	CodeRequestTimeout = "request_timeout"
	CodeTooManyFields  = "too_many_fields"
	// The event stream.
	CodeInvalidLastEventID = "invalid_last_event_id"
)

// ErrorBody is the body of every error response.
type ErrorBody struct {
	Errors []ErrorEntry `json:"errors"`
}

// ErrorEntry is one error: code for programs, message for people, params always an object.
type ErrorEntry struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Params  map[string]any `json:"params"`
}

type errorSpec struct {
	status  int
	code    string
	message string
}

// errorTable is the single mapping from domain and auth errors to HTTP.
var errorTable = []struct {
	err error
	errorSpec
}{
	{auth.ErrNoAPIKey, errorSpec{http.StatusBadRequest, CodeNoAPIKey, "The Forum-Api-Key header is required."}},
	{auth.ErrAPIKeyNotFound, errorSpec{http.StatusUnauthorized, CodeAPIKeyNotFound, "The API key is not known."}},
	{auth.ErrAPIKeyInactive, errorSpec{http.StatusForbidden, CodeAPIKeyInactive, "The API key is inactive or has expired."}},
	{auth.ErrUserIDNotValid, errorSpec{http.StatusForbidden, CodeUserIDNotValid, "Forum-Api-User must be the id of an existing user."}},
	{auth.ErrUserIDNotAllowed, errorSpec{http.StatusForbidden, CodeUserIDNotAllowed, "This API key may not act as another user."}},
	{auth.ErrLoginRequired, errorSpec{http.StatusForbidden, CodeLoginRequired, "This operation requires a registered user."}},
	{conversation.ErrConversationNotFound, errorSpec{http.StatusNotFound, CodeConversationNotFound, "The requested conversation could not be found."}},
	{conversation.ErrMessageNotFound, errorSpec{http.StatusNotFound, CodeMessageNotFound, "The requested message could not be found."}},
	{conversation.ErrInvalidDate, errorSpec{http.StatusBadRequest, CodeInvalidDate, "date must be a non-negative integer of Unix seconds."}},
	{conversation.ErrNoPermission, errorSpec{http.StatusForbidden, CodeNoPermission, "You do not have permission to do this."}},
	{conversation.ErrReactOwnContent, errorSpec{http.StatusForbidden, CodeReactOwnContent, "Reacting to your own message is not allowed."}},
	{conversation.ErrConversationClosed, errorSpec{http.StatusForbidden, CodeConversationClosed, "The conversation is closed: it takes no reply, no invite and no edit."}},
	{conversation.ErrInvalidIdempotencyKey, errorSpec{http.StatusBadRequest, CodeInvalidIdempotencyKey, "Idempotency-Key must be 1 to 255 printable ASCII characters."}},
	{conversation.ErrIdempotencyKeyReused, errorSpec{http.StatusUnprocessableEntity, CodeIdempotencyKeyReused, "This Idempotency-Key was used for a different request."}},
	{conversation.ErrRequestInProgress, errorSpec{http.StatusConflict, CodeRequestInProgress, "A request with this Idempotency-Key is still in progress; retry later."}},
	{attachment.ErrNotFound, errorSpec{http.StatusNotFound, CodeAttachmentNotFound, "The requested attachment could not be found."}},
	{attachment.ErrNoThumbnail, errorSpec{http.StatusNotFound, CodeNoThumbnail, "The attachment has no thumbnail: it is not a PNG, JPEG or GIF image, or its image is too large to scale."}},
	{conversation.ErrAttachmentKeyNotFound, errorSpec{http.StatusBadRequest, CodeAttachmentKeyNotFound, "The attachment key is not known, or has expired."}},
	{conversation.ErrAttachmentKeyUserWrong, errorSpec{http.StatusForbidden, CodeAttachmentKeyUserWrong, "The attachment key belongs to another user."}},
	{event.ErrInvalidLastEventID, errorSpec{http.StatusBadRequest, CodeInvalidLastEventID, "Last-Event-ID (or last_event_id) must be a non-negative integer."}},
	{conversation.ErrAttachmentKeyContextWrong, errorSpec{http.StatusBadRequest, CodeAttachmentKeyContext, "The attachment key was given for another conversation."}},
}

// Errors that carry parameters, and the ones the HTTP layer raises itself. Each is declared
// through httpSpec, which also lists it in httpSpecs: allCodes reads that list, so a new code is
// one line here (or in errorTable) and the tests check the OpenAPI document and the README
// against it.
var (
	specMissingScope     = httpSpec(http.StatusForbidden, CodeMissingScope, "The API key lacks a scope this operation needs.")
	specInvalidPage      = httpSpec(http.StatusBadRequest, CodeInvalidPage, "page must be a positive integer.")
	specPagePastLast     = httpSpec(http.StatusBadRequest, CodeInvalidPage, "page is past the last page.")
	specTooManyRequests  = httpSpec(http.StatusTooManyRequests, CodeTooManyRequests, "Too many requests for this API key; retry later.")
	specTooManyFailures  = httpSpec(http.StatusTooManyRequests, CodeTooManyRequests, "Too many failed authentications from this address; retry later.")
	specLookupsBusy      = httpSpec(http.StatusTooManyRequests, CodeTooManyRequests, "Too many new API keys to check at the moment; retry later.")
	specEndpointNotFound = httpSpec(http.StatusNotFound, CodeEndpointNotFound, "The requested endpoint could not be found.")
	specMethodNotAllowed = httpSpec(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "This endpoint does not accept this method.")
	specTooLarge         = httpSpec(http.StatusRequestEntityTooLarge, CodeRequestEntityTooLarge, "The request body is too large.")
	specURITooLong       = httpSpec(http.StatusRequestURITooLong, CodeURITooLong, "The request target (path and query string) is too long.")
	specHeadersTooLarge  = httpSpec(http.StatusRequestHeaderFieldsTooLarge, CodeHeadersTooLarge, "The request header fields are too large.")
	specServerError      = httpSpec(http.StatusInternalServerError, CodeServerError, "An unexpected error occurred.")
	specUnsupportedType  = httpSpec(http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "The body must be application/x-www-form-urlencoded or multipart/form-data.")
	specMissingInput     = httpSpec(http.StatusBadRequest, CodeRequiredInputMissing, "Required input is missing.")
	specInvalidRecipient = httpSpec(http.StatusBadRequest, CodeInvalidRecipients, "Recipients must be ids of existing users.")
	specTooManyRecip     = httpSpec(http.StatusBadRequest, CodeTooManyRecipients, "The conversation would have too many recipients.")
	specTitleTooLong     = httpSpec(http.StatusBadRequest, CodeTitleTooLong, "The title is too long.")
	specMessageTooLong   = httpSpec(http.StatusBadRequest, CodeMessageTooLong, "The message is too long.")
	specInvalidInput     = httpSpec(http.StatusBadRequest, CodeInvalidInput, "A field has a malformed value.")
	specEditTimeLimit    = httpSpec(http.StatusForbidden, CodeEditTimeLimitExpired, "The time allowed to edit this message has passed.")
	specMalformedBody    = httpSpec(http.StatusBadRequest, CodeMalformedBody, "The request body or its framing is malformed, or the body was cut short.")
	specRequestTimeout   = httpSpec(http.StatusRequestTimeout, CodeRequestTimeout, "The request body did not arrive in time.")
	specTooManyFields    = httpSpec(http.StatusBadRequest, CodeTooManyFields, "The request has too many form fields.")
	specFileTooLarge     = httpSpec(http.StatusBadRequest, CodeFileTooLarge, "The uploaded file is too large.")
	specExtension        = httpSpec(http.StatusBadRequest, CodeExtensionNotAllowed, "The uploaded file does not have an allowed extension.")
	specTooManyAttach    = httpSpec(http.StatusBadRequest, CodeTooManyAttachments, "A message holds no more attachments.")
)

// httpSpecs lists every errorSpec declared through httpSpec, in declaration order.
var httpSpecs []errorSpec

// httpSpec declares an answer of the HTTP layer and lists it in httpSpecs.
func httpSpec(status int, code, message string) errorSpec {
	s := errorSpec{status, code, message}
	httpSpecs = append(httpSpecs, s)
	return s
}

// allCodes lists every code the service answers with, once each, in the order declared: the
// domain errors' (errorTable), then the HTTP layer's (httpSpecs).
func allCodes() []string {
	var codes []string
	for _, e := range errorTable {
		codes = append(codes, e.code)
	}
	for _, s := range httpSpecs {
		codes = append(codes, s.code)
	}
	slices.Sort(codes)
	return slices.Compact(codes)
}

// rateLimitedError is a request refused by the key's rate limit, or (byAddress) by its address's
// limit of failed authentications.
type rateLimitedError struct {
	retryAfter int64
	byAddress  bool
}

func (e *rateLimitedError) Error() string { return "rate limit exceeded" }

// classify finds the response for err: its spec and params. ok is false for an unexpected error.
func classify(err error) (spec errorSpec, params map[string]any, ok bool) {
	params = map[string]any{}
	for _, e := range errorTable {
		if errors.Is(err, e.err) {
			return e.errorSpec, params, true
		}
	}
	var (
		scopeErr *auth.MissingScopeError
		pageErr  *conversation.InvalidPageError
		rateErr  *rateLimitedError
		httpErr  *echo.HTTPError
		missing  *conversation.MissingInputError
		badRecip *conversation.InvalidRecipientsError
		tooMany  *conversation.TooManyRecipientsError
		tooLong  *conversation.TooLongError
		badInput *conversation.InvalidInputError
		editLate *conversation.EditTimeLimitError
		tooMuch  *TooManyFieldsError
		busy     *auth.BusyError
		tooBig   *attachment.TooLargeError
		badExt   *attachment.ExtensionError
		tooMuchA *conversation.TooManyAttachmentsError
	)
	switch {
	case errors.As(err, &tooBig):
		params["max"] = tooBig.Max
		return specFileTooLarge, params, true
	case errors.As(err, &badExt):
		params["allowed"] = badExt.Allowed
		return specExtension, params, true
	case errors.As(err, &tooMuchA):
		params["max"] = tooMuchA.Max
		return specTooManyAttach, params, true
	case errors.As(err, &missing):
		params["missing"] = missing.Fields
		return specMissingInput, params, true
	case errors.As(err, &badRecip):
		params["user_ids"] = badRecip.Values
		return specInvalidRecipient, params, true
	case errors.As(err, &tooMany):
		params["max"] = tooMany.Max
		return specTooManyRecip, params, true
	case errors.As(err, &tooLong):
		params["max"] = tooLong.Max
		if tooLong.Field == conversation.FieldTitle {
			return specTitleTooLong, params, true
		}
		return specMessageTooLong, params, true
	case errors.As(err, &tooMuch):
		params["max"] = tooMuch.Max
		return specTooManyFields, params, true
	case errors.As(err, &badInput):
		params["field"] = badInput.Field
		return specInvalidInput, params, true
	case errors.As(err, &editLate):
		params["minutes"] = editLate.Minutes
		return specEditTimeLimit, params, true
	case errors.As(err, &scopeErr):
		params["scope"] = scopeErr.Scope
		return specMissingScope, params, true
	case errors.As(err, &pageErr):
		if pageErr.Max > 0 {
			params["max"] = pageErr.Max
			return specPagePastLast, params, true
		}
		return specInvalidPage, params, true
	case errors.As(err, &rateErr):
		if rateErr.byAddress {
			return specTooManyFailures, params, true
		}
		return specTooManyRequests, params, true
	case errors.As(err, &busy):
		return specLookupsBusy, params, true
	case errors.As(err, &httpErr):
		switch httpErr.Code {
		case http.StatusNotFound:
			return specEndpointNotFound, params, true
		case http.StatusMethodNotAllowed:
			return specMethodNotAllowed, params, true
		case http.StatusRequestEntityTooLarge:
			return specTooLarge, params, true
		case http.StatusRequestURITooLong: // shared/server's head limits
			return specURITooLong, params, true
		case http.StatusRequestHeaderFieldsTooLarge:
			return specHeadersTooLarge, params, true
		case http.StatusUnsupportedMediaType:
			return specUnsupportedType, params, true
		case http.StatusBadRequest: // shared/server.ClientError: framing, a cut body
			return specMalformedBody, params, true
		case http.StatusRequestTimeout:
			return specRequestTimeout, params, true
		}
	}
	return specServerError, params, false
}

// errorHandler writes every error in the `errors` envelope. It never shows internals: an
// unexpected error is logged with the request id and answered with server_error_occurred.
func (a *api) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	spec, params, ok := classify(err)
	if !ok {
		server.Logger(c).Error("request failed", "err", err)
	}
	h := c.Response().Header()
	var (
		rateErr *rateLimitedError
		busy    *auth.BusyError
	)
	switch {
	case errors.As(err, &rateErr):
		h.Set("Retry-After", strconv.FormatInt(rateErr.retryAfter, 10))
	case errors.As(err, &busy):
		h.Set("Retry-After", strconv.FormatInt(busy.RetryAfterSeconds(), 10))
	}
	if spec.code == CodeMethodNotAllowed {
		h.Set(echo.HeaderAllow, a.allowed(c.Path()))
	}
	body := ErrorBody{Errors: []ErrorEntry{{Code: spec.code, Message: spec.message, Params: params}}}
	// For HEAD, net/http sends the headers of this response and drops the body.
	if werr := writeJSON(c, spec.status, body); werr != nil {
		server.Logger(c).Warn("write error response", "err", werr)
	}
}
