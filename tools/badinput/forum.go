package badinput

import (
	"math/rand/v2"
	"net/http"
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
}

// Forum answers of contract section 3 (and invalid_date, which forum-svc documents in its
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
)

func missingScope(scope string) Outcome {
	return Outcome{Status: 403, Code: "missing_scope", Params: map[string]any{"scope": scope}}
}

// forumRoute is one operation; path builds its path from an id segment.
type forumRoute struct {
	name   string
	method string
	path   func(id string) string
	write  bool
	msg    bool // the id is a message id
}

var forumRoutes = []forumRoute{
	{"conversation", http.MethodGet, func(id string) string { return "/api/conversations/" + id + "/" }, false, false},
	{"messages", http.MethodGet, func(id string) string { return "/api/conversations/" + id + "/messages" }, false, false},
	{"message", http.MethodGet, func(id string) string { return "/api/conversation-messages/" + id + "/" }, false, true},
	{"mark-unread", http.MethodPost, func(id string) string { return "/api/conversations/" + id + "/mark-unread" }, true, false},
	{"mark-read", http.MethodPost, func(id string) string { return "/api/conversations/" + id + "/mark-read" }, true, false},
}

func (rt forumRoute) notFound() Outcome {
	if rt.msg {
		return forumMsgNotFound
	}
	return forumConvNotFound
}

