package badinput

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
)

// Stats answers: stats-svc's error codes with their statuses (stats-svc/README.md, Order of checks).
var (
	statsInvalidParameters = Outcome{Status: 400, Code: "invalid_parameters"}
	statsInvalidRange      = Outcome{Status: 400, Code: "invalid_range"}
	statsInvalidServer     = Outcome{Status: 400, Code: "invalid_server"}
	statsServerNotFound    = Outcome{Status: 404, Code: "server_not_found"}
	statsNotFound          = Outcome{Status: 404, Code: "not_found"}
	statsMethodNotAllowed  = Outcome{Status: 405, Code: "method_not_allowed"}
	// Both services answer an oversized request head (shared/server) with these codes, each in
	// its own envelope.
	uriTooLong      = Outcome{Status: 414, Code: "uri_too_long"}
	headersTooLarge = Outcome{Status: 431, Code: "request_header_fields_too_large"}
)

const statsAllow = "GET, HEAD"

// StatsCorpus generates the stats-svc corpus from seed. No server of the catalog may have the
// number 0 or a number above 10^18 (the corpus uses such well-formed numbers as unknown servers).
func StatsCorpus(seed uint64) Corpus {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	var cs []Case
	stats := func() string { return pick(r, "/api/chat-statistics", "/api/chat-statistics/") }
	icons := func() string { return pick(r, "/api/chat-icons", "/api/chat-icons/") }
	activity := func() string { return pick(r, "/api/chat-activity", "/api/chat-activity/") }
	// get is a GET, or one time in six a HEAD, of path?query.
	get := func(name, path, query string, want ...Outcome) {
		method := http.MethodGet
		if r.IntN(6) == 0 {
			method = http.MethodHead
		}
		target := path
		if query != "" {
			target += "?" + query
		}
		cs = append(cs, Case{Name: name, Method: method, Target: target, Want: want})
	}

	// 1. Every parameter with every hostile value.
	for _, v := range hostileValues(r, 12, 8) {
		q := v.query()
		get("period/"+v.Label, stats(), "period="+q, statsInvalidParameters)
		get("month/"+v.Label, stats(), pick(r, "", "period=month&")+"month="+q, statsInvalidParameters)
		get("date/"+v.Label, stats(), "period="+pick(r, "day", "week")+"&date="+q, statsInvalidParameters)
		if r.IntN(2) == 0 {
			get("from/"+v.Label, stats(), "period=range&from="+q+"&to=2026-01-10", statsInvalidRange)
		} else {
			get("to/"+v.Label, stats(), "period=range&from=2026-01-01&to="+q, statsInvalidRange)
		}
		want := serverOutcome(v)
		get("server/"+v.Label, stats(), pick(r, "", "period=month&", "period=day&", "period=week&")+"server="+q, want)
		get("icons-server/"+v.Label, icons(), "server="+q, want)
		// The representation (json or csv) is a parameter like the others.
		get("format/"+v.Label, stats(), pick(r, "", "period=day&")+"format="+q, statsInvalidParameters)
		// A time zone name reaches the zone loader only when it is IANA-shaped: none of these is.
		get("tz/"+v.Label, activity(), "from=2026-01-01&to=2026-01-10&tz="+q, statsInvalidParameters)
	}

	// 2. Repeated parameters.
	for _, q := range []string{
		"period=month&period=month", "period=day&period=week", "month=2026-01&month=2026-01",
		"period=month&month=2026-01&month=2026-02", "period=day&date=2026-01-10&date=2026-01-10",
		"period=week&date=2026-01-10&date=2026-01-11", "period=range&from=2026-01-01&from=2026-01-01&to=2026-01-10",
		"period=range&from=2026-01-01&to=2026-01-10&to=2026-01-10", "server=1&server=1", "server=1&server=2",
		"period=day&server=1&server=1", "period=&period=", strings.Repeat("period=month&", 50) + "period=month",
	} {
		get("repeated", stats(), q, statsInvalidParameters)
	}
	for _, q := range []string{"server=1&server=1", "server=1&server=2", "server=&server=", strings.Repeat("server=1&", 100) + "server=1"} {
		get("icons-repeated", icons(), q, Outcome{400, "invalid_parameters", nil}, statsInvalidServer)
	}

	// 3. Parameters the mode forbids (present, even empty), also before a bad server.
	for _, q := range []string{
		"date=2026-01-10", "date=", "from=2026-01-01", "to=2026-01-10", "period=month&date=2026-01-10",
		"period=month&from=", "period=month&to=2026-01-10", "period=day&month=2026-01", "period=day&from=2026-01-01",
		"period=day&to=", "period=week&month=", "period=week&from=2026-01-01&to=2026-01-07",
		"period=range&from=2026-01-01&to=2026-01-10&month=2026-01", "period=range&from=2026-01-01&to=2026-01-10&date=",
		"period=day&month=2026-01&server=abc", "period=range&date=2026-01-01&server=" + strings.Repeat("9", 30),
	} {
		get("forbidden", stats(), q, statsInvalidParameters)
	}

	// 4. Range rules, and the server check that comes before them.
	for _, q := range []string{
		"period=range", "period=range&from=2026-01-01", "period=range&to=2026-01-10",
		"period=range&from=2026-01-10&to=2026-01-01", "period=range&from=2026-01-01&to=2026-02-01",
		"period=range&from=2025-12-01&to=2026-12-01", "period=range&from=2014-12-31&to=2015-01-01",
		"period=range&from=2099-12-31&to=2100-01-01", "period=range&from=2026-02-29&to=2026-03-01",
		"period=range&from=2026-04-31&to=2026-05-01", "period=range&from=2026-1-1&to=2026-1-2",
		"period=range&from=20260101&to=20260102", "period=range&from=2026-01-01T00:00:00Z&to=2026-01-02",
		"period=range&from=&to=", "period=range&from=2026-01-01&to=2026-01-10%00",
	} {
		get("range", stats(), q, statsInvalidRange)
	}
	for _, q := range []string{
		"period=range&from=2026-01-10&to=2026-01-01&server=x", "period=range&server=&from=2026-01-01",
		"period=range&from=2026-01-01&to=2026-03-01&server=-5",
	} {
		get("range-after-server", stats(), q, statsInvalidServer)
	}

	// 4b. The daily series: range rules (up to 366 days), repeats, the server check before them.
	series := func() string { return pick(r, "/api/chat-series", "/api/chat-series/") }
	for _, v := range hostileValues(r, 6, 4) {
		q := v.query()
		get("series-from/"+v.Label, series(), "from="+q+"&to=2026-01-10", statsInvalidRange)
		get("series-server/"+v.Label, series(), "from=2026-01-01&to=2026-01-10&server="+q, serverOutcome(v))
	}
	for _, q := range []string{
		"", "from=2026-01-01", "to=2026-01-10", "from=2026-01-10&to=2026-01-01", "from=2025-01-01&to=2026-01-02",
		"from=2014-12-31&to=2015-01-01", "from=2099-12-31&to=2100-01-01", "from=2026-02-29&to=2026-03-01",
		"from=2026-1-1&to=2026-1-2", "from=&to=", "from=2026-01-01&to=2026-01-10%00", "period=range&from=x&to=y",
	} {
		get("series-range", series(), q, statsInvalidRange)
	}
	for _, q := range []string{
		"from=2026-01-01&from=2026-01-01&to=2026-01-02", "from=2026-01-01&to=2026-01-02&to=2026-01-02",
		"from=2026-01-01&to=2026-01-02&server=1&server=1", "from=x&from=y&server=bad",
	} {
		get("series-repeated", series(), q, statsInvalidParameters)
	}
	for _, q := range []string{"server=x", "from=2026-01-10&to=2026-01-01&server=", "server=-5&from=2026-01-01&to=2027-03-01"} {
		get("series-after-server", series(), q, statsInvalidServer)
	}

	// 5. Months and dates out of format or bounds.
	for _, q := range []string{
		"month=2014-12", "month=2100-01", "month=2026-13", "month=2026-00", "month=2026-1", "month=202601",
		"month=2026-01-01", "period=month&month=0000-01", "period=day&date=2014-12-31", "period=day&date=2100-01-01",
		"period=day&date=2026-02-29", "period=week&date=2026-04-31", "period=day&date=2026-1-1",
		"period=week&date=20260101", "period=day&date=2026-01-01T00:00:00Z", "period=DAY", "period=Month",
		"period=+month", "period=month%20", "period=range%00",
	} {
		get("bounds", stats(), q, statsInvalidParameters)
	}

	// 6. Hostile parameter names: ignored when unknown, so each comes with a bad period; an
	// escaped known name must still be read as that name.
	for _, name := range []string{escapeAll(randomBytes(r, 20)), strings.Repeat("n", 10240), "period[]", "PERIOD", "%00", "&&&", "=", "a=b=c"} {
		get("param-name", stats(), name+"=1&period=bogus", statsInvalidParameters)
	}
	get("param-name-escaped", stats(), "%70eriod=bogus", statsInvalidParameters)
	get("param-name-escaped", stats(), "period=day&d%61te=bogus", statsInvalidParameters)

	// 7. Unknown paths.
	for _, p := range []string{
		"/api/chat-statistics/x", "/api/chat-statistics//", "/api/chat-icons/1", "/api/chat-icons%00",
		"/api/chat-icons/%2e%2e/%2e%2e/etc/passwd", "/api/../etc/passwd", "/api/chat-statistics/../../etc/passwd",
		"/API/chat-icons", "/api/chat-icons.json", "/api/chat-statistics;x", "/api/" + strings.Repeat("x", 10240),
		"/api/" + escapeAll(randomBytes(r, 40)), "/api/" + escapeAll("статистика"), "/%00", "//api/chat-icons",
		"/api/chat-icons/" + escapeAll("../../etc/passwd"), "/api", "/api/",
	} {
		get("path", p, "", statsNotFound)
	}
	cs = append(cs,
		Case{Name: "path/unknown-post", Method: http.MethodPost, Target: "/api/unknown", Body: []byte("x=1"),
			Header: [][2]string{{"Content-Type", "application/x-www-form-urlencoded"}}, Want: []Outcome{statsNotFound, statsMethodNotAllowed}},
	)

	// 8. Methods other than GET and HEAD, with and without bodies of every content type.
	bodies := []struct {
		ctype string
		body  string
	}{
		{"", ""}, {"application/json", `{"period":"day"}`}, {"application/x-www-form-urlencoded", "period=day"},
		{"multipart/form-data; boundary=zzz", "--zzz\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nb\r\n"},
		{"text/xml", `<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/passwd">]><a>&x;</a>`},
		{"application/octet-stream", "\x00\x01\x02"},
	}
	for _, path := range []string{"/api/chat-statistics", "/api/chat-statistics/", "/api/chat-icons", "/api/chat-icons/"} {
		for _, m := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT", "PROPFIND", "get", "Head"} {
			c := Case{Name: "method/" + m, Method: m, Target: path + pick(r, "", "?period=day", "?server=1"), Want: []Outcome{statsMethodNotAllowed}, Allow: statsAllow}
			if b := bodies[r.IntN(len(bodies))]; b.ctype != "" {
				c.Header = [][2]string{{"Content-Type", b.ctype}}
				c.Body = []byte(b.body)
			}
			cs = append(cs, c)
		}
	}

	// 9. Wrong content types and bodies on a GET: the body is not used, the query decides.
	for _, b := range bodies[1:] {
		cs = append(cs, Case{Name: "content-type/" + b.ctype, Method: http.MethodGet, Target: "/api/chat-statistics?period=bogus",
			Header: [][2]string{{"Content-Type", b.ctype}}, Body: []byte(b.body), Want: []Outcome{statsInvalidParameters}})
	}
	cs = append(cs, Case{Name: "content-type/garbage", Method: http.MethodGet, Target: "/api/chat-icons?server=x",
		Header: [][2]string{{"Content-Type", "; ;;=="}, {"Content-Encoding", "gzip"}}, Body: []byte("not gzip"), Want: []Outcome{statsInvalidServer}})

	// 10. Headers and request line: oversized (414/431 in the envelope), large but allowed,
	// malformed.
	cs = append(cs, headerCases(r, "/api/chat-statistics?period=bogus", statsInvalidParameters)...)
	return Corpus{Service: "stats-svc", Envelope: StatsEnvelope, Cases: overLimits(cs)}
}

