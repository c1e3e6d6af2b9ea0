package httpapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"forumstats.local/forum-svc/internal/attachment"
	"forumstats.local/forum-svc/internal/auth"
	"forumstats.local/forum-svc/internal/store"
)

// Keys with every scope, attachments' included, for alice (1), bob (2) and dave (4).
const (
	attAlice = "att-alice-key-0123456789abcdef0123456"
	attBob   = "att-bob-key-0123456789abcdef012345678"
	attDave  = "att-dave-key-0123456789abcdef01234567"
)

func attachmentKeys(t *testing.T, e *env) {
	t.Helper()
	for k, u := range map[string]int64{attAlice: 1, attBob: 2, attDave: 4} {
		nk := store.NewKey{Hash: auth.Hash(k), Type: auth.TypeUser, UserID: u, Active: true, Scopes: auth.KnownScopes}
		if err := store.UpsertKey(context.Background(), e.gdb, nk, time.Unix(now, 0)); err != nil {
			t.Fatal(err)
		}
	}
}

// patternReader yields size bytes of a seeded pseudo-random stream, never holding more than the
// caller's buffer.
type patternReader struct {
	rng  *rand.ChaCha8
	left int64
}

func newPattern(seed byte, size int64) *patternReader {
	return &patternReader{rng: rand.NewChaCha8([32]byte{seed}), left: size}
}

func (p *patternReader) Read(b []byte) (int, error) {
	if p.left == 0 {
		return 0, io.EOF
	}
	b = b[:min(int64(len(b)), p.left)]
	n, _ := p.rng.Read(b)
	p.left -= int64(n)
	return n, nil
}