// ForumCorpus generates the forum-svc corpus from seed over the seeded data d.
func ForumCorpus(seed uint64, d ForumData) Corpus {
	r := rand.New(rand.NewPCG(seed, seed^0xf02a))
	var cs []Case
	id := func(v int64) string { return strconv.FormatInt(v, 10) }
	own := func(rt forumRoute) string {
		if rt.msg {
			return id(d.OwnMessage)
		}
		return id(d.Own)
	}
	foreign := func(rt forumRoute) string {
		if rt.msg {
			return id(d.ForeignMessage)
		}
		return id(d.Foreign)
	}
	key := func(k string) [][2]string { return [][2]string{{"Forum-Api-Key", k}} }
	// add sends rt's method (HEAD one time in five for a GET route) to target.
	add := func(name string, rt forumRoute, target string, hdr [][2]string, want ...Outcome) {
		c := Case{Name: name, Method: rt.method, Target: target, Header: hdr, Want: want}
		if rt.method == http.MethodGet && r.IntN(5) == 0 {
			c.Method = http.MethodHead
		}
		if rt.write {
			c.Header = append(c.Header, [2]string{"Content-Type", "application/x-www-form-urlencoded"})
			c.Body = []byte{}
		}
		cs = append(cs, c)
	}
	route := func() forumRoute { return forumRoutes[r.IntN(len(forumRoutes))] }
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
	msgs := forumRoutes[1]
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
		c := Case{Name: "key/" + rt.name + "/" + v.Label, Method: rt.method, Target: rt.path(own(rt)),
			Header: key(v.Dec), Want: []Outcome{forumKeyNotFound}, NetHTTP: v.headerCTL()}
		if rt.write {
			c.Body = []byte{}
		}
		cs = append(cs, c)
	}
	for _, rt := range forumRoutes {
		add("key/missing", rt, rt.path(own(rt)), nil, forumNoKey)
		add("key/empty", rt, rt.path(own(rt)), key(""), forumNoKey)
		add("key/inactive", rt, rt.path(own(rt)), key(d.InactiveKey), forumKeyInactive)
		add("key/expired", rt, rt.path(own(rt)), key(d.ExpiredKey), forumKeyInactive)
	}
	rt := route()
	add("key/upper-case", rt, rt.path(own(rt)), key(strings.ToUpper(d.UserKey)), forumKeyNotFound)
	add("key/suffix", rt, rt.path(own(rt)), key(d.UserKey+"x"), forumKeyNotFound)
	add("key/prefix", rt, rt.path(own(rt)), key(d.UserKey[:len(d.UserKey)-1]), forumKeyNotFound)
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
		c := Case{Name: "user/" + rt.name + "/" + v.Label, Method: rt.method, Target: rt.path(own(rt)),
			Header: [][2]string{{"Forum-Api-Key", d.SuperKey}, {"Forum-Api-User", v.Dec}}, Want: []Outcome{forumUserNotValid}, NetHTTP: v.headerCTL()}
		if rt.write {
			c.Body = []byte{}
		}
		cs = append(cs, c)
	}
	for _, rt := range forumRoutes {
		add("user/super-none", rt, rt.path(own(rt)), key(d.SuperKey), forumLoginRequired)
		add("user/guest", rt, rt.path(own(rt)), key(d.GuestKey), forumLoginRequired)
		add("user/guest-names-user", rt, rt.path(own(rt)), [][2]string{{"Forum-Api-Key", d.GuestKey}, {"Forum-Api-User", "1"}}, forumUserNotAllowed)
		add("user/user-names-other", rt, rt.path(own(rt)), [][2]string{{"Forum-Api-Key", d.UserKey}, {"Forum-Api-User", "2"}}, forumUserNotAllowed)
		add("user/super-unknown-user", rt, rt.path(own(rt)), [][2]string{{"Forum-Api-Key", d.SuperKey}, {"Forum-Api-User", strconv.Itoa(d.Users + 1000)}}, forumUserNotValid)
		add("user/super-two-users", rt, rt.path(own(rt)), [][2]string{{"Forum-Api-Key", d.SuperKey}, {"Forum-Api-User", "1"}, {"Forum-Api-User", "2"}}, forumUserNotValid)
		add("user/user-key-garbage", rt, rt.path(own(rt)), [][2]string{{"Forum-Api-Key", d.UserKey}, {"Forum-Api-User", "1 OR 1=1"}}, forumUserNotValid, forumUserNotAllowed)
	}

	// 5. Scopes.
	for _, rt := range forumRoutes {
		if rt.write {
			add("scope/read-only-writes", rt, rt.path(own(rt)), key(d.ReadOnlyKey), missingScope(scopeWrite))
		} else {
			add("scope/write-only-reads", rt, rt.path(own(rt)), key(d.WriteOnlyKey), missingScope(scopeRead))
		}
	}

	// 6. Objects that are not the user's, or do not exist: the same answer for both.
	for _, rt := range forumRoutes {
		add("object/foreign", rt, rt.path(foreign(rt)), key(d.UserKey), rt.notFound())
		add("object/missing", rt, rt.path(id(d.Missing)), key(d.UserKey), rt.notFound())
		add("object/super-as-outsider", rt, rt.path(own(rt)), [][2]string{{"Forum-Api-Key", d.SuperKey}, {"Forum-Api-User", "3"}}, rt.notFound())
	}

	// 7. Unknown routes, with and without a key.
	for _, p := range []string{
		"/", "/api", "/api/", "/api/conversations", "/api/conversation-messages", "/api/conversations/10/messages/1",
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

	// 8. Wrong methods, whatever the key.
	for _, rt := range forumRoutes {
		methods := []string{"PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "PROPFIND", "get"}
		if rt.write {
			methods = append(methods, "GET", "HEAD")
		} else {
			methods = append(methods, "POST")
		}
		for _, m := range methods {
			var hdr [][2]string
			if r.IntN(2) == 0 {
				hdr = key(d.UserKey)
			}
			c := Case{Name: "method/" + rt.name + "/" + m, Method: m, Target: rt.path(own(rt)), Header: hdr, Want: []Outcome{forumMethodNotAllowed}}
			if m == "POST" || m == "PUT" || m == "PATCH" {
				c.Header = append(c.Header, [2]string{"Content-Type", "application/json"})
				c.Body = []byte(`{"date": 1}`)
			}
			cs = append(cs, c)
		}
	}

	// 9. Wrong content types and bodies on the write routes, where another check decides.
	bodies := []struct{ ctype, body string }{
		{"application/json", `{"date": "now"`},
		{"multipart/form-data; boundary=zzz", "--zzz\r\nbroken"},
		{"multipart/form-data", "no boundary"},
		{"text/xml", `<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/passwd">]><a>&x;</a>`},
		{"application/x-www-form-urlencoded", "date=%zz&date=1"},
		{"application/x-www-form-urlencoded; charset=utf-7", "+AGQ-ate=1"},
		{"; ;;==", "\x00\x01"},
	}
	for _, b := range bodies {
		for _, rt := range forumRoutes[3:] {
			who := [][2]string{{"Forum-Api-Key", d.UserKey}}
			target, want := rt.path(id(d.Foreign)), rt.notFound()
			switch r.IntN(3) {
			case 0:
				who, want = nil, forumNoKey
			case 1:
				who, target, want = key(d.ReadOnlyKey), rt.path(id(d.Own)), missingScope(scopeWrite)
			}
			cs = append(cs, Case{Name: "content-type/" + rt.name, Method: rt.method, Target: target,
				Header: append(who, [2]string{"Content-Type", b.ctype}), Body: []byte(b.body), Want: []Outcome{want}})
		}
	}
	// A malformed mark-read date on the user's own conversation.
	read := forumRoutes[4]
	for _, body := range []string{"date=abc", "date=-5", "date=1.5", "date=1e9", "date=" + escapeAll("١"), "date=%00"} {
		cs = append(cs, Case{Name: "date", Method: http.MethodPost, Target: read.path(id(d.Own)),
			Header: [][2]string{{"Forum-Api-Key", d.UserKey}, {"Content-Type", "application/x-www-form-urlencoded"}},
			Body:   []byte(body), Want: []Outcome{forumInvalidDate}})
	}

	// 10. Header abuse (a request that reaches a handler has no key: 400).
	cs = append(cs, headerCases(r, msgs.path(id(d.Own)), forumNoKey)...)
	cs = append(cs, headerCases(r, msgs.path(id(d.Foreign)), forumConvNotFound, [2]string{"Forum-Api-Key", d.UserKey})[3:9]...)
	return Corpus{Service: "forum-svc", Envelope: ForumEnvelope, Cases: overLimits(cs)}
}
