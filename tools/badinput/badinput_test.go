package badinput

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

var testForum = ForumData{
	UserKey: "reliab-user-0123456789abcdefghijklmnopqrstuvwxyz", SuperKey: "reliab-super-0123456789abcdefghijklmnopqrstuvwxyz",
	GuestKey: "reliab-guest-0123456789abcdefghijklmnopqrstuvwxyz", InactiveKey: "reliab-inactive-0123456789abcdefghijklmnopqrstuv",
	ExpiredKey: "reliab-expired-0123456789abcdefghijklmnopqrstuvw", ReadOnlyKey: "reliab-ro-0123456789abcdefghijklmnopqrstuvwxyz",
	WriteOnlyKey: "reliab-wo-0123456789abcdefghijklmnopqrstuvwxyz",
	Own:          10, Foreign: 20, Missing: 999999, OwnMessage: 100000, ForeignMessage: 200000, LastPage: 5, Users: 50,
	Joined: 2001, JoinedMessage: 500001, Closed: 2002, Left: 2003, LeftMessage: 500003, Spare: 1010,
	Full: 2004, ListLastPage: 2, MaxRecipients: 20, MessageMaxLength: 10000,
}

// documented lists the codes each service may answer a bad request with (the error tables of
// forum-svc's and stats-svc's READMEs; invalid_date is forum-svc's documented addition for a
// malformed mark-read date; 414 and 431 are both services' answers to an oversized request head).
var documented = map[Envelope]map[string]int{
	StatsEnvelope: {"invalid_parameters": 400, "invalid_range": 400, "invalid_server": 400,
		"server_not_found": 404, "not_found": 404, "method_not_allowed": 405,
		"uri_too_long": 414, "request_header_fields_too_large": 431},
	ForumEnvelope: {"no_api_key_in_request": 400, "api_key_not_found": 401, "api_key_inactive": 403,
		"user_id_not_valid": 403, "user_id_not_allowed": 403, "missing_scope": 403, "login_required": 403,
		"requested_conversation_not_found": 404, "requested_message_not_found": 404, "invalid_page": 400,
		"endpoint_not_found": 404, "method_not_allowed": 405, "invalid_date": 400,
		"uri_too_long": 414, "request_header_fields_too_large": 431,
		// forum-svc's answers to a body over its limit and to one of another type.
		"request_entity_too_large": 413, "unsupported_media_type": 415,
		// The conversations API's error table.
		"required_input_missing": 400, "invalid_recipients": 400, "too_many_recipients": 400, "too_many_fields": 400,
		"title_too_long": 400, "message_too_long": 400, "invalid_input": 400, "no_permission": 403,
		"conversation_closed": 403, "invalid_idempotency_key": 400,
		"reacting_to_your_own_content_is_considered_cheating": 403,
		// The attachment key a write names.
		"invalid_attachment_key": 400},
}

func corpora() []Corpus {
	return []Corpus{StatsCorpus(1), ForumCorpus(1, testForum)}
}

func TestCorporaAreLargeDeterministicAndDocumented(t *testing.T) {
	for _, c := range corpora() {
		byCat := map[string]int{}
		netHTTP := 0
		for _, k := range c.Cases {
			byCat[strings.SplitN(k.Name, "/", 2)[0]]++
			if k.NetHTTP {
				netHTTP++
			}
		}
		t.Logf("%s: %d cases (%d marked NetHTTP) by category: %v", c.Service, len(c.Cases), netHTTP, byCat)
		if len(c.Cases) < 200 {
			t.Errorf("%s: %d cases, want at least 200", c.Service, len(c.Cases))
		}
		var again Corpus
		if c.Envelope == StatsEnvelope {
			again = StatsCorpus(1)
		} else {
			again = ForumCorpus(1, testForum)
		}
		if !reflect.DeepEqual(c, again) {
			t.Errorf("%s: the same seed gave another corpus", c.Service)
		}
		for _, k := range c.Cases {
			if len(k.Want) == 0 {
				t.Errorf("%s %s: no outcome wanted", c.Service, k.Name)
			}
			for _, o := range k.Want {
				if st, ok := documented[c.Envelope][o.Code]; !ok || st != o.Status {
					t.Errorf("%s %s: outcome %v is not a documented 4xx", c.Service, k.Name, o)
				}
			}
		}
	}
	if reflect.DeepEqual(StatsCorpus(1), StatsCorpus(2)) {
		t.Error("stats corpus does not depend on the seed")
	}
}

