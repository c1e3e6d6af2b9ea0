package badinput

import (
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// ForumData is what the forum corpus needs to know about the seeded data.
type ForumData struct {
	UserKey, SuperKey, GuestKey string // user 1; super; guest (read and write scopes)
	InactiveKey, ExpiredKey     string // user 1, unusable
	ReadOnlyKey, WriteOnlyKey   string // user 1, one scope each
	Own, Foreign, Missing       int64  // conversations: of user 1; not of user 1; none
	OwnMessage, ForeignMessage  int64  // a message of each
	LastPage                    int    // of Own
	Users                       int    // users 1..Users exist

	// The conversations API's writes.
	Joined, JoinedMessage int64 // user 2 started it with user 1 (open_invite off); a message of user 2 in it
	Closed                int64 // user 1 started it closed
	Left, LeftMessage     int64 // user 1 left it for good (ignore); a message of it
	Full                  int64 // user 1 started it with MaxRecipients others
	// Spare is the first of spareConversations conversations that user 1 started with one other
	// user: the bad writes aim at them, so that one wrongly accepted does not change Own.
	Spare                           int64
	ListLastPage                    int // of user 1's conversation list
	MaxRecipients, MessageMaxLength int // the forum options (defaults 20, 10000)
}

// Forum answers of the authentication table of forum-svc/README.md (and invalid_date, which forum-svc documents in its
// README and OpenAPI document for a malformed mark-read date).
var (
	forumNoKey            = Outcome{Status: 400, Code: "no_api_key_in_request"}
	forumKeyNotFound      = Outcome{Status: 401, Code: "api_key_not_found"}
	forumKeyInactive      = Outcome{Status: 403, Code: "api_key_inactive"}
	forumUserNotValid     = Outcome{Status: 403, Code: "user_id_not_valid"}
	forumUserNotAllowed   = Outcome{Status: 403, Code: "user_id_not_allowed"}
	forumLoginRequired    = Outcome{Status: 403, Code: "login_required"}
	forumConvNotFound     = Outcome{Status: 404, Code: "requested_conversation_not_found"}
	forumMsgNotFound      = Outcome{Status: 404, Code: "requested_message_not_found"}
	forumInvalidPage      = Outcome{Status: 400, Code: "invalid_page"}
	forumEndpointNotFound = Outcome{Status: 404, Code: "endpoint_not_found"}
	forumMethodNotAllowed = Outcome{Status: 405, Code: "method_not_allowed"}
	forumInvalidDate      = Outcome{Status: 400, Code: "invalid_date"}
	scopeRead, scopeWrite = "conversation:read", "conversation:write"
	// The conversations API: a body over the limit or of another type, and the error table of
	// forum-svc/README.md's "The conversations API".
	forumTooLarge      = Outcome{Status: 413, Code: "request_entity_too_large"}
	unsupportedType    = Outcome{Status: 415, Code: "unsupported_media_type"}
	invalidIdempotency = Outcome{Status: 400, Code: "invalid_idempotency_key"}
	noPermission       = Outcome{Status: 403, Code: "no_permission"}
	conversationClosed = Outcome{Status: 403, Code: "conversation_closed"}
	reactOwnContent    = Outcome{Status: 403, Code: "reacting_to_your_own_content_is_considered_cheating"}
	// Where the offending values are too many to spell out, or two rules apply (the documented
	// order ranks neither), the code alone is checked.
	anyMissing           = Outcome{Status: 400, Code: "required_input_missing"}
	anyInvalidRecipients = Outcome{Status: 400, Code: "invalid_recipients"}
)

func missingScope(scope string) Outcome {
	return Outcome{Status: 403, Code: "missing_scope", Params: map[string]any{"scope": scope}}
}

// forumRoute is one operation; path builds its path from an id segment (nil: no id in the path).
type forumRoute struct {
	name   string
	method string
	path   func(id string) string
	write  bool
	msg    bool   // the id is a message id
	scope  string // "": a registered user, no particular scope
	body   string // a valid form of the operation
	// own is the object of user 1's that the route's checks aim at (0: no id).
	own int64
}

func convPath(suffix string) func(string) string {
	return func(id string) string { return "/api/conversations/" + id + suffix }
}

// forumRoutes lists every operation with a valid form on an object of user 1's. The writes that
// change their object (update, leave, reply, star, invite) aim at the spare conversations.
func forumRoutes(d ForumData) []forumRoute {
	msgPath := func(id string) string { return "/api/conversation-messages/" + id + "/" }
	get, post := http.MethodGet, http.MethodPost
	return []forumRoute{
		{"conversation", get, convPath("/"), false, false, scopeRead, "", d.Own},
		{"messages", get, convPath("/messages"), false, false, scopeRead, "", d.Own},
		{"message", get, msgPath, false, true, scopeRead, "", d.OwnMessage},
		{"mark-unread", post, convPath("/mark-unread"), true, false, scopeWrite, "", d.Own},
		{"mark-read", post, convPath("/mark-read"), true, false, scopeWrite, "", d.Own},
		{"list", get, nil, false, false, scopeRead, "", 0},
		{"start", post, nil, true, false, scopeWrite, "recipient_ids%5B%5D=2&title=Hello&message=Hi", 0},
		{"update", post, convPath("/"), true, false, scopeWrite, "title=Renamed", d.Spare},
		{"leave", http.MethodDelete, convPath("/"), true, false, scopeWrite, "", d.Spare + 1},
		{"reply", post, nil, true, false, scopeWrite, "conversation_id=" + strconv.FormatInt(d.Spare+2, 10) + "&message=Hi", 0},
		{"star", post, convPath("/star"), true, false, scopeWrite, "star=1", d.Spare + 3},
		{"invite", post, convPath("/invite"), true, false, scopeWrite, "recipient_ids%5B%5D=2", d.Spare + 4},
		{"edit", post, msgPath, true, true, scopeWrite, "message=Edited", d.OwnMessage},
		// Not on one's own message: JoinedMessage is user 2's.
		{"react", post, func(id string) string { return "/api/conversation-messages/" + id + "/react" }, true, true, scopeWrite,
			"reaction_id=1", d.JoinedMessage},
		{"me", get, nil, false, false, "", "", 0},
	}
}

// staticPaths are the paths of the routes without an id.
var staticPaths = map[string]string{
	"list": "/api/conversations/", "start": "/api/conversations", "reply": "/api/conversation-messages/", "me": "/api/me",
}

// target is the route's path on id (its own object when id is ""; its fixed path without an id).
func (rt forumRoute) target(id string) string {
	if rt.path == nil {
		return staticPaths[rt.name]
	}
	if id == "" {
		id = strconv.FormatInt(rt.own, 10)
	}
	return rt.path(id)
}

func (rt forumRoute) notFound() Outcome {
	if rt.msg {
		return forumMsgNotFound
	}
	return forumConvNotFound
}

// allowOf is the Allow header of each path template: the methods of its routes (HEAD with GET).
func allowOf(routes []forumRoute) map[string][]string {
	out := map[string][]string{}
	for _, rt := range routes {
		p := strings.TrimSuffix(rt.target("1"), "/")
		out[p] = append(out[p], rt.method)
		if rt.method == http.MethodGet {
			out[p] = append(out[p], http.MethodHead)
		}
	}
	return out
}

// ForumCorpus generates the forum-svc corpus from seed over the seeded data d.
func ForumCorpus(seed uint64, d ForumData) Corpus {
	r := rand.New(rand.NewPCG(seed, seed^0xf02a))
	var cs []Case
	id := func(v int64) string { return strconv.FormatInt(v, 10) }
	routes := forumRoutes(d)
	var withID, writes []forumRoute
	for _, rt := range routes {
		if rt.path != nil {
			withID = append(withID, rt)
		}
		if rt.write {
			writes = append(writes, rt)
		}
	}
	foreign := func(rt forumRoute) string {
		if rt.msg {
			return id(d.ForeignMessage)
		}
		return id(d.Foreign)
	}
	key := func(k string) [][2]string { return [][2]string{{"Forum-Api-Key", k}} }
	// add sends rt's method (HEAD one time in five for a GET route) to target, with the route's
	// valid form for a write.
	add := func(name string, rt forumRoute, target string, hdr [][2]string, want ...Outcome) {
		c := Case{Name: name, Method: rt.method, Target: target, Header: hdr, Want: want}
		if rt.method == http.MethodGet && r.IntN(5) == 0 {
			c.Method = http.MethodHead
		}
		if rt.write {
			c.Header = append(c.Header, [2]string{"Content-Type", "application/x-www-form-urlencoded"})
			c.Body = []byte(rt.body)
		}
		cs = append(cs, c)
	}
	route := func() forumRoute { return withID[r.IntN(len(withID))] }
	values := hostileValues(r, 10, 6)

	// 1. Hostile path ids: a malformed id is no route at all, a well-formed unknown one is an
	// object not found; with a key on two routes, without one on a third.
	for _, v := range values {
		seg := v.path()
		for range 2 {
			rt := route()
			add("id/"+rt.name+"/"+v.Label, rt, rt.path(seg), key(d.UserKey), forumEndpointNotFound, rt.notFound())
			// A malformed escape in the path fails net/http's request-URI parsing.
			cs[len(cs)-1].NetHTTP = v.RawQuery != ""
		}
		rt := route()
		add("id-no-key/"+rt.name+"/"+v.Label, rt, rt.path(seg), nil, forumEndpointNotFound, forumNoKey)
		cs[len(cs)-1].NetHTTP = v.RawQuery != ""
	}

	// 2. Hostile page values on the user's own conversation.
	msgs := routes[1]
	for _, v := range values {
		add("page/"+v.Label, msgs, msgs.path(id(d.Own))+"?page="+v.query(), key(d.UserKey), forumInvalidPage)
	}
	pastLast := Outcome{Status: 400, Code: "invalid_page", Params: map[string]any{"max": d.LastPage}}
	for _, p := range []string{strconv.Itoa(d.LastPage + 1), "9223372036854775807", "0000" + strconv.Itoa(d.LastPage+1)} {
		add("page/past-last", msgs, msgs.path(id(d.Own))+"?page="+p, key(d.UserKey), pastLast)
	}
	for _, q := range []string{"page=1&page=1", "page=-1&page=-1", "page=1&page=2", "page=&page=", "page=1&PAGE=x&page=x"} {
		add("page/repeated", msgs, msgs.path(id(d.Own))+"?"+q, key(d.UserKey), forumInvalidPage)
	}
	// A foreign conversation never reveals its page count.
	for _, p := range []string{"1", strconv.Itoa(d.LastPage + 1), "9223372036854775807"} {
		add("page/foreign", msgs, msgs.path(id(d.Foreign))+"?page="+p, key(d.UserKey), forumConvNotFound)
	}

	// 3. The key header.
	for _, v := range values {
		if !v.headerSafe() || strings.TrimSpace(v.Dec) == "" {
			continue
		}
		rt := route()
		c := Case{Name: "key/" + rt.name + "/" + v.Label, Method: rt.method, Target: rt.target(""),
			Header: key(v.Dec), Want: []Outcome{forumKeyNotFound}, NetHTTP: v.headerCTL()}
		if rt.write {
			c.Body = []byte(rt.body)
		}
		cs = append(cs, c)
	}
	for _, rt := range routes {
		add("key/missing", rt, rt.target(""), nil, forumNoKey)
		add("key/empty", rt, rt.target(""), key(""), forumNoKey)
		add("key/inactive", rt, rt.target(""), key(d.InactiveKey), forumKeyInactive)
		add("key/expired", rt, rt.target(""), key(d.ExpiredKey), forumKeyInactive)
	}
	rt := route()
	add("key/upper-case", rt, rt.target(""), key(strings.ToUpper(d.UserKey)), forumKeyNotFound)
	add("key/suffix", rt, rt.target(""), key(d.UserKey+"x"), forumKeyNotFound)
	add("key/prefix", rt, rt.target(""), key(d.UserKey[:len(d.UserKey)-1]), forumKeyNotFound)
	add("key/in-query", msgs, msgs.path(id(d.Own))+"?api_key="+escapeAll(d.UserKey)+"&key="+escapeAll(d.UserKey), nil, forumNoKey)
	add("key/bearer", msgs, msgs.path(id(d.Own)), [][2]string{{"Authorization", "Bearer " + d.UserKey}}, forumNoKey)
	add("key/two-bogus", msgs, msgs.path(id(d.Own)), [][2]string{{"Forum-Api-Key", "a"}, {"Forum-Api-Key", "b"}}, forumKeyNotFound, forumNoKey)
	add("key/valid-and-bogus", msgs, msgs.path(id(d.Own)), [][2]string{{"Forum-Api-Key", d.UserKey}, {"Forum-Api-Key", "bogus"}}, forumKeyNotFound, forumNoKey)
	add("key/10KB", msgs, msgs.path(id(d.Own)), key(strings.Repeat("k", 10<<10)), forumKeyNotFound)

	// 4. The acting user: hostile Forum-Api-User with the super key, others with other keys.
	for _, v := range values {
		dec := strings.Trim(v.Dec, " \t")
		if !v.headerSafe() || dec == "" {
			continue
		}
		if n, err := strconv.Atoi(dec); err == nil && n >= 1 && n <= d.Users && isDigits(dec, 20) {
			continue // an existing user: not bad input
		}
		rt := route()
		c := Case{Name: "user/" + rt.name + "/" + v.Label, Method: rt.method, Target: rt.target(""),
			Header: [][2]string{{"Forum-Api-Key", d.SuperKey}, {"Forum-Api-User", v.Dec}}, Want: []Outcome{forumUserNotValid}, NetHTTP: v.headerCTL()}
		if rt.write {
			c.Body = []byte(rt.body)
		}
		cs = append(cs, c)
	}
	for _, rt := range routes {
		add("user/super-none", rt, rt.target(""), key(d.SuperKey), forumLoginRequired)
		add("user/guest", rt, rt.target(""), key(d.GuestKey), forumLoginRequired)
		add("user/guest-names-user", rt, rt.target(""), [][2]string{{"Forum-Api-Key", d.GuestKey}, {"Forum-Api-User", "1"}}, forumUserNotAllowed)
		add("user/user-names-other", rt, rt.target(""), [][2]string{{"Forum-Api-Key", d.UserKey}, {"Forum-Api-User", "2"}}, forumUserNotAllowed)
		add("user/super-unknown-user", rt, rt.target(""), [][2]string{{"Forum-Api-Key", d.SuperKey}, {"Forum-Api-User", strconv.Itoa(d.Users + 1000)}}, forumUserNotValid)
		add("user/super-two-users", rt, rt.target(""), [][2]string{{"Forum-Api-Key", d.SuperKey}, {"Forum-Api-User", "1"}, {"Forum-Api-User", "2"}}, forumUserNotValid)
		add("user/user-key-garbage", rt, rt.target(""), [][2]string{{"Forum-Api-Key", d.UserKey}, {"Forum-Api-User", "1 OR 1=1"}}, forumUserNotValid, forumUserNotAllowed)
	}

	// 5. Scopes (GET /api/me/ needs none).
	for _, rt := range routes {
		switch {
		case rt.scope == "":
		case rt.write:
			add("scope/read-only-writes", rt, rt.target(""), key(d.ReadOnlyKey), missingScope(scopeWrite))
		default:
			add("scope/write-only-reads", rt, rt.target(""), key(d.WriteOnlyKey), missingScope(scopeRead))
		}
	}

	// 6. Objects that are not the user's, or do not exist: the same answer for both.
	for _, rt := range withID {
		add("object/foreign", rt, rt.path(foreign(rt)), key(d.UserKey), rt.notFound())
		add("object/missing", rt, rt.path(id(d.Missing)), key(d.UserKey), rt.notFound())
		add("object/super-as-outsider", rt, rt.target(""), [][2]string{{"Forum-Api-Key", d.SuperKey}, {"Forum-Api-User", "3"}}, rt.notFound())
	}

	// 7. Unknown routes, with and without a key.
	for _, p := range []string{
		"/", "/api", "/api/", "/api/conversation", "/api/conversation-messages/x/y", "/api/conversations/10/messages/1",
		"/api/me/1", "/api/me/conversations", "/api/conversations/10/star/1", "/api/conversations/10/invite/2",
		"/api/conversations/10/mark-unread/x", "/api/conversations/10/delete", "/api/users/1", "/api/CONVERSATIONS/10/messages",
		"/api/conversations/10/Messages", "/api/conversations/10/messages%00", "/api/" + strings.Repeat("x", 10240),
		"/api/" + escapeAll(randomBytes(r, 40)), "/api/" + escapeAll("переписка"), "/api/conversations/10/../../../etc/passwd",
		"/api/conversations/%2e%2e/%2e%2e/etc/passwd", "/api/conversations/10/messages;page=2",
	} {
		hdr := key(d.UserKey)
		if r.IntN(2) == 0 {
			hdr = nil
		}
		cs = append(cs, Case{Name: "path", Method: pick(r, "GET", "GET", "POST", "HEAD"), Target: p, Header: hdr, Want: []Outcome{forumEndpointNotFound}})
	}

	// 8. Wrong methods, whatever the key: 405 with the path's methods in Allow.
	allow := allowOf(routes)
	for _, rt := range routes {
		p := rt.target("")
		allowed := allow[strings.TrimSuffix(rt.target("1"), "/")]
		if rt.method != allowed[0] {
			continue // one route of the path tries the wrong methods
		}
		for _, m := range []string{"PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "PROPFIND", "get", "GET", "HEAD", "POST"} {
			if slices.Contains(allowed, m) {
				continue
			}
			var hdr [][2]string
			if r.IntN(2) == 0 {
				hdr = key(d.UserKey)
			}
			c := Case{Name: "method/" + rt.name + "/" + m, Method: m, Target: p, Header: hdr,
				Want: []Outcome{forumMethodNotAllowed}, Allow: strings.Join(allowed, ", ")}
			if m == "POST" || m == "PUT" || m == "PATCH" {
				c.Header = append(c.Header, [2]string{"Content-Type", "application/json"})
				c.Body = []byte(`{"date": 1}`)
			}
			cs = append(cs, c)
		}
	}

	// 9. Wrong content types and bodies on every write. Without a key, or without the scope,
	// those checks decide; on a foreign object, the body's type or the object may (the documented
	// order ranks neither); on the user's own object, a non-empty body of another type is 415.
	bodies := []struct {
		ctype, body string
		want        Outcome // on the user's own object
	}{
		{"application/json", `{"date": "now"`, unsupportedType},
		{"application/json", `{"date": 1767225600}`, unsupportedType},
		{"multipart/form-data; boundary=zzz", "--zzz\r\nbroken", invalidInput("body")},
		{"multipart/form-data", "no boundary", invalidInput("body")},
		{"text/xml", `<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/passwd">]><a>&x;</a>`, unsupportedType},
		{"text/plain", "message=hello", unsupportedType},
		{"", "message=hello", unsupportedType},
		{"; ;;==", "\x00\x01", unsupportedType},
	}
	for _, b := range bodies {
		for _, rt := range writes {
			var hdr [][2]string
			if b.ctype != "" {
				hdr = [][2]string{{"Content-Type", b.ctype}}
			}
			with := func(k string) [][2]string { return append(key(k), hdr...) }
			body := []byte(b.body)
			name := "content-type/" + rt.name
			cs = append(cs, Case{Name: name, Method: rt.method, Target: rt.target(""), Header: with(d.UserKey), Body: body, Want: []Outcome{b.want}})
			switch r.IntN(3) {
			case 0:
				cs = append(cs, Case{Name: name, Method: rt.method, Target: rt.target(""), Header: hdr, Body: body, Want: []Outcome{forumNoKey}})
			case 1:
				cs = append(cs, Case{Name: name, Method: rt.method, Target: rt.target(""), Header: with(d.ReadOnlyKey), Body: body, Want: []Outcome{missingScope(scopeWrite)}})
			default:
				if rt.path != nil {
					cs = append(cs, Case{Name: name, Method: rt.method, Target: rt.path(foreign(rt)), Header: with(d.UserKey), Body: body, Want: []Outcome{b.want, rt.notFound()}})
				}
			}
		}
	}
	// A malformed mark-read date on the user's own conversation (on a foreign one: the date or
	// the object).
	read := routes[4]
	for _, body := range []string{"date=abc", "date=-5", "date=1.5", "date=1e9", "date=" + escapeAll("١"), "date=%00", "date=%zz&date=1"} {
		cs = append(cs, Case{Name: "date", Method: http.MethodPost, Target: read.target(""),
			Header: [][2]string{{"Forum-Api-Key", d.UserKey}, {"Content-Type", "application/x-www-form-urlencoded"}},
			Body:   []byte(body), Want: []Outcome{forumInvalidDate}})
	}
	cs = append(cs, Case{Name: "date/foreign", Method: http.MethodPost, Target: read.path(id(d.Foreign)),
		Header: [][2]string{{"Forum-Api-Key", d.UserKey}, {"Content-Type", "application/x-www-form-urlencoded"}},
		Body:   []byte("date=%zz&date=1"), Want: []Outcome{forumInvalidDate, forumConvNotFound}})

	// The conversations API's fields (conversations.go).
	cs = append(cs, conversationCases(r, d, values)...)
	cs = append(cs, attachmentCases(d, values)...)

	// 10. Header abuse (a request that reaches a handler has no key: 400).
	cs = append(cs, headerCases(r, msgs.path(id(d.Own)), forumNoKey)...)
	cs = append(cs, headerCases(r, msgs.path(id(d.Foreign)), forumConvNotFound, [2]string{"Forum-Api-Key", d.UserKey})[3:9]...)
	return Corpus{Service: "forum-svc", Envelope: ForumEnvelope, Cases: overLimits(cs)}
}