func sha(r io.Reader) string {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		panic(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// upload sends a multipart body (the fields in order, then the file when filename is set) to
// path, streamed through a pipe.
func (e *env) upload(path, apiKey string, fields [][2]string, filename string, file io.Reader) response {
	e.t.Helper()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		for _, f := range fields {
			if err := mw.WriteField(f[0], f[1]); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		if filename != "" {
			w, err := mw.CreateFormFile("attachment", filename)
			if err == nil {
				_, err = io.Copy(w, file)
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(mw.Close())
	}()
	r := httptest.NewRequest(http.MethodPost, path, pr)
	r.Header.Set("Content-Type", mw.FormDataContentType())
	r.Header.Set(auth.HeaderAPIKey, apiKey)
	return e.serve(r)
}

// newKey asks for a key (context: a conversation id, or 0) and returns it.
func (e *env) newKey(apiKey string, conversationID int64) string {
	e.t.Helper()
	fields := [][2]string{{"type", "conversation_message"}}
	if conversationID != 0 {
		fields = append(fields, [2]string{"context[conversation_id]", fmt.Sprint(conversationID)})
	}
	r := e.upload("/api/attachments/new-key", apiKey, fields, "", nil)
	if r.status != http.StatusOK {
		e.t.Fatalf("new-key: %d %s", r.status, r.body)
	}
	return r.json(e.t)["key"].(string)
}

// attachmentID reads {attachment: {attachment_id}}.
func attachmentID(t *testing.T, r response) int64 {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d, body %s", r.status, r.body)
	}
	n, err := r.json(t)["attachment"].(map[string]any)["attachment_id"].(json.Number).Int64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestAttachmentRoundTrip(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		attachmentKeys(t, e)
		const size = 10 << 20
		want := sha(newPattern(1, size))
		// The key for a reply in 12 (alice and bob), with the first file.
		r := e.upload("/api/attachments/new-key", attAlice,
			[][2]string{{"type", "conversation_message"}, {"context[conversation_id]", "12"}}, "big.zip", newPattern(1, size))
		id := attachmentID(t, r)
		k := r.json(t)["key"].(string)
		got := r.json(t)["attachment"].(map[string]any)
		if got["file_size"].(json.Number).String() != fmt.Sprint(size) || got["filename"] != "big.zip" ||
			got["content_id"].(json.Number).String() != "0" || got["content_type"] != "conversation_message" {
			t.Fatalf("attachment %v", got)
		}
		path := fmt.Sprintf("/api/attachments/%d", id)
		// Before it is attached, the uploader alone sees it.
		if ids := idsOf(t, e.get("/api/attachments?key="+k, key(attAlice)), "attachments", "attachment_id"); fmt.Sprint(ids) != fmt.Sprint([]int64{id}) {
			t.Fatalf("key lists %v", ids)
		}
		wantError(t, e.get(path, key(attBob)), http.StatusNotFound, "requested_attachment_not_found", nil)
		wantError(t, e.get("/api/attachments?key="+k, key(attBob)), http.StatusForbidden, "attachment_key_user_wrong", nil)
		// The reply attaches it.
		reply := e.post("/api/conversation-messages", url.Values{"conversation_id": {"12"}, "message": {"see file"},
			"attachment_key": {k}}, key(attAlice))
		if reply.status != http.StatusOK {
			t.Fatalf("reply: %d %s", reply.status, reply.body)
		}
		messageID, _ := reply.json(t)["message"].(map[string]any)["message_id"].(json.Number).Int64()
		if n := idsOf(t, e.get("/api/attachments?key="+k, key(attAlice)), "attachments", "attachment_id"); len(n) != 0 {
			t.Fatalf("key still lists %v after the reply", n)
		}
		meta := e.get(path, key(attBob))
		if c, _ := meta.json(t)["attachment"].(map[string]any)["content_id"].(json.Number).Int64(); c != messageID {
			t.Fatalf("content_id %d; want %d (%s)", c, messageID, meta.body)
		}
		// Every participant downloads the exact bytes; anyone else finds nothing.
		data := e.get(path+"/data", key(attBob))
		if data.status != http.StatusOK || sha(bytes.NewReader(data.body)) != want {
			t.Fatalf("download: %d, %d bytes, sha256 differs", data.status, len(data.body))
		}
		if ct, cd := data.header.Get("Content-Type"), data.header.Get("Content-Disposition"); ct != "application/octet-stream" ||
			cd != `attachment; filename=big.zip` {
			t.Fatalf("served as %q, %q", ct, cd)
		}
		for _, p := range []string{path, path + "/data", path + "/thumbnail"} {
			wantError(t, e.get(p, key(attDave)), http.StatusNotFound, "requested_attachment_not_found", nil)
		}
		// Ranges, one across a chunk boundary; a known ETag.
		all := data.body
		for _, rg := range [][2]int{{0, 99}, {262_100, 262_200}, {size - 10, size - 1}} {
			part := e.get(path+"/data", key(attBob), fmt.Sprintf("Range: bytes=%d-%d", rg[0], rg[1]))
			if part.status != http.StatusPartialContent || !bytes.Equal(part.body, all[rg[0]:rg[1]+1]) {
				t.Fatalf("range %v: %d, %d bytes", rg, part.status, len(part.body))
			}
			if cr := part.header.Get("Content-Range"); cr != fmt.Sprintf("bytes %d-%d/%d", rg[0], rg[1], size) {
				t.Fatalf("Content-Range %q", cr)
			}
		}
		etag := data.header.Get("ETag")
		if etag != `"`+want+`"` {
			t.Fatalf("ETag %q", etag)
		}
		if r := e.get(path+"/data", key(attBob), "If-None-Match: "+etag); r.status != http.StatusNotModified {
			t.Fatalf("If-None-Match: %d", r.status)
		}
		// Only its uploader deletes it.
		wantError(t, e.req(http.MethodDelete, path, nil, key(attBob)), http.StatusForbidden, "no_permission", nil)
		wantJSON(t, e.req(http.MethodDelete, path, nil, key(attAlice)), `{"success": true}`)
		wantError(t, e.get(path, key(attAlice)), http.StatusNotFound, "requested_attachment_not_found", nil)
		var chunks int64
		e.gdb.Raw(`SELECT COUNT(*) FROM attachment_data`).Scan(&chunks)
		if chunks != 0 {
			t.Fatalf("%d chunks left after the deletion", chunks)
		}
	})
}

// pngOf encodes a w x h image.
func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{uint8(x), uint8(y), 0, 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// bombPNG is a small PNG whose header declares w x h pixels: its IHDR rewritten, CRC included.
func bombPNG(t *testing.T, w, h uint32) []byte {
	b := pngOf(t, 8, 8)
	// signature (8), length (4), "IHDR" (4), then width and height.
	binary.BigEndian.PutUint32(b[16:], w)
	binary.BigEndian.PutUint32(b[20:], h)
	binary.BigEndian.PutUint32(b[29:], crc32.ChecksumIEEE(b[12:29]))
	return b
}

func TestAttachmentServedAs(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		attachmentKeys(t, e)
		k := e.newKey(attAlice, 0)
		up := func(name string, b []byte) int64 {
			return attachmentID(t, e.upload("/api/attachments", attAlice, [][2]string{{"key", k}}, name, bytes.NewReader(b)))
		}
		// HTML in a .txt: a download, never a page.
		html := up("page.txt", []byte("<!DOCTYPE html><html><script>alert(1)</script></html>"))
		r := e.get(fmt.Sprintf("/api/attachments/%d/data", html), key(attAlice))
		if ct, cd := r.header.Get("Content-Type"), r.header.Get("Content-Disposition"); r.status != http.StatusOK ||
			ct != "application/octet-stream" || !strings.HasPrefix(cd, "attachment;") || r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("HTML served as %d %q %q", r.status, ct, cd)
		}
		wantError(t, e.get(fmt.Sprintf("/api/attachments/%d/thumbnail", html), key(attAlice)), http.StatusNotFound, "attachment_has_no_thumbnail", nil)
		// An image: inline, with its size, and a thumbnail of at most 400 pixels.
		img := up("photo.png", pngOf(t, 800, 600))
		r = e.get(fmt.Sprintf("/api/attachments/%d/data", img), key(attAlice))
		if ct, cd := r.header.Get("Content-Type"), r.header.Get("Content-Disposition"); ct != "image/png" || cd != "inline; filename=photo.png" {
			t.Fatalf("PNG served as %q %q", ct, cd)
		}
		meta := e.get(fmt.Sprintf("/api/attachments/%d", img), key(attAlice)).json(t)["attachment"].(map[string]any)
		if fmt.Sprintf("%v %v", meta["width"], meta["height"]) != "800 600" || meta["thumbnail_url"] != fmt.Sprintf("/api/attachments/%d/thumbnail", img) {
			t.Fatalf("image attachment %v", meta)
		}
		for range 2 { // made, then kept
			th := e.get(fmt.Sprintf("/api/attachments/%d/thumbnail", img), key(attAlice))
			cfg, err := png.DecodeConfig(bytes.NewReader(th.body))
			if th.status != http.StatusOK || err != nil || cfg.Width != 400 || cfg.Height != 300 {
				t.Fatalf("thumbnail: %d %v %v", th.status, cfg, err)
			}
		}
		// A 50-megapixel header is refused from the header alone.
		bomb := up("bomb.png", bombPNG(t, 10_000, 5_000))
		meta = e.get(fmt.Sprintf("/api/attachments/%d", bomb), key(attAlice)).json(t)["attachment"].(map[string]any)
		if fmt.Sprintf("%v %v", meta["width"], meta["height"]) != "10000 5000" {
			t.Fatalf("bomb attachment %v", meta)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		wantError(t, e.get(fmt.Sprintf("/api/attachments/%d/thumbnail", bomb), key(attAlice)), http.StatusNotFound, "attachment_has_no_thumbnail", nil)
		runtime.ReadMemStats(&after)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
			t.Fatalf("refusing the bomb allocated %d bytes: it was decoded", grew)
		}
	})
}

