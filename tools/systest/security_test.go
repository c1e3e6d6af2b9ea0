//go:build faults

package systest

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"forumstats.local/tools/stack"
)

func envValue(env []string, key string) string {
	for _, e := range slices.Backward(env) {
		if v, ok := strings.CutPrefix(e, key+"="); ok {
			return v
		}
	}
	return ""
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// doReq sends one request and returns status, headers and body.
func doReq(t *testing.T, method, url string, hdr http.Header, body string) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestSecurityKeysStoredAsHashes seeds keys and creates one with the CLI, then reads every
// text-like column of every table of the forum database: no key may be there in plain text (nor
// hex- or base64-encoded), and each key's SHA-256 must be (the documented storage, which also
// shows that the scan reads the right tables).
func TestSecurityKeysStoredAsHashes(t *testing.T) {
	ctx := context.Background()
	pg := postgres(t)
	fx := stack.NewForumFixture(30, 20)
	env := forumEnv(t, pg, fx)
	svc := service(t, stack.Forum, env...)

	stdout, stderr, err := stack.RunSplit(ctx, time.Minute, bin(t, stack.Forum), env, "apikey", "create", "--type", "user", "--user-id", "1", "--scopes", "conversation:read")
	if err != nil {
		t.Fatalf("apikey create: %v\n%s", err, stderr)
	}
	created := strings.TrimSpace(stdout)
	if len(created) < 32 || strings.ContainsAny(created, " \n") {
		t.Fatalf("apikey create printed %q, want one key of 32+ characters", stdout)
	}
	if strings.Contains(stderr, created) {
		t.Errorf("apikey create wrote the key to stderr (logs): %s", stderr)
	}
	if st, _, body := doReq(t, "GET", fmt.Sprintf("%s/api/conversations/%d/messages", svc.URL, fx.Own), http.Header{"Forum-Api-Key": {created}}, ""); st != 200 {
		t.Fatalf("the created key does not work: %d %s", st, body)
	}

	conn, err := pgx.Connect(ctx, envValue(env, "DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = 'public' AND data_type IN ('text', 'character varying', 'character', 'bytea', 'json', 'jsonb', 'ARRAY')`)
	if err != nil {
		t.Fatal(err)
	}
	var cols [][2]string
	for rows.Next() {
		var tbl, col string
		if err := rows.Scan(&tbl, &col); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, [2]string{tbl, col})
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	count := func(tbl, col, needle string) int {
		var n int
		q := fmt.Sprintf(`SELECT count(*) FROM %s WHERE position($1 in %s::text) > 0`, pgx.Identifier{tbl}.Sanitize(), pgx.Identifier{col}.Sanitize())
		if err := conn.QueryRow(ctx, q, needle).Scan(&n); err != nil {
			t.Fatalf("%s.%s: %v", tbl, col, err)
		}
		return n
	}
	keys := append(fx.Keys(), created)
	hashesFound := 0
	for _, k := range keys {
		forms := map[string]string{"plain": k, "hex": hex.EncodeToString([]byte(k)), "base64": base64.StdEncoding.EncodeToString([]byte(k))}
		found := false
		for _, c := range cols {
			for form, needle := range forms {
				if n := count(c[0], c[1], needle); n > 0 {
					t.Errorf("key %.12s… stored %s in %s.%s", k, form, c[0], c[1])
				}
			}
			if count(c[0], c[1], sha256hex(k)) > 0 {
				found = true
			}
		}
		if found {
			hashesFound++
		} else {
			t.Errorf("the SHA-256 of key %.12s… is in no column", k)
		}
	}
	report(t, "%d text-like columns scanned; %d keys (%d seeded, 1 from apikey create): 0 stored in plain, hex or base64 form; %d found as SHA-256",
		len(cols), len(keys), len(keys)-1, hashesFound)
}

// TestSecurityKeyLookupByHashOnly logs every statement PostgreSQL receives (with parameters)
// while keys are seeded and used: no plain key may ever reach the database, and the lookup of
// an unknown key must go by its hash.
func TestSecurityKeyLookupByHashOnly(t *testing.T) {
	pg := privatePostgres(t, stack.PostgresOptions{LogStatements: true})
	fx := stack.NewForumFixture(30, 20)
	svc := service(t, stack.Forum, forumEnv(t, pg, fx)...)
	unknown := []string{"reliab-unknown-" + strings.Repeat("q", 40), "reliab-unknown-2-" + dbName("k") + strings.Repeat("z", 30)}
	for _, k := range append(fx.Keys(), unknown...) {
		for _, path := range []string{"/api/conversations/10/messages", "/api/conversation-messages/100000/"} {
			doReq(t, "GET", svc.URL+path, http.Header{"Forum-Api-Key": {k}}, "")
		}
	}
	logs := pg.Logs()
	if !strings.Contains(logs, "statement:") && !strings.Contains(logs, "execute") {
		t.Fatalf("the PostgreSQL log holds no statement; log_statement did not take:\n%s", tailLines(logs, 20))
	}
	for _, k := range append(fx.Keys(), unknown...) {
		if lines := stack.Grep(logs, k); len(lines) > 0 {
			t.Errorf("plain key %.12s… reached PostgreSQL:\n%s", k, strings.Join(lines, "\n"))
		}
	}
	// The DETAIL line with the hash as a parameter follows the statement it belongs to.
	lines := strings.Split(logs, "\n")
	var lookup []string
	stmt := ""
	for _, k := range unknown {
		h, found := sha256hex(k), 0
		for i, l := range lines {
			if strings.Contains(l, h) {
				found++
				lookup = append(lookup, l)
				if stmt == "" {
					// Walk back over the statement's continuation lines to its LOG: line.
					var parts []string
					for j := i - 1; j >= 0 && j >= i-20; j-- {
						p, isHead := lines[j], strings.Contains(lines[j], "LOG:")
						if isHead {
							p = p[strings.Index(p, "LOG:")+4:]
						}
						parts = append([]string{strings.TrimSpace(p)}, parts...)
						if isHead {
							break
						}
					}
					stmt = strings.Join(parts, " ")
				}
			}
		}
		if found == 0 {
			t.Errorf("no statement carried the hash of unknown key %.16s…", k)
		}
	}
	report(t, "%d log lines; 0 plain keys; the unknown keys' SHA-256 appear in %d lines; key lookup: %s", strings.Count(logs, "\n"), len(lookup), short(stmt, 240))
}

// TestSecurityNoExistenceLeak compares, for every operation, the answer about a conversation (or
// message) that exists but is not the user's with the answer about one that does not exist:
// status, body and headers must be the same, deep pages included.
func TestSecurityNoExistenceLeak(t *testing.T) {
	pg := postgres(t)
	fx := stack.NewForumFixture(95, 20)
	svc := service(t, stack.Forum, forumEnv(t, pg, fx)...)
	user := http.Header{"Forum-Api-Key": {fx.UserKey}}
	outsider := http.Header{"Forum-Api-Key": {fx.SuperKey}, "Forum-Api-User": {"2"}} // not in Foreign
	form := "application/x-www-form-urlencoded"
	type probe struct{ method, foreign, missing, body string }
	conv := func(f string) probe {
		return probe{"", fmt.Sprintf(f, fx.Foreign), fmt.Sprintf(f, fx.MissingID), ""}
	}
	probes := []probe{
		conv("/api/conversations/%d/"), conv("/api/conversations/%d/messages"),
		conv("/api/conversations/%d/messages?page=2"), conv("/api/conversations/%d/messages?page=9999"),
		conv("/api/conversations/%d/messages?page=9223372036854775807"),
		{"", fmt.Sprintf("/api/conversation-messages/%d/", fx.ForeignMessage), fmt.Sprintf("/api/conversation-messages/%d/", fx.MissingID), ""},
		{"POST", fmt.Sprintf("/api/conversations/%d/mark-unread", fx.Foreign), fmt.Sprintf("/api/conversations/%d/mark-unread", fx.MissingID), ""},
		{"POST", fmt.Sprintf("/api/conversations/%d/mark-read", fx.Foreign), fmt.Sprintf("/api/conversations/%d/mark-read", fx.MissingID), "date=1767225600"},
	}
	compared := 0
	for _, who := range []http.Header{user, outsider} {
		for _, p := range probes {
			methods := []string{"GET", "HEAD"}
			if p.method != "" {
				methods = []string{p.method}
			}
			for _, m := range methods {
				h := who.Clone()
				if m == "POST" {
					h.Set("Content-Type", form)
				}
				fs, fh, fb := doReq(t, m, svc.URL+p.foreign, h, p.body)
				ms, mh, mb := doReq(t, m, svc.URL+p.missing, h, p.body)
				compared++
				if fs != ms || fb != mb {
					t.Errorf("%s %s vs %s: %d %s vs %d %s", m, p.foreign, p.missing, fs, fb, ms, mb)
				}
				if fs != 404 {
					t.Errorf("%s %s: status %d, want 404", m, p.foreign, fs)
				}
				for _, hd := range []http.Header{fh, mh} {
					hd.Del("Date")
					hd.Del("X-Request-Id")
				}
				if fmt.Sprint(fh) != fmt.Sprint(mh) {
					t.Errorf("%s %s vs %s: headers differ: %v vs %v", m, p.foreign, p.missing, fh, mh)
				}
			}
		}
	}
	// Timing, for the record: a foreign conversation should cost what a missing one does.
	timing := func(path string) time.Duration {
		var ds []time.Duration
		for range 200 {
			start := time.Now()
			doReq(t, "GET", svc.URL+path, user, "")
			ds = append(ds, time.Since(start))
		}
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	tf := timing(fmt.Sprintf("/api/conversations/%d/messages", fx.Foreign))
	tm := timing(fmt.Sprintf("/api/conversations/%d/messages", fx.MissingID))
	verdict := "identical status, body and headers"
	if t.Failed() {
		verdict = "DIFFERENCES (see errors)"
	}
	report(t, "%d foreign/missing pairs compared (user key and super key acting as an outsider; GET, HEAD, POST; deep pages): %s; median latency foreign %v, missing %v",
		compared, verdict, tf.Round(time.Microsecond), tm.Round(time.Microsecond))
}

// TestSecurityRequestBounds checks that bodies and headers are bounded on both services and that
// a client sending its headers slowly is cut off.
func TestSecurityRequestBounds(t *testing.T) {
	pg := postgres(t)
	ffx := stack.NewForumFixture(30, 20)
	sfx := statsFixture()
	forum := service(t, stack.Forum, forumEnv(t, pg, ffx)...)
	stats := service(t, stack.Stats, statsEnv(t, pg, sfx)...)
	key := ffx.UserKey

	// A body with a declared length over the limit is refused (413) before it is read. A chunked
	// body is only read as far as the handler reads it, and never past the limit: where the
	// handler reads no body, the answer is the normal one and the rest of the body is never read
	// (the connection is closed), so either answer is bounded. The check that matters there is
	// that the server answers long before the client could send it all.
	type bodyCase struct {
		name, addr, path, method, extra string
		size                            int
		chunked                         bool
		want                            []int
	}
	markUnread := fmt.Sprintf("/api/conversations/%d/mark-unread", ffx.Own)
	markRead := fmt.Sprintf("/api/conversations/%d/mark-read", ffx.Own)
	form := "Forum-Api-Key: " + key + "\r\nContent-Type: application/x-www-form-urlencoded\r\n"
	cases := []bodyCase{
		// forum-svc's limit is 1 MiB: room for the longest message, percent-encoded.
		{"forum mark-unread, 1 MiB + 1 KiB declared", forum.Addr, markUnread, "POST", form, 1<<20 + 1<<10, false, []int{413}},
		{"forum start, 2 MiB declared", forum.Addr, "/api/conversations/", "POST", form, 2 << 20, false, []int{413}},
		{"forum reply, 64 MiB chunked (form read)", forum.Addr, "/api/conversation-messages/", "POST", form, 64 << 20, true, []int{413}},
		{"forum mark-unread, 64 MiB declared", forum.Addr, markUnread, "POST", form, 64 << 20, false, []int{413}},
		{"forum mark-read, 64 MiB declared", forum.Addr, markRead, "POST", form, 64 << 20, false, []int{413}},
		{"forum mark-unread, 64 MiB chunked (form read: every write reads its fields)", forum.Addr, markUnread, "POST", form, 64 << 20, true, []int{413}},
		{"forum mark-read, 64 MiB chunked (form read)", forum.Addr, markRead, "POST", form, 64 << 20, true, []int{200, 413}},
		{"stats GET, 2 MiB declared", stats.Addr, "/api/chat-icons", "GET", "Content-Type: application/json\r\n", 2 << 20, false, []int{413}},
		{"stats GET, 64 MiB chunked (body unused)", stats.Addr, "/api/chat-icons", "GET", "Content-Type: application/json\r\n", 64 << 20, true, []int{200, 413}},
	}
	for _, c := range cases {
		start := time.Now()
		status, body, sent, err := sendLarge(c.addr, c.method, c.path, c.extra, c.size, c.chunked)
		el := time.Since(start)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		report(t, "%s: %d %s after %v, %d of %d body bytes sent", c.name, status, short(strings.TrimSpace(body), 110), el.Round(time.Millisecond), sent, c.size)
		if !slices.Contains(c.want, status) {
			t.Errorf("%s: %d %s, want one of %v", c.name, status, body, c.want)
		}
		if status == 413 && !strings.Contains(body, `"request_entity_too_large"`) {
			t.Errorf("%s: 413 without the JSON error body: %s", c.name, body)
		}
		if sent >= c.size && c.size > 16<<20 {
			t.Errorf("%s: the server took the whole %d bytes before answering", c.name, c.size)
		}
	}

	// Headers: over 32 KiB the service answers 431 in its envelope (shared/server); past
	// 1 MiB net/http refuses them itself, with a 431 too.
	for _, s := range []*stack.Service{forum, stats} {
		for _, n := range []int{40 << 10, 4 << 20} {
			st, body, _, err := sendLarge(s.Addr, "GET", "/healthz", "X-Big: "+strings.Repeat("a", n)+"\r\n", 0, false)
			if err != nil || st != 431 || (n < 1<<20 && !strings.Contains(body, `"request_header_fields_too_large"`)) {
				t.Errorf("%s: %d-byte header: %d %q %v, want 431", s.Name, n, st, body, err)
			}
		}
	}

	// Slow headers (slowloris): one byte a second must not hold a connection forever.
	conn, err := net.Dial("tcp", forum.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	closed := make(chan time.Duration, 1)
	go func() {
		_, _ = io.Copy(io.Discard, conn)
		closed <- time.Since(start)
	}()
	_, _ = conn.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "))
	var cut time.Duration
loop:
	for {
		select {
		case cut = <-closed:
			break loop
		case <-time.After(time.Second):
			if time.Since(start) > 20*time.Second {
				t.Error("a connection sending one header byte a second is still open after 20 s")
				break loop
			}
			if _, err := conn.Write([]byte("a")); err != nil {
				cut = time.Since(start)
				break loop
			}
		}
	}
	report(t, "slow headers (1 byte/s): connection closed by the server after %v", cut.Round(100*time.Millisecond))
}

// sendLarge sends a request with a body of size bytes (chunked or with Content-Length) and
// reads the answer; it returns how many body bytes it managed to write before the answer.
func sendLarge(addr, method, path, extra string, size int, chunked bool) (int, string, int, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, "", 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\n%s", method, path, addr, extra)
	if size > 0 {
		if chunked {
			head += "Transfer-Encoding: chunked\r\n"
		} else {
			head += fmt.Sprintf("Content-Length: %d\r\n", size)
		}
	}
	head += "Connection: close\r\n\r\n"
	sentc := make(chan int, 1)
	// Write in the background: the server answers (413, 431) and closes before reading it all.
	go func() {
		sent := 0
		if _, err := conn.Write([]byte(head)); err != nil {
			sentc <- 0
			return
		}
		// One field that never ends, so that the body limit, not the bound on the number of
		// fields (TestAttackForumInputFieldBomb), is what stops a form read.
		chunk := []byte(strings.Repeat("a", 64<<10))
		for sent < size {
			n := min(len(chunk), size-sent)
			var err error
			if chunked {
				_, err = fmt.Fprintf(conn, "%x\r\n%s\r\n", n, chunk[:n])
			} else {
				_, err = conn.Write(chunk[:n])
			}
			if err != nil {
				break
			}
			sent += n
		}
		if chunked && sent >= size {
			_, _ = conn.Write([]byte("0\r\n\r\n"))
		}
		sentc <- sent
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		return 0, "", 0, err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	conn.Close()
	return resp.StatusCode, string(b), <-sentc, nil
}

// TestSecurityLogsHoldNoSecrets runs forum-svc at debug level, sends every key in every place a
// client might put it (header, query string, form body, Authorization) on good and bad
// requests, and greps all the service's output (and the seed command's) for any key.
func TestSecurityLogsHoldNoSecrets(t *testing.T) {
	pg := postgres(t)
	fx := stack.NewForumFixture(30, 20)
	env := forumEnv(t, pg, fx, "LOG_LEVEL=debug")
	svc := service(t, stack.Forum, env...)
	sent := 0
	for _, k := range fx.Keys() {
		for _, path := range []string{
			fmt.Sprintf("/api/conversations/%d/messages", fx.Own), fmt.Sprintf("/api/conversations/%d/messages?page=abc", fx.Foreign),
			fmt.Sprintf("/api/conversation-messages/%d/", fx.OwnMessage), "/api/unknown", fmt.Sprintf("/api/conversations/%d/messages?api_key=%s", fx.Own, k),
		} {
			doReq(t, "GET", svc.URL+path, http.Header{"Forum-Api-Key": {k}, "Authorization": {"Bearer " + k}, "Forum-Api-User": {"1"}}, "")
			sent++
		}
		doReq(t, "POST", fmt.Sprintf("%s/api/conversations/%d/mark-read", svc.URL, fx.Own),
			http.Header{"Forum-Api-Key": {k}, "Content-Type": {"application/x-www-form-urlencoded"}}, "date=abc&key="+k)
		doReq(t, "PUT", fmt.Sprintf("%s/api/conversations/%d/mark-read", svc.URL, fx.Own), http.Header{"Forum-Api-Key": {k}}, "")
		doReq(t, "GET", svc.URL+"/api/conversations/10/messages", http.Header{"Forum-Api-Key": {k + "-wrong"}}, "")
		sent += 3
	}
	out := svc.Output()
	if !strings.Contains(out, `"level":"DEBUG"`) && !strings.Contains(out, "level=DEBUG") {
		t.Logf("note: no DEBUG line was logged (the service logs nothing at debug for these requests)")
	}
	lines := strings.Count(out, "\n")
	if lines < sent {
		t.Errorf("only %d log lines for %d requests: is the service logging at all?", lines, sent)
	}
	for _, k := range fx.Keys() {
		if ls := stack.Grep(out, k); len(ls) > 0 {
			t.Errorf("key %.12s… in the service's logs:\n%s", k, strings.Join(ls, "\n"))
		}
		if ls := stack.Grep(out, sha256hex(k)); len(ls) > 0 {
			t.Logf("note: the hash of key %.12s… is logged (not a secret, recorded): %s", k, ls[0])
		}
	}
	report(t, "%d requests carrying keys (header, query, form, Authorization), LOG_LEVEL=debug: %d log lines, 0 with a key", sent, lines)
}

// errCode returns the code and params of a forum error body ("" when it is none).
// errorCode is the first error code of an answer in forum-svc's envelope ("" if none).
func errorCode(body string) string {
	code, _ := errCode(body)
	return code
}

func errCode(body string) (string, map[string]any) {
	var e struct {
		Errors []struct {
			Code   string         `json:"code"`
			Params map[string]any `json:"params"`
		} `json:"errors"`
	}
	if json.Unmarshal([]byte(body), &e) != nil || len(e.Errors) == 0 {
		return "", nil
	}
	return e.Errors[0].Code, e.Errors[0].Params
}

// formReq sends a form body (none when "") with the actor's headers and extra ones.
func formReq(t *testing.T, svc *stack.Service, who http.Header, method, path, body string, extra ...string) (int, http.Header, string) {
	t.Helper()
	h := who.Clone()
	if body != "" {
		h.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	return doReq(t, method, svc.URL+path, h, body)
}

// snapshot reads paths as who (each must answer 200) for comparing before and after.
func snapshot(t *testing.T, svc *stack.Service, who http.Header, paths ...string) []string {
	t.Helper()
	out := make([]string, len(paths))
	for i, p := range paths {
		st, _, b := doReq(t, "GET", svc.URL+p, who, "")
		if st != http.StatusOK {
			t.Fatalf("GET %s: %d %s", p, st, b)
		}
		out[i] = b
	}
	return out
}

func sameSnapshots(t *testing.T, what string, paths, before, after []string) {
	t.Helper()
	for i := range paths {
		if before[i] != after[i] {
			t.Errorf("%s changed %s:\n  before %s\n  after  %s", what, paths[i], short(before[i], 400), short(after[i], 400))
		}
	}
}

// TestSecurityConversationsScope sends every write of the conversations API with a key without
// conversation:write and every read with a key without conversation:read: each is 403
// missing_scope naming the scope, and nothing changes. GET /api/me/ needs no scope.
func TestSecurityConversationsScope(t *testing.T) {
	svc, fx, _ := conversationService(t, false)
	spare := fx.ExtraOwn + 10
	spareMsg := int64(300000 + 10*1000) // its first message, by user 1 (stack.ForumFixture)
	ro, wo := http.Header{"Forum-Api-Key": {fx.ReadOnlyKey}}, http.Header{"Forum-Api-Key": {fx.WriteOnlyKey}}
	watch := []string{"/api/conversations/", "/api/conversations/?page=2", fmt.Sprintf("/api/conversations/%d/", spare),
		fmt.Sprintf("/api/conversations/%d/messages", spare), fmt.Sprintf("/api/conversation-messages/%d/", spareMsg), "/api/me/"}
	user := actor(fx, 1)
	before := snapshot(t, svc, user, watch...)

	type op struct{ method, path, body string }
	writes := []op{
		{"POST", "/api/conversations/", "recipient_ids%5B%5D=2&title=T&message=M"},
		{"POST", "/api/conversations", "recipient_ids%5B%5D=2&title=T&message=M"},
		{"POST", fmt.Sprintf("/api/conversations/%d/", spare), "title=Renamed"},
		{"POST", fmt.Sprintf("/api/conversations/%d", spare), "conversation_open=0"},
		{"DELETE", fmt.Sprintf("/api/conversations/%d/?ignore=1", spare), ""},
		{"DELETE", fmt.Sprintf("/api/conversations/%d", spare), "ignore=0"},
		{"POST", fmt.Sprintf("/api/conversations/%d/invite", spare), "recipient_ids%5B%5D=30"},
		{"POST", fmt.Sprintf("/api/conversations/%d/star/", spare), "star=1"},
		{"POST", fmt.Sprintf("/api/conversations/%d/star", spare), ""},
		{"POST", fmt.Sprintf("/api/conversations/%d/mark-read", spare), "date=1767225600"},
		{"POST", fmt.Sprintf("/api/conversations/%d/mark-unread", spare), ""},
		{"POST", "/api/conversation-messages/", fmt.Sprintf("conversation_id=%d&message=M", spare)},
		{"POST", "/api/conversation-messages", fmt.Sprintf("conversation_id=%d&message=M", spare)},
		{"POST", fmt.Sprintf("/api/conversation-messages/%d/", spareMsg), "message=Edited"},
	}
	reads := []op{
		{"GET", "/api/conversations/", ""}, {"GET", "/api/conversations?starred=1&page=1", ""}, {"HEAD", "/api/conversations", ""},
		{"GET", fmt.Sprintf("/api/conversations/%d/", spare), ""}, {"HEAD", fmt.Sprintf("/api/conversations/%d", spare), ""},
		{"GET", fmt.Sprintf("/api/conversations/%d/messages?page=1", spare), ""},
		{"GET", fmt.Sprintf("/api/conversation-messages/%d/", spareMsg), ""},
	}
	check := func(who http.Header, o op, scope string, extra ...string) {
		st, _, body := formReq(t, svc, who, o.method, o.path, o.body, extra...)
		if st != http.StatusForbidden {
			t.Errorf("%s %s without %s: %d %s, want 403 missing_scope", o.method, o.path, scope, st, short(body, 200))
			return
		}
		if o.method == "HEAD" {
			return
		}
		if code, params := errCode(body); code != "missing_scope" || params["scope"] != scope {
			t.Errorf("%s %s without %s: %s, want missing_scope with scope %s", o.method, o.path, scope, short(body, 200), scope)
		}
	}
	for _, o := range writes {
		check(ro, o, "conversation:write")
		// A retry key is looked at after the scope.
		check(ro, o, "conversation:write", "Idempotency-Key", "scope-test-1")
	}
	for _, o := range reads {
		check(wo, o, "conversation:read")
	}
	for _, who := range []http.Header{ro, wo} {
		st, _, body := doReq(t, "GET", svc.URL+"/api/me/", who, "")
		var me struct {
			Me struct {
				UserID int64 `json:"user_id"`
			} `json:"me"`
		}
		if st != http.StatusOK || json.Unmarshal([]byte(body), &me) != nil || me.Me.UserID != 1 {
			t.Errorf("GET /api/me/ with a one-scope key of user 1: %d %s, want 200 with user_id 1", st, short(body, 200))
		}
	}
	sameSnapshots(t, "a refused write", watch, before, snapshot(t, svc, user, watch...))
	report(t, "%d writes without conversation:write (with and without Idempotency-Key), %d reads without conversation:read: all 403 missing_scope, nothing changed; /api/me/ answered with either key",
		len(writes), len(reads))
}

// TestSecurityConversationsOwnership: editing another's message, updating a conversation one
// did not start and inviting without the right are 403 no_permission and change nothing; the
// closed conversation takes no reply and no invite; the same operations by the right user pass.
func TestSecurityConversationsOwnership(t *testing.T) {
	svc, fx, s := conversationService(t, false)
	u1, u2 := actor(fx, 1), actor(fx, 2)
	superAs1 := http.Header{"Forum-Api-Key": {fx.SuperKey}, "Forum-Api-User": {"1"}}
	joined := fmt.Sprintf("/api/conversations/%d/", s.Joined)
	joinedMsg := fmt.Sprintf("/api/conversation-messages/%d/", s.JoinedMessage)
	watch := []string{joined, joinedMsg, fmt.Sprintf("/api/conversations/%d/messages", s.Joined)}
	before := snapshot(t, svc, u2, watch...)

	want := func(who http.Header, method, path, body string, status int, code string) {
		t.Helper()
		st, _, b := formReq(t, svc, who, method, path, body)
		got, _ := errCode(b)
		if st != status || (code != "" && got != code) {
			t.Errorf("%s %s %q: %d %s, want %d %s", method, path, body, st, short(b, 200), status, code)
		}
	}
	refused := 0
	for _, who := range []http.Header{u1, superAs1} {
		for _, body := range []string{"message=Not yours", "message=" + strings.Repeat("x", 20)} {
			want(who, "POST", joinedMsg, body, 403, "no_permission")
			refused++
		}
		for _, body := range []string{"title=Mine now", "conversation_open=0", "open_invite=1", "title=X&conversation_open=1&open_invite=1", ""} {
			want(who, "POST", joined, body, 403, "no_permission")
			refused++
		}
		want(who, "POST", joined+"invite", "recipient_ids%5B%5D=5", 403, "no_permission")
		refused++
	}
	sameSnapshots(t, "a refused write by a participant", watch, before, snapshot(t, svc, u2, watch...))

	// The closed conversation: no reply, no invite, from its starter or anyone in it.
	closed := fmt.Sprintf("/api/conversations/%d/", s.Closed)
	closedBefore := snapshot(t, svc, u1, closed)
	for _, who := range []http.Header{u1, u2} {
		want(who, "POST", "/api/conversation-messages/", fmt.Sprintf("conversation_id=%d&message=Hello", s.Closed), 403, "conversation_closed")
		want(who, "POST", closed+"invite", "recipient_ids%5B%5D=6", 403, "conversation_closed")
		refused += 2
	}
	sameSnapshots(t, "a refused write to a closed conversation", []string{closed}, closedBefore, snapshot(t, svc, u1, closed))

	// The same operations by those who have the right pass: the starter opens invites, then
	// user 1 may invite; user 1's own reply is theirs to edit, and not user 2's.
	want(u2, "POST", joined, "open_invite=1", 200, "")
	want(u1, "POST", joined+"invite", "recipient_ids%5B%5D=5", 200, "")
	if st, _, b := doReq(t, "GET", svc.URL+joined, actor(fx, 5), ""); st != 200 {
		t.Errorf("user 5 invited into Joined: GET %d %s", st, short(b, 200))
	}
	var r struct {
		Message struct {
			MessageID int64 `json:"message_id"`
		} `json:"message"`
	}
	st, _, b := formReq(t, svc, u1, "POST", "/api/conversation-messages/", fmt.Sprintf("conversation_id=%d&message=Mine", s.Joined))
	if st != 200 || json.Unmarshal([]byte(b), &r) != nil || r.Message.MessageID == 0 {
		t.Fatalf("reply by user 1: %d %s", st, short(b, 200))
	}
	mine := fmt.Sprintf("/api/conversation-messages/%d/", r.Message.MessageID)
	want(u2, "POST", mine, "message=Not yours either", 403, "no_permission")
	want(u1, "POST", mine, "message=Mine, edited", 200, "")
	want(u1, "POST", joined, "title=Still not mine", 403, "no_permission")
	report(t, "%d writes without the right (another's message, a conversation not started, invite without open_invite, closed conversation; user key and super key acting as the user): 403 no_permission/conversation_closed, nothing changed; the rightful ones passed", refused)
}

// TestSecurityConversationsNoExistenceLeak compares, for every operation of the conversations
// API (with valid and with invalid fields), the answer about a conversation (or message) the
// user is not in, or has left, with the answer about one that does not exist: status, headers
// and body must be the same; nothing may change; the list and /api/me/ show none of them.
func TestSecurityConversationsNoExistenceLeak(t *testing.T) {
	for _, db := range []string{"PostgreSQL", "SQLite"} {
		t.Run(db, func(t *testing.T) { noExistenceLeak(t, db == "SQLite") })
	}
}

func noExistenceLeak(t *testing.T, sqlite bool) {
	svc, fx, s := conversationService(t, sqlite)
	u3, u2 := actor(fx, 3), actor(fx, 2)
	convs := map[string]int64{"foreign": fx.Foreign, "foreign closed": s.ForeignClosed, "foreign open invite": s.ForeignOwned,
		"left (ignore)": s.Left, "left": s.LeftSoft}
	msgs := map[string]int64{"foreign": fx.ForeignMessage, "left (ignore)": s.LeftMessage, "left": s.LeftSoftMessage}
	cp := func(id int64, suffix string) string { return fmt.Sprintf("/api/conversations/%d%s", id, suffix) }
	mp := func(id int64) string { return fmt.Sprintf("/api/conversation-messages/%d/", id) }
	var foreignWatch, leftWatch []string
	for _, id := range []int64{fx.Foreign, s.ForeignClosed, s.ForeignOwned} {
		foreignWatch = append(foreignWatch, cp(id, "/"), cp(id, "/messages"))
	}
	for _, id := range []int64{s.Left, s.LeftSoft} {
		leftWatch = append(leftWatch, cp(id, "/"), cp(id, "/messages"))
	}
	foreignBefore, leftBefore := snapshot(t, svc, u3, foreignWatch...), snapshot(t, svc, u2, leftWatch...)

	type probe struct {
		method string
		path   func(int64) string
		body   func(int64) string
		extra  []string
	}
	none := func(int64) string { return "" }
	fixed := func(b string) func(int64) string { return func(int64) string { return b } }
	onConv := func(method, suffix string, body func(int64) string, extra ...string) probe {
		return probe{method, func(id int64) string { return cp(id, suffix) }, body, extra}
	}
	replyTo := func(msg string) func(int64) string {
		return func(id int64) string { return fmt.Sprintf("conversation_id=%d&message=%s", id, msg) }
	}
	var tooMany strings.Builder // 10,000 recipients, 40 distinct users
	for i := range 10000 {
		fmt.Fprintf(&tooMany, "&recipient_ids%%5B%%5D=%d", 2+i%40)
	}
	convProbes := []probe{
		onConv("GET", "/", none), onConv("HEAD", "/", none), onConv("GET", "", none),
		onConv("GET", "/messages?page=2", none), onConv("GET", "/messages?page=9223372036854775807", none),
		onConv("POST", "/", fixed("title=Renamed")), onConv("POST", "/", fixed("title=%20%20")),
		onConv("POST", "/", fixed("conversation_open=0&open_invite=1")), onConv("POST", "/", fixed("open_invite=maybe")),
		onConv("POST", "/", fixed("title="+strings.Repeat("t", 101))),
		onConv("DELETE", "/", none), onConv("DELETE", "/?ignore=1", none), onConv("DELETE", "/", fixed("ignore=bogus")),
		onConv("POST", "/invite", fixed("recipient_ids%5B%5D=5")), onConv("POST", "/invite", fixed("recipient_ids%5B%5D=99999")),
		onConv("POST", "/invite", fixed("recipient_ids%5B%5D=x")), onConv("POST", "/invite", fixed(tooMany.String()[1:])), onConv("POST", "/invite", none),
		onConv("POST", "/star", none), onConv("POST", "/star", fixed("star=1")), onConv("POST", "/star", fixed("star=2")),
		onConv("POST", "/mark-read", fixed("date=1767225600")), onConv("POST", "/mark-unread", none),
		{"POST", func(int64) string { return "/api/conversation-messages/" }, replyTo("Hello"), nil},
		{"POST", func(int64) string { return "/api/conversation-messages" }, replyTo("Hello"), []string{"Idempotency-Key", "leak-probe"}},
		{"POST", func(int64) string { return "/api/conversation-messages/" }, replyTo(strings.Repeat("m", defaultMessageMaxLength+1)), nil},
		{"POST", func(int64) string { return "/api/conversation-messages/" }, replyTo("%20"), nil},
	}
	msgProbes := []probe{
		{"GET", mp, none, nil}, {"HEAD", mp, none, nil},
		{"POST", mp, fixed("message=Edited"), nil}, {"POST", mp, fixed("message=%20"), nil},
		{"POST", mp, fixed("message=" + strings.Repeat("m", defaultMessageMaxLength+1)), nil},
	}
	strip := func(h http.Header) string {
		h = h.Clone()
		h.Del("Date")
		h.Del("X-Request-Id")
		return fmt.Sprint(h)
	}
	compared, leaks := 0, 0
	run := func(who http.Header, ps []probe, objects map[string]int64, missing int64) {
		for _, p := range ps {
			ms, mh, mb := formReq(t, svc, who, p.method, p.path(missing), p.body(missing), p.extra...)
			if ms < 400 || ms >= 500 {
				t.Errorf("%s %s %.80q on a missing object: %d %s, want a 4xx", p.method, p.path(missing), p.body(missing), ms, short(mb, 200))
			}
			for name, id := range objects {
				fs, fh, fb := formReq(t, svc, who, p.method, p.path(id), p.body(id), p.extra...)
				compared++
				if fs != ms || fb != mb || strip(fh) != strip(mh) {
					leaks++
					t.Errorf("%s %s %.80q (%s) answers unlike a missing one:\n  %d %s %s\n  missing: %d %s %s",
						p.method, p.path(id), p.body(id), name, fs, strip(fh), short(fb, 200), ms, strip(mh), short(mb, 200))
				}
			}
		}
	}
	for _, who := range []http.Header{actor(fx, 1), {"Forum-Api-Key": {fx.SuperKey}, "Forum-Api-User": {"1"}}} {
		run(who, convProbes, convs, fx.MissingID)
		run(who, msgProbes, msgs, fx.MissingID)
	}
	sameSnapshots(t, "a probe by an outsider", foreignWatch, foreignBefore, snapshot(t, svc, u3, foreignWatch...))
	sameSnapshots(t, "a probe by a user who left", leftWatch, leftBefore, snapshot(t, svc, u2, leftWatch...))

	// The list and /api/me/ show none of them, whatever the filters.
	hidden := map[int64]string{}
	for name, id := range convs {
		hidden[id] = name
	}
	for _, q := range []string{"", "?starter_id=3", "?receiver_id=4", "?receiver_id=2", "?unread=1", "?unread=0", "?starred=0"} {
		for page := 1; ; page++ {
			sep := "?"
			if q != "" {
				sep = "&"
			}
			var list struct {
				Conversations []struct {
					ConversationID int64 `json:"conversation_id"`
				} `json:"conversations"`
				Pagination struct {
					LastPage int `json:"last_page"`
				} `json:"pagination"`
			}
			st, _, b := doReq(t, "GET", fmt.Sprintf("%s/api/conversations/%s%spage=%d", svc.URL, q, sep, page), actor(fx, 1), "")
			if st != 200 || json.Unmarshal([]byte(b), &list) != nil {
				t.Fatalf("list %s page %d: %d %s", q, page, st, short(b, 200))
			}
			for _, c := range list.Conversations {
				if name, ok := hidden[c.ConversationID]; ok {
					t.Errorf("list %s shows conversation %d (%s)", q, c.ConversationID, name)
				}
			}
			if page >= list.Pagination.LastPage {
				break
			}
		}
	}

	// Left without ignore comes back when another participant replies; with ignore it does not.
	for _, id := range []int64{s.Left, s.LeftSoft} {
		if st, _, b := formReq(t, svc, u2, "POST", "/api/conversation-messages/", fmt.Sprintf("conversation_id=%d&message=Back?", id)); st != 200 {
			t.Fatalf("reply by user 2 to %d: %d %s", id, st, short(b, 200))
		}
	}
	if st, _, b := doReq(t, "GET", svc.URL+cp(s.LeftSoft, "/"), actor(fx, 1), ""); st != 200 {
		t.Errorf("left without ignore, after a reply: %d %s, want 200", st, short(b, 200))
	}
	if st, _, b := doReq(t, "GET", svc.URL+cp(s.Left, "/"), actor(fx, 1), ""); st != 404 {
		t.Errorf("left with ignore, after a reply: %d %s, want 404", st, short(b, 200))
	}
	verdict := "identical status, headers and body"
	if leaks > 0 {
		verdict = fmt.Sprintf("%d DIFFERENCES (see errors)", leaks)
	}
	report(t, "%d pairs (foreign, foreign closed, foreign with open invite, left, left with ignore vs missing; %d conversation and %d message operations with valid and invalid fields; user key and super key acting as user 1): %s; list (7 filters) and nothing changed",
		compared, len(convProbes), len(msgProbes), verdict)
}
