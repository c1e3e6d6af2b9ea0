package attachment

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"forumstats.local/forum-svc/internal/conversation"
)

func TestCheckFilename(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		err      string // "", "ext", "input"
	}{
		{"photo.png", "photo.png", ""},
		{"PHOTO.JPEG", "PHOTO.JPEG", ""},
		{"a.b.txt", "a.b.txt", ""},
		{`C:\Users\me\report.pdf`, "report.pdf", ""},
		{"../../etc/passwd.zip", "passwd.zip", ""},
		{"run.exe", "", "ext"},
		{"photo.png.exe", "", "ext"},
		{"noextension", "", "ext"},
		{".png", ".png", ""},
		{"", "", "input"},
		{"dir/", "", "ext"},
		{"bad\x00name.png", "", "input"},
		{"line\nbreak.png", "", "input"},
		{"\xff\xfe.png", "", "input"},
		{strings.Repeat("a", 252) + ".png", "", "input"},
		{strings.Repeat("a", 251) + ".png", strings.Repeat("a", 251) + ".png", ""},
	} {
		got, err := CheckFilename(tc.in, DefaultExtensions)
		var ext *ExtensionError
		var input *conversation.InvalidInputError
		switch {
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("CheckFilename(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		case tc.err == "ext" && !errors.As(err, &ext):
			t.Errorf("CheckFilename(%q): %v; want an extension error", tc.in, err)
		case tc.err == "input" && !errors.As(err, &input):
			t.Errorf("CheckFilename(%q): %v; want invalid input", tc.in, err)
		}
	}
}