func TestAttachmentLimits(t *testing.T) {
	e := newEnv(t, envOptions{})
	attachmentKeys(t, e)
	ctx := context.Background()
	for name, v := range map[string]int64{"attachmentMaxFileSize": 1000, "attachmentMaxPerMessage": 2} {
		opt, err := store.LookupOption(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := opt.Set(ctx, e.gdb, v); err != nil {
			t.Fatal(err)
		}
	}
	k := e.newKey(attAlice, 0)
	send := func(apiKey, name string, size int64) response {
		return e.upload("/api/attachments", apiKey, [][2]string{{"key", k}}, name, newPattern(2, size))
	}
	wantError(t, send(attAlice, "a.txt", 1001), http.StatusBadRequest, "uploaded_file_is_too_large", map[string]any{"max": 1000})
	wantError(t, send(attAlice, "a.exe", 10), http.StatusBadRequest, "uploaded_file_does_not_have_an_allowed_extension",
		map[string]any{"allowed": []any{"gif", "jpe", "jpeg", "jpg", "pdf", "png", "txt", "webp", "zip"}})
	wantError(t, send(attBob, "a.txt", 10), http.StatusForbidden, "attachment_key_user_wrong", nil)
	attachmentID(t, send(attAlice, "a.txt", 1000))
	attachmentID(t, send(attAlice, "B.PNG", 0))
	wantError(t, send(attAlice, "c.txt", 1), http.StatusBadRequest, "you_may_only_attach_x_files", map[string]any{"max": 2})
	// The extensions are an option too.
	if _, err := store.SetAttachmentExtensions(ctx, e.gdb, "TXT .png"); err != nil {
		t.Fatal(err)
	}
	wantError(t, send(attAlice, "a.pdf", 10), http.StatusBadRequest, "uploaded_file_does_not_have_an_allowed_extension",
		map[string]any{"allowed": []any{"png", "txt"}})
	// Nothing of the refused files stays.
	var rows int64
	e.gdb.Raw(`SELECT COUNT(*) FROM attachments`).Scan(&rows)
	if rows != 2 {
		t.Fatalf("%d attachment rows; want 2", rows)
	}
	// Concurrent uploads under one key never pass the limit together.
	kc := e.newKey(attAlice, 0)
	statuses := make([]int, 6)
	var racing sync.WaitGroup
	for i := range statuses {
		racing.Go(func() {
			statuses[i] = e.upload("/api/attachments", attAlice, [][2]string{{"key", kc}}, "r.txt", strings.NewReader("r")).status
		})
	}
	racing.Wait()
	if ok := strings.Count(fmt.Sprint(statuses), "200"); ok != 2 {
		t.Fatalf("concurrent uploads answered %v; want two 200s", statuses)
	}
	// A body longer than the file limit and its overhead is refused from its length.
	big := request(http.MethodPost, "/api/attachments", "multipart/form-data; boundary=x", strings.Repeat("a", 1000+64<<10+1), key(attAlice))
	wantError(t, e.serve(big), http.StatusRequestEntityTooLarge, "request_entity_too_large", nil)
	// Every other write keeps the 1 MiB limit.
	wantError(t, e.raw(http.MethodPost, "/api/conversation-messages", "application/x-www-form-urlencoded",
		strings.Repeat("a", 1<<20+1), key(attAlice)), http.StatusRequestEntityTooLarge, "request_entity_too_large", nil)
	// Keys: their shape, their owner, their conversation.
	wantError(t, e.upload("/api/attachments", attAlice, [][2]string{{"key", "nope"}}, "a.txt", strings.NewReader("x")),
		http.StatusBadRequest, "invalid_attachment_key", nil)
	wantError(t, e.upload("/api/attachments", attAlice, [][2]string{{"key", k}}, "", nil), http.StatusBadRequest,
		"required_input_missing", map[string]any{"missing": []any{"attachment"}})
	wantError(t, e.upload("/api/attachments/new-key", attAlice, [][2]string{{"type", "post"}}, "", nil), http.StatusBadRequest,
		"invalid_input", map[string]any{"field": "type"})
	wantError(t, e.upload("/api/attachments/new-key", attAlice, [][2]string{{"type", "conversation_message"}, {"context[conversation_id]", "13"}}, "", nil),
		http.StatusNotFound, "requested_conversation_not_found", nil)
	wantError(t, e.post("/api/conversation-messages", url.Values{"conversation_id": {"12"}, "message": {"x"}, "attachment_key": {k}}, key(attAlice)),
		http.StatusBadRequest, "attachment_key_context_wrong", nil)
	wantError(t, e.post("/api/conversations", url.Values{"recipient_ids": {"1"}, "title": {"t"}, "message": {"x"}, "attachment_key": {k}}, key(attBob)),
		http.StatusForbidden, "attachment_key_user_wrong", nil)
	wantError(t, e.post("/api/conversations", url.Values{"recipient_ids": {"2"}, "title": {"t"}, "message": {"x"}, "attachment_key": {"zz"}}, key(attAlice)),
		http.StatusBadRequest, "invalid_input", map[string]any{"field": "attachment_key"})
	// A start attaches a key for a new conversation; an edit adds within the limit.
	start := e.post("/api/conversations", url.Values{"recipient_ids": {"2"}, "title": {"t"}, "message": {"x"}, "attachment_key": {k}}, key(attAlice))
	if start.status != http.StatusOK {
		t.Fatalf("start: %d %s", start.status, start.body)
	}
	conv := start.json(t)["conversation"].(map[string]any)
	convID, _ := conv["conversation_id"].(json.Number).Int64()
	first, _ := conv["first_message_id"].(json.Number).Int64()
	k2 := e.newKey(attAlice, convID)
	attachmentID(t, e.upload("/api/attachments", attAlice, [][2]string{{"key", k2}}, "d.txt", strings.NewReader("d")))
	wantError(t, e.post(fmt.Sprintf("/api/conversation-messages/%d", first), url.Values{"message": {"y"}, "attachment_key": {k2}}, key(attAlice)),
		http.StatusBadRequest, "you_may_only_attach_x_files", map[string]any{"max": 2})
}

func TestAttachmentSweepAndCascade(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		attachmentKeys(t, e)
		count := func(table string) (n int64) {
			t.Helper()
			if err := e.gdb.Raw(`SELECT COUNT(*) FROM ` + table).Scan(&n).Error; err != nil {
				t.Fatal(err)
			}
			return n
		}
		// One file attached to a new conversation, one left under a key.
		k := e.newKey(attAlice, 0)
		attachmentID(t, e.upload("/api/attachments", attAlice, [][2]string{{"key", k}}, "kept.txt", newPattern(3, 300_000)))
		start := e.post("/api/conversations", url.Values{"recipient_ids": {"2"}, "title": {"t"}, "message": {"x"}, "attachment_key": {k}}, key(attAlice))
		convID, _ := start.json(t)["conversation"].(map[string]any)["conversation_id"].(json.Number).Int64()
		unused := e.newKey(attAlice, 12)
		attachmentID(t, e.upload("/api/attachments", attAlice, [][2]string{{"key", unused}}, "left.txt", newPattern(4, 300_000)))
		const chunks = (300_000 + attachment.ChunkSize - 1) / attachment.ChunkSize // a file's
		if a, d := count("attachments"), count("attachment_data"); a != 2 || d != 2*chunks {
			t.Fatalf("%d attachments, %d chunks; want 2, %d", a, d, 2*chunks)
		}
		st, err := store.New(e.gdb)
		if err != nil {
			t.Fatal(err)
		}
		// The attachments of a page's messages, for the message objects.
		first, _ := start.json(t)["conversation"].(map[string]any)["first_message_id"].(json.Number).Int64()
		byMessage, err := st.MessageAttachments(context.Background(), []int64{first, 1201, 999999})
		if err != nil || len(byMessage) != 1 || len(byMessage[first]) != 1 || byMessage[first][0].Filename != "kept.txt" ||
			byMessage[first][0].MessageID != first || byMessage[first][0].FileSize != 300_000 {
			t.Fatalf("MessageAttachments: %+v, %v", byMessage, err)
		}
		// Not yet 24 hours: nothing goes.
		if n, err := st.SweepAttachmentKeys(context.Background(), now+24*3600-1, 1); err != nil || n != 0 {
			t.Fatalf("early sweep: %d, %v", n, err)
		}
		if n, err := st.SweepAttachmentKeys(context.Background(), now+24*3600, 1); err != nil || n != 2 {
			t.Fatalf("sweep: %d keys, %v; want 2", n, err)
		}
		if a, d := count("attachments"), count("attachment_data"); a != 1 || d != chunks {
			t.Fatalf("after the sweep %d attachments, %d chunks; want the attached file's 1, %d", a, d, chunks)
		}
		// The last participant to leave deletes the conversation, and its files with it.
		for _, k := range []string{attAlice, attBob} {
			if r := e.req(http.MethodDelete, fmt.Sprintf("/api/conversations/%d", convID), nil, key(k)); r.status != http.StatusOK {
				t.Fatalf("leave: %d %s", r.status, r.body)
			}
		}
		if a, d := count("attachments"), count("attachment_data"); a != 0 || d != 0 {
			t.Fatalf("after the deletion %d attachments, %d chunks", a, d)
		}
	})
}