// TestCorporaCoverTheIssue checks that each corpus holds every kind of hostile input, at least two
// cases of each: values over 10 KB, %00, SQL fragments, path traversal, repeated parameters,
// content types, Unicode, negative numbers and numbers beyond int64; and requests of every method
// (GET, HEAD, POST, PUT, DELETE, OPTIONS) and of the header, path and method categories.
func TestCorporaCoverTheIssue(t *testing.T) {
	for _, c := range corpora() {
		text := map[string]bool{}
		methods := map[string]bool{}
		big, nul, sql, traversal, repeated, ctype, unicode, neg, overflow := 0, 0, 0, 0, 0, 0, 0, 0, 0
		for _, k := range c.Cases {
			req := string(k.Render("h"))
			methods[k.method()] = true
			text[strings.SplitN(k.Name, "/", 2)[0]] = true
			switch {
			case len(req) > 10<<10:
				big++
			}
			if strings.Contains(req, "%00") {
				nul++
			}
			if strings.Contains(k.Name, "sql") {
				sql++
			}
			if strings.Contains(k.Name, "traversal") || strings.Contains(req, "etc/passwd") || strings.Contains(req, "etc%2Fpasswd") {
				traversal++
			}
			if strings.Contains(k.Name, "repeated") {
				repeated++
			}
			if strings.Contains(k.Name, "content-type") {
				ctype++
			}
			if strings.Contains(k.Name, "unicode") || strings.Contains(k.Name, "emoji") {
				unicode++
			}
			if strings.Contains(k.Name, "negative") || strings.Contains(k.Name, "min-int64") {
				neg++
			}
			if strings.Contains(k.Name, "overflow") {
				overflow++
			}
		}
		for name, n := range map[string]int{"10 KB values": big, "%00": nul, "SQL": sql, "traversal": traversal,
			"repeated parameters": repeated, "content types": ctype, "Unicode": unicode, "negative numbers": neg,
			"beyond int64": overflow} {
			if n < 2 {
				t.Errorf("%s: only %d cases of %s", c.Service, n, name)
			}
		}
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"} {
			if !methods[m] {
				t.Errorf("%s: no %s request", c.Service, m)
			}
		}
		for _, cat := range []string{"header", "path", "method"} {
			if !text[cat] {
				t.Errorf("%s: no %s case", c.Service, cat)
			}
		}
	}
}

