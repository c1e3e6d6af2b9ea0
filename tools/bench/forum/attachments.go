package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"forumstats.local/tools/stack"
)

// Attachments: a file of attachFileSize bytes uploaded through the service (POST
// attachments/new-key carrying the file: a key and its first file in one request) and downloaded
// (GET attachments/{id}/data), against a plain pgx client writing and reading the same chunks in
// the same table, with the same statements and transactions as forum-svc's store, in alternating
// rounds; then the service's peak resident set while attachConcurrent such uploads run at once.
// The service measured is a forum-svc of its own on the bench database (benchEnv.attachSvc), so
// that its resident set is that of uploads, not of the page benchmark's 16 clients.

const (
	attachFileSize   = 10 << 20 // the forum's default attachmentMaxFileSize
	attachChunkSize  = 64 << 10 // forum-svc's attachment.ChunkSize
	attachConcurrent = 8
	attachPerRound   = 3 // files each way and each side in a round
	attachFilename   = "bench.zip"
)

// attachResults are the attachments' figures: MiB/s per round and side, and the resident set.
type attachResults struct {
	upHTTP, upPgx, downHTTP, downPgx []float64
	rssBefore, rssPeak               int64 // the service's VmRSS before the concurrent uploads, VmHWM during them
	concurrentTime                   time.Duration
}

func (r attachResults) upRatio() float64   { return mean(r.upHTTP) / mean(r.upPgx) }
func (r attachResults) downRatio() float64 { return mean(r.downHTTP) / mean(r.downPgx) }
func (r attachResults) rssGrowth() int64   { return r.rssPeak - r.rssBefore }

// attachBench holds what the attachment runs share: the file, its multipart body and the pgx
// client.
type attachBench struct {
	e       *benchEnv
	file    []byte
	hash    string       // hex SHA-256 of file: the service's file_hash and ETag
	body    []byte       // the new-key request's multipart body carrying file
	ctype   string       // its Content-Type
	client  *http.Client // safe for the concurrent uploads
	conn    *pgx.Conn
	mu      sync.Mutex
	written []string // attachment keys written, deleted after each round (under mu)
}

func measureAttachments(ctx context.Context, e *benchEnv, o options) (attachResults, error) {
	var r attachResults
	a := &attachBench{e: e, file: make([]byte, attachFileSize), client: &http.Client{}}
	// Random bytes: no compression anywhere on the way helps either side.
	if _, err := rand.Read(a.file); err != nil {
		return r, err
	}
	sum := sha256.Sum256(a.file)
	a.hash = hex.EncodeToString(sum[:])
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	if err := mw.WriteField("type", "conversation_message"); err != nil {
		return r, err
	}
	fw, err := mw.CreateFormFile("attachment", attachFilename)
	if err != nil {
		return r, err
	}
	if _, err := fw.Write(a.file); err != nil {
		return r, err
	}
	if err := mw.Close(); err != nil {
		return r, err
	}
	a.body, a.ctype = b.Bytes(), mw.FormDataContentType()
	if a.conn, err = pgx.Connect(ctx, e.dbURL); err != nil {
		return r, err
	}
	defer a.conn.Close(context.WithoutCancel(ctx))

	// Warm-up: one file each way and each side, so that both have their connections and
	// statements ready before anything is measured.
	if err := a.round(ctx, nil); err != nil {
		return r, fmt.Errorf("warm-up: %w", err)
	}
	if r.rssBefore, r.rssPeak, r.concurrentTime, err = a.concurrentUploads(ctx); err != nil {
		return r, fmt.Errorf("%d uploads at once: %w", attachConcurrent, err)
	}
	for i := 0; i < o.rounds; i++ {
		if err := a.round(ctx, &r); err != nil {
			return r, fmt.Errorf("round %d: %w", i+1, err)
		}
	}
	return r, nil
}