// serverOutcome is the answer to a hostile server value: a well-formed number or id (1 to 20
// ASCII digits) that no catalog holds is unknown, anything else is malformed.
func serverOutcome(v value) Outcome {
	if s, ok := v.queryDecoded(); ok && isDigits(s, 20) {
		return statsServerNotFound
	}
	return statsInvalidServer
}

// headerCases are protocol-level header abuses on a target whose query is itself invalid, so
// that a request which does reach the handler still has a documented 4xx answer (want).
func headerCases(r *rand.Rand, target string, want Outcome, extra ...[2]string) []Case {
	w := []Outcome{want}
	sep := "?"
	if strings.Contains(target, "?") {
		sep = "&"
	}
	pad := func(n int) string { return strings.Repeat("a", n) }
	many := func(n, size int) [][2]string {
		var h [][2]string
		for i := range n {
			h = append(h, [2]string{"X-Pad-" + strconv.Itoa(i), pad(size)})
		}
		return h
	}
	with := func(h ...[2]string) [][2]string { return append(append([][2]string{}, extra...), h...) }
	raw := func(lines ...string) []byte {
		var keep []string
		for _, l := range lines {
			if l != "" {
				keep = append(keep, l)
			}
		}
		return []byte(strings.Join(keep, "\r\n") + "\r\n\r\n")
	}
	extraLines := func() string {
		var b strings.Builder
		for _, h := range extra {
			b.WriteString(h[0] + ": " + h[1] + "\r\n")
		}
		return b.String()
	}()
	return []Case{
		{Name: "header/40KB", Method: http.MethodGet, Target: target, Header: with([2]string{"X-Big", pad(40 << 10)}), Want: []Outcome{headersTooLarge}},
		{Name: "header/1MB", Method: http.MethodGet, Target: target, Header: with([2]string{"X-Big", pad(1 << 20)}), Want: []Outcome{headersTooLarge}, NetHTTP: true},
		{Name: "header/500x100B", Method: http.MethodGet, Target: target, Header: with(many(500, 100)...), Want: []Outcome{headersTooLarge}},
		{Name: "header/20KB", Method: http.MethodGet, Target: target, Header: with([2]string{"X-Big", pad(20 << 10)}), Want: w},
		{Name: "header/200x100B", Method: http.MethodGet, Target: target, Header: with(many(200, 100)...), Want: w},
		{Name: "header/10KB-request-id", Method: http.MethodGet, Target: target, Header: with([2]string{"X-Request-Id", pad(10 << 10)}), Want: w},
		{Name: "header/hostile-request-id", Method: http.MethodGet, Target: target, Header: with([2]string{"X-Request-Id", "\"}{<script>\xff\xfe"}), Want: w},
		{Name: "header/unicode-value", Method: http.MethodGet, Target: target, Header: with([2]string{"X-Note", "\u202e\U0001F600\xff"}), Want: w},
		{Name: "header/random-bytes", Method: http.MethodGet, Target: target, Header: with([2]string{"X-Random", headerBytes(r, 64)}), Want: w},
		{Name: "header/nul-in-value", Method: http.MethodGet, Target: target, Header: with([2]string{"X-Nul", "a\x00b"}), Want: w, NetHTTP: true},
		{Name: "header/space-in-name", Method: http.MethodGet, Target: target, Header: with([2]string{"Bad Name", "x"}), Want: w, NetHTTP: true},
		{Name: "header/no-host", Raw: raw("GET "+target+" HTTP/1.1", strings.TrimSuffix(extraLines, "\r\n"), "Connection: close"), Want: w, NetHTTP: true},
		{Name: "header/two-hosts", Raw: raw("GET "+target+" HTTP/1.1", "Host: {HOST}", "Host: evil.example", strings.TrimSuffix(extraLines, "\r\n"), "Connection: close"), Want: w, NetHTTP: true},
		{Name: "header/obs-fold", Raw: raw("GET "+target+" HTTP/1.1", "Host: {HOST}", "X-Fold: a", " folded", strings.TrimSuffix(extraLines, "\r\n"), "Connection: close"), Want: w, NetHTTP: true},
		{Name: "request-line/raw-space", Raw: raw("GET "+target+" x HTTP/1.1", "Host: {HOST}", "Connection: close"), Want: w, NetHTTP: true},
		{Name: "request-line/raw-high-bytes", Raw: raw("GET "+target+sep+"x=\xff\xfe HTTP/1.1", "Host: {HOST}", strings.TrimSuffix(extraLines, "\r\n"), "Connection: close"), Want: w, NetHTTP: true},
		{Name: "request-line/http10", Raw: raw("GET "+target+" HTTP/1.0", strings.TrimSuffix(extraLines, "\r\n")), Want: w, NetHTTP: true},
		{Name: "body/bad-chunking", Raw: rawBody(raw("GET "+target+" HTTP/1.1", "Host: {HOST}", "Transfer-Encoding: chunked", strings.TrimSuffix(extraLines, "\r\n"), "Connection: close"), "zz\r\nnot a chunk\r\n"), Want: w, NetHTTP: true},
		{Name: "request-line/60KB-query", Method: http.MethodGet, Target: target + sep + "x=" + pad(60<<10), Header: with(), Want: []Outcome{uriTooLong}},
		{Name: "request-line/1MB-query", Method: http.MethodGet, Target: target + sep + "x=" + pad(1<<20-64), Header: with(), Want: []Outcome{uriTooLong}, NetHTTP: true},
		{Name: "request-line/60KB-query-head", Method: http.MethodHead, Target: target + sep + "x=" + pad(60<<10), Header: with(), Want: []Outcome{uriTooLong}},
	}
}

// headerBytes is n random bytes that may stand in a header value (no control characters).
func headerBytes(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		c := byte(0x20 + r.IntN(0xff-0x20))
		if c == 0x7f {
			c = 'x'
		}
		b[i] = c
	}
	return string(b)
}

func rawBody(head []byte, body string) []byte { return append(head, body...) }

func randomBytes(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.IntN(256))
	}
	return string(b)
}

func pick(r *rand.Rand, options ...string) string { return options[r.IntN(len(options))] }