// TestForumCorpusCoversTheConversationsAPI checks that every operation and field of the
// conversations API has its bad input: hostile ids, recipient lists of 10,000 entries, 10 MB
// messages, invalid UTF-8, malformed Idempotency-Keys, other content types on every write,
// ownership.
func TestForumCorpusCoversTheConversationsAPI(t *testing.T) {
	c := ForumCorpus(1, testForum)
	byOp := map[string]int{}
	for _, k := range c.Cases {
		byOp[strings.SplitN(k.Name, "/", 2)[0]]++
	}
	// has wants at least min cases for which pred holds.
	has := func(what string, min int, pred func(Case) bool) {
		t.Helper()
		n := 0
		for _, k := range c.Cases {
			if pred(k) {
				n++
			}
		}
		if n < min {
			t.Errorf("%d cases of %s, want at least %d", n, what, min)
		}
	}
	code := func(k Case, want string) bool {
		for _, o := range k.Want {
			if o.Code == want {
				return true
			}
		}
		return false
	}
	for _, rt := range forumRoutes(testForum) {
		has(rt.name+" without a key", 1, func(k Case) bool {
			return k.Target == rt.target("") && code(k, "no_api_key_in_request")
		})
		if rt.scope != "" {
			has(rt.name+" without its scope", 1, func(k Case) bool { return k.Target == rt.target("") && code(k, "missing_scope") })
		}
		if rt.write {
			has(rt.name+" with a body of another type", 1, func(k Case) bool {
				return k.Target == rt.target("") && k.Method == rt.method && len(k.Want) == 1 && code(k, "unsupported_media_type")
			})
		}
		if rt.path != nil {
			has(rt.name+" on a foreign object", 1, func(k Case) bool {
				return k.Method == rt.method && k.Target == rt.path(strconv.FormatInt(testForum.Foreign, 10)) ||
					rt.msg && k.Target == rt.path(strconv.FormatInt(testForum.ForeignMessage, 10))
			})
		}
	}
	for _, op := range []string{"start", "reply", "edit", "update", "leave", "invite", "star", "react", "list-page", "list-filter", "idempotency-key"} {
		if byOp[op] < 5 {
			t.Errorf("%d cases of %s, want at least 5", byOp[op], op)
		}
	}
	has("10,000 recipients", 5, func(k Case) bool { return strings.Count(string(k.Body), "recipient_ids") >= 10000 })
	has("10 MB messages", 3, func(k Case) bool { return len(k.Body) >= 10<<20 && code(k, "request_entity_too_large") })
	has("messages over messageMaxLength", 5, func(k Case) bool { return code(k, "message_too_long") })
	has("titles over 100", 5, func(k Case) bool { return code(k, "title_too_long") })
	has("invalid UTF-8", 5, func(k Case) bool { return strings.Contains(string(k.Body), "%FF") && code(k, "invalid_input") })
	for _, h := range []struct{ name, escaped, code string }{
		{"terminal escapes", "%1B", "invalid_input"},
		{"C1 controls", "%C2%9B", "invalid_input"},
		{"right-to-left overrides", "%E2%80%AE", "invalid_input"},
		{"invisible titles and messages", "%E2%80%8B", "required_input_missing"},
	} {
		has(h.name+" in titles and messages", 4, func(k Case) bool {
			return strings.Contains(string(k.Body), h.escaped) && (strings.Contains(string(k.Body), "title=") ||
				strings.Contains(string(k.Body), "message=")) && code(k, h.code)
		})
	}
	has("malformed Idempotency-Keys", 10, func(k Case) bool { return code(k, "invalid_idempotency_key") })
	has("ownership violations", 3, func(k Case) bool { return code(k, "no_permission") })
	has("closed conversations", 2, func(k Case) bool { return code(k, "conversation_closed") })
	has("the left conversation", 5, func(k Case) bool {
		left := strconv.FormatInt(testForum.Left, 10)
		return strings.Contains(k.Target, "/"+left+"/") || strings.HasSuffix(k.Target, "/"+left) || strings.Contains(string(k.Body), "="+left)
	})
	has("a JSON mark-read", 1, func(k Case) bool {
		return strings.HasSuffix(k.Target, "/mark-read") && string(k.Body) == `{"date": 1767225600}` && code(k, "unsupported_media_type")
	})
}

// TestRequestsAreWellFormedHTTP makes sure a case that is not meant to break HTTP framing does
// not break it by accident: net/http must read it as the request it describes.
func TestRequestsAreWellFormedHTTP(t *testing.T) {
	for _, c := range corpora() {
		for _, k := range c.Cases {
			if k.NetHTTP {
				continue
			}
			req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(k.Render("example.test:80"))))
			if err != nil {
				t.Errorf("%s %s: %v", c.Service, k.Name, err)
				continue
			}
			if req.Method != k.Method || req.RequestURI != k.Target {
				t.Errorf("%s %s: read back %s %s", c.Service, k.Name, req.Method, req.RequestURI)
			}
		}
	}
}

func statsAnswer(status int, body string, hdr ...string) Answer {
	h := http.Header{"Content-Type": {"application/json; charset=UTF-8"}}
	for i := 0; i+1 < len(hdr); i += 2 {
		h.Set(hdr[i], hdr[i+1])
	}
	return Answer{Status: status, Header: h, Body: []byte(body)}
}