// round uploads and downloads attachPerRound files through each side, the sides' order
// alternating from file to file, and adds the round's MiB/s to r (nil: a warm-up). The files are
// deleted afterwards, outside the timing.
func (a *attachBench) round(ctx context.Context, r *attachResults) error {
	var upHTTP, upPgx, downHTTP, downPgx time.Duration
	for i := range attachPerRound {
		for k := range 2 {
			if (i+k)%2 == 0 {
				id, d, err := a.uploadHTTP()
				if err != nil {
					return err
				}
				upHTTP += d
				if d, err = a.downloadHTTP(id); err != nil {
					return err
				}
				downHTTP += d
			} else {
				id, d, err := a.uploadPgx(ctx)
				if err != nil {
					return err
				}
				upPgx += d
				if d, err = a.downloadPgx(ctx, id); err != nil {
					return err
				}
				downPgx += d
			}
		}
	}
	if err := a.deleteWritten(ctx); err != nil {
		return err
	}
	if r != nil {
		r.upHTTP = append(r.upHTTP, mibPerSecond(attachPerRound, upHTTP))
		r.upPgx = append(r.upPgx, mibPerSecond(attachPerRound, upPgx))
		r.downHTTP = append(r.downHTTP, mibPerSecond(attachPerRound, downHTTP))
		r.downPgx = append(r.downPgx, mibPerSecond(attachPerRound, downPgx))
	}
	return nil
}

func mibPerSecond(files int, d time.Duration) float64 {
	return float64(files) * attachFileSize / (1 << 20) / d.Seconds()
}

// newKeyAnswer is the part of POST attachments/new-key's answer the bench checks.
type newKeyAnswer struct {
	Key        string `json:"key"`
	Attachment struct {
		AttachmentID int64  `json:"attachment_id"`
		FileSize     int64  `json:"file_size"`
		Filename     string `json:"filename"`
	} `json:"attachment"`
}

// uploadHTTP posts the file with a new key and returns the attachment's id and the time taken.
func (a *attachBench) uploadHTTP() (int64, time.Duration, error) {
	req, err := http.NewRequest(http.MethodPost, a.e.attachSvc.URL+"/api/attachments/new-key", bytes.NewReader(a.body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set(headerAPIKey, a.e.attachKey)
	req.Header.Set("Content-Type", a.ctype)
	start := time.Now()
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if err != nil {
		return 0, 0, err
	}
	var ans newKeyAnswer
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &ans) != nil || ans.Key == "" ||
		ans.Attachment.FileSize != attachFileSize || ans.Attachment.Filename != attachFilename {
		return 0, 0, fmt.Errorf("POST attachments/new-key: %d %.300s", resp.StatusCode, body)
	}
	a.keep(ans.Key)
	return ans.Attachment.AttachmentID, d, nil
}

// downloadHTTP reads attachment id's bytes and returns the time taken; the answer must be the
// whole file, its ETag the file's hash.
func (a *attachBench) downloadHTTP(id int64) (time.Duration, error) {
	req, err := http.NewRequest(http.MethodGet, a.e.attachSvc.URL+"/api/attachments/"+strconv.FormatInt(id, 10)+"/data", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set(headerAPIKey, a.e.attachKey)
	start := time.Now()
	resp, err := a.client.Do(req)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK || n != attachFileSize || resp.Header.Get("ETag") != strconv.Quote(a.hash) {
		return 0, fmt.Errorf("GET attachments/%d/data: %d, %d bytes, ETag %s", id, resp.StatusCode, n, resp.Header.Get("ETag"))
	}
	return d, nil
}

// uploadPgx writes the file as forum-svc's store does (internal/store/attachments.go): the key in
// a transaction of its own (CreateKey), the attachment's row in a second one that locks the key
// and counts its files (CreateAttachment), every chunk in a statement of its own (WriteChunk),
// then the row completed (FinishAttachment).
func (a *attachBench) uploadPgx(ctx context.Context) (int64, time.Duration, error) {
	key := make([]byte, 16)
	if _, err := rand.Read(key); err != nil {
		return 0, 0, err
	}
	k := "bench" + hex.EncodeToString(key)
	now := time.Now().Unix()
	start := time.Now()
	err := pgx.BeginFunc(ctx, a.conn, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO attachment_keys (attachment_key, user_id, conversation_id, created_at) VALUES ($1, $2, $3, $4)`,
			k, replyUser, nil, now)
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	a.keep(k)
	var id int64
	err = pgx.BeginFunc(ctx, a.conn, func(tx pgx.Tx) error {
		var one, held int64
		if err := tx.QueryRow(ctx, `SELECT 1 FROM attachment_keys WHERE attachment_key = $1 FOR UPDATE`, k).Scan(&one); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT COUNT(*) FROM attachments WHERE attachment_key = $1`, k).Scan(&held); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `INSERT INTO attachments (attachment_key, user_id, filename, file_size, file_hash, mime_type, attach_date)
VALUES ($1, $2, $3, 0, '', '', $4) RETURNING attachment_id`, k, replyUser, attachFilename, now).Scan(&id)
	})
	if err != nil {
		return 0, 0, err
	}
	for seq := 0; seq*attachChunkSize < len(a.file); seq++ {
		chunk := a.file[seq*attachChunkSize : min((seq+1)*attachChunkSize, len(a.file))]
		if _, err := a.conn.Exec(ctx, `INSERT INTO attachment_data (attachment_id, seq, bytes) VALUES ($1, $2, $3)`, id, seq, chunk); err != nil {
			return 0, 0, err
		}
	}
	if _, err := a.conn.Exec(ctx, `UPDATE attachments SET file_size = $1, file_hash = $2, mime_type = $3, width = $4, height = $5, complete = $6
WHERE attachment_id = $7`, len(a.file), a.hash, "application/octet-stream", 0, 0, true, id); err != nil {
		return 0, 0, err
	}
	return id, time.Since(start), nil
}

