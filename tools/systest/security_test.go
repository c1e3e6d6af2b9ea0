//go:build faults

package systest

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
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
		{"forum mark-unread, 65 KiB declared", forum.Addr, markUnread, "POST", form, 65 << 10, false, []int{413}},
		{"forum mark-unread, 64 MiB declared", forum.Addr, markUnread, "POST", form, 64 << 20, false, []int{413}},
		{"forum mark-read, 64 MiB declared", forum.Addr, markRead, "POST", form, 64 << 20, false, []int{413}},
		{"forum mark-unread, 64 MiB chunked (body unused)", forum.Addr, markUnread, "POST", form, 64 << 20, true, []int{200, 413}},
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
		chunk := []byte(strings.Repeat("a=b&", 16<<10))
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