// TestUploadMemory: uploads are streamed to the database a chunk at a time, so that eight
// concurrent 10 MiB uploads grow the heap by less than 8 MiB. The sampler collects garbage before
// each reading (every 2 ms), so that HeapInuse is what the uploads hold, not what the collector
// has yet to reclaim of the chunks already written; the peak is compared with the level after a
// warm-up of eight concurrent small uploads, which opens the pool's connections and runs the
// one-time setup of the statements (GORM's schema, compiled expressions) that any first request
// pays whatever its size.
func TestUploadMemory(t *testing.T) {
	e := newEnv(t, envOptions{})
	attachmentKeys(t, e)
	keys := make([]string, 8)
	for i := range keys {
		keys[i] = e.newKey(attAlice, 0)
	}
	uploadAll := func(size int64) {
		var uploads sync.WaitGroup
		for i, k := range keys {
			uploads.Go(func() {
				r := e.upload("/api/attachments", attAlice, [][2]string{{"key", k}}, "f.zip", newPattern(byte(i), size))
				if r.status != http.StatusOK {
					t.Errorf("upload %d: %d %s", i, r.status, r.body)
				}
			})
		}
		uploads.Wait()
	}
	uploadAll(1000)
	// The peak of one round of eight uploads. A machine busy with other work can stall the uploads
	// midway, so that more of the chunks in flight are held at one reading: the bound holds when
	// one of three rounds keeps under it, and fails when every round goes over.
	round := func() int64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base := ms.HeapInuse
		var peak atomic.Uint64
		done := make(chan struct{})
		var sampling sync.WaitGroup
		sampling.Go(func() {
			tick := time.NewTicker(2 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
					var m runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&m)
					if m.HeapInuse > peak.Load() {
						peak.Store(m.HeapInuse)
					}
				}
			}
		})
		uploadAll(10 << 20)
		close(done)
		sampling.Wait()
		grew := int64(peak.Load()) - int64(base)
		t.Logf("heap in use: %d before, peak %d, grew %.2f MiB", base, peak.Load(), float64(grew)/(1<<20))
		return grew
	}
	var grew []string
	for range 3 {
		g := round()
		if g < 8<<20 {
			return
		}
		grew = append(grew, fmt.Sprintf("%.2f MiB", float64(g)/(1<<20)))
	}
	t.Fatalf("eight 10 MiB uploads grew the heap by %s in three rounds; want < 8 MiB in one at least", strings.Join(grew, ", "))
}