func TestCheck(t *testing.T) {
	get := Case{Method: "GET", Want: []Outcome{statsInvalidParameters, statsServerNotFound}}
	head := Case{Method: "HEAD", Want: []Outcome{statsInvalidParameters}}
	put := Case{Method: "PUT", Want: []Outcome{statsMethodNotAllowed}, Allow: statsAllow}
	net := Case{Method: "GET", Want: []Outcome{statsInvalidParameters}, NetHTTP: true}
	page := Case{Method: "GET", Want: []Outcome{{400, "invalid_page", map[string]any{"max": 5}}}}
	plain := Answer{Status: 431, Header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, Body: []byte("431 Request Header Fields Too Large")}
	forumErr := func(code, params string) string {
		return `{"errors":[{"code":"` + code + `","message":"m","params":` + params + `}]}`
	}
	tests := []struct {
		name  string
		env   Envelope
		c     Case
		a     Answer
		ok    bool
		bynet bool
	}{
		{"documented 400", StatsEnvelope, get, statsAnswer(400, `{"error":"invalid_parameters"}`), true, false},
		{"other documented outcome", StatsEnvelope, get, statsAnswer(404, `{"error":"server_not_found"}`), true, false},
		{"wrong code", StatsEnvelope, get, statsAnswer(400, `{"error":"invalid_range"}`), false, false},
		{"wrong status", StatsEnvelope, get, statsAnswer(422, `{"error":"invalid_parameters"}`), false, false},
		{"5xx", StatsEnvelope, get, statsAnswer(500, `{"error":"internal_error"}`), false, false},
		{"200", StatsEnvelope, get, statsAnswer(200, `{}`), false, false},
		{"not JSON", StatsEnvelope, get, statsAnswer(400, `invalid_parameters`), false, false},
		{"extra field", StatsEnvelope, get, statsAnswer(400, `{"error":"invalid_parameters","x":1}`), false, false},
		{"text content type", StatsEnvelope, get, Answer{Status: 400, Header: http.Header{"Content-Type": {"text/plain"}}, Body: []byte(`{"error":"invalid_parameters"}`)}, false, false},
		{"HEAD without body", StatsEnvelope, head, Answer{Status: 400, Header: http.Header{}}, true, false},
		{"HEAD with body", StatsEnvelope, head, Answer{Status: 400, Header: http.Header{}, Trailing: 30}, false, false},
		{"405 with Allow", StatsEnvelope, put, statsAnswer(405, `{"error":"method_not_allowed"}`, "Allow", "GET, HEAD"), true, false},
		{"405 without Allow", StatsEnvelope, put, statsAnswer(405, `{"error":"method_not_allowed"}`), false, false},
		{"405 wrong Allow", StatsEnvelope, put, statsAnswer(405, `{"error":"method_not_allowed"}`, "Allow", "GET"), false, false},
		{"net/http 431 where allowed", StatsEnvelope, net, plain, true, true},
		{"net/http 431 where not allowed", StatsEnvelope, get, plain, false, false},
		{"net/http 431 cut by a reset", StatsEnvelope, net, Answer{Status: 431, Header: plain.Header, Body: []byte("431 Request Hea"), Cut: true}, true, true},
		{"net/http 431 cut by a reset before its body", StatsEnvelope, net, Answer{Status: 431, Header: plain.Header, Cut: true}, true, true},
		{"a cut body that is not net/http's", StatsEnvelope, net, Answer{Status: 431, Header: plain.Header, Body: []byte("oops"), Cut: true}, false, false},
		{"service answer where net/http allowed", StatsEnvelope, net, statsAnswer(400, `{"error":"invalid_parameters"}`), true, false},
		{"net/http 400 to a HEAD where allowed", StatsEnvelope, Case{Method: "HEAD", Want: []Outcome{statsInvalidParameters}, NetHTTP: true},
			Answer{Status: 400, Header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, Trailing: 15}, true, true},
		{"JSON 400 without body to a HEAD is not net/http's", StatsEnvelope, Case{Method: "HEAD", Want: []Outcome{statsNotFound}, NetHTTP: true},
			statsAnswer(400, ``), false, false},
		{"forum envelope", ForumEnvelope, page, statsAnswer(400, forumErr("invalid_page", `{"max":5}`)), true, false},
		{"forum params differ", ForumEnvelope, page, statsAnswer(400, forumErr("invalid_page", `{"max":6}`)), false, false},
		{"forum params null", ForumEnvelope, Case{Method: "GET", Want: []Outcome{forumNoKey}}, statsAnswer(400, forumErr("no_api_key_in_request", `null`)), false, false},
		{"forum params any", ForumEnvelope, Case{Method: "GET", Want: []Outcome{forumNoKey}}, statsAnswer(400, forumErr("no_api_key_in_request", `{}`)), true, false},
		{"forum empty message", ForumEnvelope, Case{Method: "GET", Want: []Outcome{forumNoKey}}, statsAnswer(400, `{"errors":[{"code":"no_api_key_in_request","message":"","params":{}}]}`), false, false},
		{"forum no entries", ForumEnvelope, Case{Method: "GET", Want: []Outcome{forumNoKey}}, statsAnswer(400, `{"errors":[]}`), false, false},
		{"stats body for forum", ForumEnvelope, Case{Method: "GET", Want: []Outcome{forumNoKey}}, statsAnswer(400, `{"error":"no_api_key_in_request"}`), false, false},
	}
	for _, tt := range tests {
		v := Check(tt.env, tt.c, tt.a)
		if (v.Err == nil) != tt.ok || v.ByNetHTTP != tt.bynet {
			t.Errorf("%s: err %v, by net/http %v; want ok %v, by net/http %v", tt.name, v.Err, v.ByNetHTTP, tt.ok, tt.bynet)
		}
	}
}

