package store

import (
	"encoding/binary"
	"testing"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// The fast binary paths decode as pgx does, and the other formats go through pgx.
func TestRawDecoding(t *testing.T) {
	m := pgtype.NewMap()
	be := func(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }
	for _, us := range []int64{0, 1, -1, 912_345_678_901_234, -31_536_000_000_001} {
		f := pgconn.FieldDescription{Name: "generated_at", DataTypeOID: pgtype.TimestamptzOID, Format: pgx.BinaryFormatCode}
		got, err := rawTime(m, f, be(us))
		if err != nil {
			t.Fatal(err)
		}
		var want time.Time
		if err := m.Scan(f.DataTypeOID, f.Format, be(us), &want); err != nil {
			t.Fatal(err)
		}
		if !got.Equal(want) {
			t.Errorf("rawTime(%d µs) = %v, pgx says %v", us, got, want)
		}
	}
	text := pgconn.FieldDescription{Name: "generated_at", DataTypeOID: pgtype.TimestamptzOID, Format: pgx.TextFormatCode}
	if got, err := rawTime(m, text, []byte("2026-11-20 10:00:00+00")); err != nil || !got.Equal(time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("text timestamptz: %v, %v", got, err)
	}
	for _, c := range []struct {
		f    pgconn.FieldDescription
		b    []byte
		want int64
	}{
		{pgconn.FieldDescription{DataTypeOID: pgtype.Int8OID, Format: pgx.BinaryFormatCode}, be(-42), -42},
		{pgconn.FieldDescription{DataTypeOID: pgtype.Int8OID, Format: pgx.TextFormatCode}, []byte("9007199254740993"), 9007199254740993},
		{pgconn.FieldDescription{DataTypeOID: pgtype.Int4OID, Format: pgx.BinaryFormatCode}, []byte{0, 0, 1, 0}, 256},
	} {
		if got, err := rawInt64(m, c.f, c.b); err != nil || got != c.want {
			t.Errorf("rawInt64(%v, %v) = %d, %v; want %d", c.f, c.b, got, err, c.want)
		}
	}
	if _, err := rawInt64(m, pgconn.FieldDescription{Name: "total", DataTypeOID: pgtype.Int8OID, Format: pgx.BinaryFormatCode}, nil); err == nil {
		t.Error("rawInt64(NULL): no error")
	}
	if optText(nil) != nil || *optText([]byte("x")) != "x" {
		t.Error("optText")
	}
}

// Equal texts come back as one string, in runs or not, and different texts stay apart.
func TestInterner(t *testing.T) {
	var in interner
	texts := []string{"a", "a", "bb", "a", "", "bb", ""}
	first := map[string]*byte{}
	for _, s := range texts {
		got := in.of([]byte(s))
		if got != s {
			t.Fatalf("of(%q) = %q", s, got)
		}
		if p, ok := first[s]; ok && s != "" && p != unsafe.StringData(got) {
			t.Errorf("of(%q) is a new string", s)
		}
		first[s] = unsafe.StringData(got)
	}
}