// A message's attach_count is kept with it: attaching adds the key's files, deleting an attached
// file takes one away, and the kept count always equals the files the message has, which the
// message, its page and the write answers list.
func TestAttachCountFollowsTheFiles(t *testing.T) {
	dialects(t, func(t *testing.T, e *env) {
		attachmentKeys(t, e)
		keyWith := func(names ...string) string {
			k := e.newKey(attAlice, 10)
			for _, n := range names {
				attachmentID(t, e.upload("/api/attachments", attAlice, [][2]string{{"key", k}}, n, strings.NewReader(n)))
			}
			return k
		}
		kept := func() (mismatched int64) {
			t.Helper()
			if err := e.gdb.Raw(`SELECT COUNT(*) FROM conversation_messages m
WHERE m.attach_count <> (SELECT COUNT(*) FROM attachments a WHERE a.message_id = m.message_id)`).Row().Scan(&mismatched); err != nil {
				t.Fatal(err)
			}
			return mismatched
		}
		shown := func(where string, m map[string]any, names ...string) {
			t.Helper()
			var got []string
			list, _ := m["Attachments"].([]any)
			for _, a := range list {
				got = append(got, a.(map[string]any)["filename"].(string))
			}
			if m["attach_count"].(json.Number).String() != fmt.Sprint(len(names)) || fmt.Sprint(got) != fmt.Sprint(names) || kept() != 0 {
				t.Fatalf("%s: attach_count %v, Attachments %q, %d kept counts wrong; want %q", where, m["attach_count"], got, kept(), names)
			}
		}
		reply := e.post("/api/conversation-messages", form("conversation_id", "10", "message", "files", "attachment_key", keyWith("a.txt", "b.txt")), key(attAlice))
		msg := reply.json(t)["message"].(map[string]any)
		shown("reply", msg, "a.txt", "b.txt")
		id := msg["message_id"].(json.Number).String()
		edit := e.post("/api/conversation-messages/"+id, form("message", "more", "attachment_key", keyWith("c.txt")), key(attAlice))
		shown("edit", edit.json(t)["message"].(map[string]any), "a.txt", "b.txt", "c.txt")
		// A message without files shows no list.
		plain := e.post("/api/conversation-messages", form("conversation_id", "10", "message", "none"), key(attAlice))
		if m := plain.json(t)["message"].(map[string]any); m["attach_count"].(json.Number).String() != "0" || m["Attachments"] != nil {
			t.Fatalf("a message without files: %v", m)
		}
		first := e.get("/api/conversation-messages/"+id, key(attAlice)).json(t)["message"].(map[string]any)["Attachments"].([]any)[0]
		if r := e.req(http.MethodDelete, fmt.Sprintf("/api/attachments/%s", first.(map[string]any)["attachment_id"]), nil, key(attAlice)); r.status != http.StatusOK {
			t.Fatalf("delete: %d %s", r.status, r.body)
		}
		shown("after a deletion", e.get("/api/conversation-messages/"+id, key(attAlice)).json(t)["message"].(map[string]any), "b.txt", "c.txt")
		// The page: the message with files, then the one without.
		last := e.get("/api/conversations/10/messages", key(attAlice)).json(t)["pagination"].(map[string]any)["last_page"].(json.Number).String()
		messages := e.get("/api/conversations/10/messages?page="+last, key(attAlice)).json(t)["messages"].([]any)
		shown("page", messages[len(messages)-2].(map[string]any), "b.txt", "c.txt")
		if m := messages[len(messages)-1].(map[string]any); m["Attachments"] != nil {
			t.Fatalf("page: a message without files lists %v", m["Attachments"])
		}
	})
}