// downloadPgx reads attachment id as the service's download does: the row, then every chunk in a
// statement of its own (ReadChunk).
func (a *attachBench) downloadPgx(ctx context.Context, id int64) (time.Duration, error) {
	start := time.Now()
	var size int64
	if err := a.conn.QueryRow(ctx, `SELECT file_size FROM attachments WHERE attachment_id = $1 AND complete`, id).Scan(&size); err != nil {
		return 0, err
	}
	var n int64
	var chunk []byte
	for seq := int64(0); seq*attachChunkSize < size; seq++ {
		if err := a.conn.QueryRow(ctx, `SELECT bytes FROM attachment_data WHERE attachment_id = $1 AND seq = $2`, id, seq).Scan(&chunk); err != nil {
			return 0, err
		}
		n += int64(len(chunk))
	}
	d := time.Since(start)
	if n != attachFileSize {
		return 0, fmt.Errorf("pgx read %d bytes of attachment %d", n, id)
	}
	return d, nil
}

// keep records a key written, for deleteWritten.
func (a *attachBench) keep(key string) {
	a.mu.Lock()
	a.written = append(a.written, key)
	a.mu.Unlock()
}

// deleteWritten deletes the keys written (their files and chunks go with them).
func (a *attachBench) deleteWritten(ctx context.Context) error {
	if len(a.written) == 0 {
		return nil
	}
	_, err := a.conn.Exec(ctx, `DELETE FROM attachment_keys WHERE attachment_key = ANY($1)`, a.written)
	a.written = a.written[:0]
	return err
}

// concurrentUploads resets the service's peak resident set, runs attachConcurrent uploads at
// once, and returns its resident set before them, its peak during them and their wall time.
func (a *attachBench) concurrentUploads(ctx context.Context) (before, peak int64, d time.Duration, err error) {
	svc := a.e.attachSvc
	if err := svc.ResetPeak(); err != nil {
		return 0, 0, 0, err
	}
	m, err := svc.Memory()
	if err != nil {
		return 0, 0, 0, err
	}
	before = m.RSS
	var wg sync.WaitGroup
	errs := make([]error, attachConcurrent)
	start := time.Now()
	for i := range attachConcurrent {
		wg.Go(func() { _, _, errs[i] = a.uploadHTTP() })
	}
	wg.Wait()
	d = time.Since(start)
	if m, err = svc.Memory(); err != nil {
		return 0, 0, 0, err
	}
	for _, err := range errs {
		if err != nil {
			return 0, 0, 0, err
		}
	}
	return before, m.Peak, d, a.deleteWritten(ctx)
}

// attachmentService starts the forum-svc that serves the attachment runs alone.
func attachmentService(e *benchEnv, bin string, env []string) (*stack.Service, error) {
	return e.StartService(stack.Forum+"-attachments", bin, append(env, serviceEnv...))
}