func TestParseExtensions(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "": refused
	}{
		{"png jpg", "jpg png"},
		{" .PNG,  jpg\tmp4 ", "jpg mp4 png"},
		{"gif jpe jpeg jpg pdf png txt webp zip", "gif jpe jpeg jpg pdf png txt webp zip"},
		{"", ""},
		{" , ", ""},
		{"png png", ""},
		{"png PNG", ""},
		{"p-g", ""},
		{"tar.gz", ""},
		{strings.Repeat("a", 17), ""},
		{strings.Repeat("a", 16), strings.Repeat("a", 16)},
		{strings.TrimSpace(strings.Repeat("x ", 101)), ""},
		{"é", ""},
	} {
		got, err := ParseExtensions(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("ParseExtensions(%q) = %v; want a refusal", tc.in, got)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != tc.want {
			t.Errorf("ParseExtensions(%q) = %v, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func FuzzCheckFilename(f *testing.F) {
	for _, s := range []string{"a.png", "a.PnG", `x\y.zip`, "../a.txt", "\x00.png", "a.exe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got, err := CheckFilename(name, DefaultExtensions)
		if err != nil {
			return
		}
		if !utf8.ValidString(got) || strings.ContainsAny(got, "/\\\x00\n\r") || len(got) > MaxFilenameLength || got == "" {
			t.Fatalf("CheckFilename(%q) accepted %q", name, got)
		}
	})
}

func TestServeAs(t *testing.T) {
	for sniffed, want := range map[string][2]string{
		"image/png":                 {"image/png", "inline"},
		"image/jpeg":                {"image/jpeg", "inline"},
		"image/gif":                 {"image/gif", "inline"},
		"image/webp":                {"image/webp", "inline"},
		"text/html; charset=utf-8":  {"application/octet-stream", "attachment"},
		"text/xml; charset=utf-8":   {"application/octet-stream", "attachment"},
		"text/plain; charset=utf-8": {"application/octet-stream", "attachment"},
		"application/pdf":           {"application/octet-stream", "attachment"},
		"image/svg+xml":             {"application/octet-stream", "attachment"},
		"image/bmp":                 {"application/octet-stream", "attachment"},
	} {
		ct, disp := ServeAs(sniffed)
		if ct != want[0] || disp != want[1] {
			t.Errorf("ServeAs(%q) = %q, %q; want %q, %q", sniffed, ct, disp, want[0], want[1])
		}
	}
	// What the sniffer makes of an HTML page, whatever it is named, is never served inline.
	ct, _ := ServeAs(mustDescribe([]byte("<html><body><script>x()</script>")))
	if ct != "application/octet-stream" {
		t.Errorf("an HTML page is served as %q", ct)
	}
}

func mustDescribe(b []byte) string {
	m, _, _ := Describe(b)
	return m
}

func TestScale(t *testing.T) {
	for _, tc := range []struct{ w, h, ww, wh int }{
		{800, 600, 400, 300}, {600, 800, 300, 400}, {400, 400, 400, 400}, {100, 50, 100, 50},
		{4000, 1, 400, 1}, {1, 4000, 1, 400},
	} {
		img := image.NewGray(image.Rect(0, 0, tc.w, tc.h))
		b := Scale(img, ThumbnailSize).Bounds()
		if b.Dx() != tc.ww || b.Dy() != tc.wh {
			t.Errorf("%dx%d scaled to %dx%d; want %dx%d", tc.w, tc.h, b.Dx(), b.Dy(), tc.ww, tc.wh)
		}
	}
	// Nearest neighbour keeps the colours of the source.
	src := image.NewRGBA(image.Rect(0, 0, 800, 800))
	for y := range 800 {
		for x := range 800 {
			if x < 400 {
				src.Set(x, y, color.RGBA{255, 0, 0, 255})
			} else {
				src.Set(x, y, color.RGBA{0, 0, 255, 255})
			}
		}
	}
	dst := Scale(src, 400)
	if r, _, _, _ := dst.At(10, 10).RGBA(); r != 0xffff {
		t.Errorf("left pixel %v", dst.At(10, 10))
	}
	if _, _, b, _ := dst.At(390, 10).RGBA(); b != 0xffff {
		t.Errorf("right pixel %v", dst.At(390, 10))
	}
}

func FuzzMakeThumbnail(f *testing.F) {
	var b bytes.Buffer
	_ = png.Encode(&b, image.NewGray(image.Rect(0, 0, 3, 2)))
	f.Add(b.Bytes())
	f.Add([]byte("GIF89a"))
	f.Add([]byte("\xff\xd8\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		mimeType, out, err := MakeThumbnail(bytes.NewReader(data))
		if err != nil {
			return
		}
		cfg, _, derr := image.DecodeConfig(bytes.NewReader(out))
		if derr != nil || cfg.Width > ThumbnailSize || cfg.Height > ThumbnailSize || (mimeType != "image/png" && mimeType != "image/jpeg") {
			t.Fatalf("thumbnail %s %v %v", mimeType, cfg, derr)
		}
	})
}

// memBlobs keeps chunks in memory, for the reader's test.
type memBlobs struct {
	Blobs
	chunks [][]byte
	reads  int
}

func (m *memBlobs) ReadChunk(_ context.Context, _, seq int64) ([]byte, error) {
	m.reads++
	return m.chunks[seq], nil
}

func TestChunkReaderSeeksAndReads(t *testing.T) {
	data := make([]byte, 3*ChunkSize+123)
	rand.NewChaCha8([32]byte{7}).Read(data)
	m := &memBlobs{}
	for off := 0; off < len(data); off += ChunkSize {
		m.chunks = append(m.chunks, data[off:min(off+ChunkSize, len(data))])
	}
	r := NewChunkReader(context.Background(), m, 1, int64(len(data)))
	all, err := io.ReadAll(r)
	if err != nil || !bytes.Equal(all, data) {
		t.Fatalf("read %d bytes, %v", len(all), err)
	}
	if m.reads != 4 {
		t.Errorf("%d chunk reads for 4 chunks", m.reads)
	}
	for _, off := range []int64{0, ChunkSize - 1, ChunkSize, 2*ChunkSize + 5, int64(len(data)) - 1} {
		if _, err := r.Seek(off, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 10)
		n, _ := io.ReadFull(r, b)
		if !bytes.Equal(b[:n], data[off:min(off+10, int64(len(data)))]) {
			t.Errorf("at %d: %x", off, b[:n])
		}
	}
	if end, _ := r.Seek(0, io.SeekEnd); end != int64(len(data)) {
		t.Errorf("size %d", end)
	}
	if _, err := r.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("read at the end: %v", err)
	}
	if _, err := r.Seek(-1, io.SeekStart); err == nil {
		t.Error("a negative position is accepted")
	}
	// A chunk stored shorter than its place says is an error, never a short file.
	m.chunks[1] = m.chunks[1][:10]
	if _, err := io.ReadAll(NewChunkReader(context.Background(), m, 1, int64(len(data)))); err == nil {
		t.Error("a short chunk reads as a success")
	}
}

func TestCheckAttach(t *testing.T) {
	base := conversation.AttachTarget{KeyUserID: 1, KeyConversationID: 10, UserID: 1, ConversationID: 10, Attached: 3, Adding: 7, MaxPerMessage: 10}
	var tooMany *conversation.TooManyAttachmentsError
	for _, tc := range []struct {
		name   string
		change func(*conversation.AttachTarget)
		want   func(error) bool
	}{
		{"fits", func(*conversation.AttachTarget) {}, func(err error) bool { return err == nil }},
		{"other user", func(a *conversation.AttachTarget) { a.UserID = 2 }, func(err error) bool { return errors.Is(err, conversation.ErrAttachmentKeyUserWrong) }},
		{"other conversation", func(a *conversation.AttachTarget) { a.ConversationID = 11 }, func(err error) bool { return errors.Is(err, conversation.ErrAttachmentKeyContextWrong) }},
		{"reply key on a start", func(a *conversation.AttachTarget) { a.ConversationID = 0 }, func(err error) bool { return errors.Is(err, conversation.ErrAttachmentKeyContextWrong) }},
		{"one too many", func(a *conversation.AttachTarget) { a.Adding = 8 }, func(err error) bool { return errors.As(err, &tooMany) && tooMany.Max == 10 }},
	} {
		a := base
		tc.change(&a)
		if err := conversation.CheckAttach(a); !tc.want(err) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
