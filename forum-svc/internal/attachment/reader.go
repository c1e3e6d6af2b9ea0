package attachment

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// ChunkReader reads a stored file through Blobs, holding one chunk at a time: an io.ReadSeeker
// for http.ServeContent, which seeks for Range requests and reads only the ranges asked for.
type ChunkReader struct {
	ctx   context.Context
	blobs Blobs
	id    int64
	size  int64
	off   int64
	seq   int64 // the chunk held; -1: none
	chunk []byte
}

// NewChunkReader returns a reader of the file id of size bytes.
func NewChunkReader(ctx context.Context, blobs Blobs, id, size int64) *ChunkReader {
	return &ChunkReader{ctx: ctx, blobs: blobs, id: id, size: size, seq: -1}
}

// Read implements io.Reader.
func (r *ChunkReader) Read(p []byte) (int, error) {
	if r.off >= r.size {
		return 0, io.EOF
	}
	seq := r.off / ChunkSize
	if seq != r.seq {
		b, err := r.blobs.ReadChunk(r.ctx, r.id, seq)
		if err != nil {
			return 0, err
		}
		want := min(int64(ChunkSize), r.size-seq*ChunkSize)
		if int64(len(b)) != want {
			return 0, fmt.Errorf("attachment %d chunk %d: %d bytes stored, want %d", r.id, seq, len(b), want)
		}
		r.seq, r.chunk = seq, b
	}
	n := copy(p, r.chunk[r.off-seq*ChunkSize:])
	r.off += int64(n)
	return n, nil
}

// Seek implements io.Seeker.
func (r *ChunkReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += r.off
	case io.SeekEnd:
		offset += r.size
	default:
		return 0, errors.New("seek: bad whence")
	}
	if offset < 0 {
		return 0, errors.New("seek: negative position")
	}
	r.off = offset
	return offset, nil
}