// TestSendReadsHEADBody uses a server that wrongly sends a body after a HEAD answer.
func TestSendReadsHEADBody(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				body := `{"error":"invalid_parameters"}`
				_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 30\r\nConnection: close\r\n\r\n"))
				if req.Method == "HEAD" || req.URL.Query().Get("ok") == "" {
					_, _ = c.Write([]byte(body))
				}
			}()
		}
	}()
	a, err := Send(context.Background(), ln.Addr().String(), Case{Method: "HEAD", Target: "/x"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != 400 || a.Trailing != 30 {
		t.Fatalf("HEAD: status %d trailing %d, want 400 and 30", a.Status, a.Trailing)
	}
	a, err = Send(context.Background(), ln.Addr().String(), Case{Method: "GET", Target: "/x"})
	if err != nil || string(a.Body) != `{"error":"invalid_parameters"}` {
		t.Fatalf("GET: %v %q", err, a.Body)
	}
	rs := Run(context.Background(), ln.Addr().String(), Corpus{Envelope: StatsEnvelope, Cases: []Case{
		{Name: "a", Method: "GET", Target: "/x", Want: []Outcome{statsInvalidParameters}},
		{Name: "b", Method: "HEAD", Target: "/x", Want: []Outcome{statsInvalidParameters}},
	}}, 2)
	s := Summarize(rs)
	if s.Total != 2 || s.Passed != 1 || len(s.Failures) != 1 || s.Failures[0].Case.Name != "b" {
		t.Fatalf("summary %s", s)
	}
}

func FuzzParseEnvelope(f *testing.F) {
	f.Add(0, []byte(`{"error":"invalid_parameters"}`))
	f.Add(1, []byte(`{"errors":[{"code":"invalid_page","message":"m","params":{"max":3}}]}`))
	f.Add(1, []byte(`{"errors":[{"code":"x","message":"m","params":null}]}`))
	f.Add(0, []byte(`[]`))
	f.Fuzz(func(t *testing.T, env int, body []byte) {
		e := StatsEnvelope
		if env%2 != 0 {
			e = ForumEnvelope
		}
		code, params, err := ParseEnvelope(e, body)
		if err != nil {
			return
		}
		if code == "" {
			t.Fatal("accepted an empty code")
		}
		if e == ForumEnvelope && params == nil {
			t.Fatal("accepted forum errors without params")
		}
	})
}
