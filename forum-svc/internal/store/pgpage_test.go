package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"forumstats.local/forum-svc/internal/conversation"
	"forumstats.local/forum-svc/migrations"
	"forumstats.local/shared/testutil"
)

var pgURL string

func TestMain(m *testing.M) { testutil.Main(m, &pgURL, migrations.Set) }

// openFixture fills the package database once: conversation 1 of 53 messages (dates tie in threes,
// texts with quotes, non-ASCII and an empty one) between users 1 and 2, 5 messages a page; user 3
// takes part in nothing.
var fixtureOnce sync.Once

func openStore(t *testing.T) *Store {
	t.Helper()
	ctx := context.Background()
	gdb := testutil.OpenDB(t, pgURL)
	var fillErr error
	fixtureOnce.Do(func() {
		for _, q := range []string{
			`UPDATE forum_options SET messages_per_page = 5`,
			`INSERT INTO users (user_id, username) VALUES (1, 'alice'), (2, 'bób "the" builder'), (3, 'carol')`,
			`INSERT INTO conversations (conversation_id, title, user_id, message_count) VALUES (1, 'C', 1, 53)`,
			`INSERT INTO conversation_participants (conversation_id, user_id, last_read_date) VALUES (1, 1, 1000010), (1, 2, 0)`,
			`INSERT INTO conversation_messages (message_id, conversation_id, user_id, message, message_date, position)
			 SELECT 100 + g, 1, 1 + g % 2,
			        CASE WHEN g = 7 THEN '' ELSE 'message ' || g || ' «quoted» "text"' || repeat('x', g) END,
			        1000000 + g / 3, g
			 FROM generate_series(1, 53) AS g`,
		} {
			if fillErr = gdb.WithContext(ctx).Exec(q).Error; fillErr != nil {
				return
			}
		}
	})
	if fillErr != nil {
		t.Fatal(fillErr)
	}
	st, err := New(gdb)
	if err != nil {
		t.Fatal(err)
	}
	if !st.dialect.NativeConn {
		t.Fatal("the package database is not PostgreSQL")
	}
	return st
}

// The pgx path (raw values) and the database/sql path give the same answers.
func TestMessagePagePathsAgree(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	type key struct{ user, page int64 }
	want := map[key]conversation.PageRows{}
	wantErr := map[key]error{}
	for _, user := range []int64{1, 2, 3} {
		for page := int64(1); page <= 13; page++ { // 11 pages, then two past the end
			k := key{user, page}
			want[k], wantErr[k] = st.messagePageSQL(ctx, 1, user, page)
			got, err := st.MessagePage(ctx, 1, user, page)
			if !errors.Is(err, wantErr[k]) || !reflect.DeepEqual(got, want[k]) {
				t.Fatalf("user %d page %d: pgx %+v, %v; database/sql %+v, %v", user, page, got, err, want[k], wantErr[k])
			}
		}
	}
	if p := want[key{1, 2}]; len(p.Messages) != 5 || p.Total != 53 || p.PerPage != 5 || p.LastReadDate != 1000010 ||
		p.Messages[1].Message != "" || p.Messages[1].Username != `bób "the" builder` {
		t.Fatalf("unexpected fixture page: %+v", p)
	}
	if !errors.Is(wantErr[key{3, 1}], conversation.ErrConversationNotFound) {
		t.Fatalf("a non-participant got %v", wantErr[key{3, 1}])
	}

	// Many concurrent readers: every answer is its own.
	var wg sync.WaitGroup
	for i := range 300 {
		wg.Add(1)
		go func(k key) {
			defer wg.Done()
			got, err := st.MessagePage(ctx, 1, k.user, k.page)
			if !errors.Is(err, wantErr[k]) || !reflect.DeepEqual(got, want[k]) {
				t.Errorf("concurrent user %d page %d: %+v, %v", k.user, k.page, got, err)
			}
		}(key{int64(1 + i%3), int64(1 + i%13)})
	}
	wg.Wait()
}

// A failing statement is an error on both paths, not an empty page nor a missing conversation.
func TestMessagePageStatementError(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	// The statement's page arithmetic overflows BIGINT for this page (the service clamps pages
	// before they get here; this stands for any statement error).
	for name, read := range map[string]func(context.Context, int64, int64, int64) (conversation.PageRows, error){
		"pgx": st.MessagePage, "database/sql": st.messagePageSQL,
	} {
		if _, err := read(ctx, 1, 1, math.MaxInt64); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("%s: the overflowing page got %v", name, err)
		}
	}
}

func TestMessagePageDatabaseGone(t *testing.T) {
	st := openStore(t)
	if err := st.sql.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := st.MessagePage(context.Background(), 1, 1, 1)
	if err == nil || errors.Is(err, conversation.ErrConversationNotFound) {
		t.Fatalf("with the pool closed a page read got %v", err)
	}
}

func field(oid uint32, format int16) pgconn.FieldDescription {
	return pgconn.FieldDescription{Name: "n", DataTypeOID: oid, Format: format}
}

func TestRawInt64(t *testing.T) {
	be := func(n int, v uint64) []byte {
		b := make([]byte, 8)
		binary.BigEndian.PutUint64(b, v)
		return b[8-n:]
	}
	tests := []struct {
		f       pgconn.FieldDescription
		v       []byte
		want    int64
		wantErr bool
	}{
		{field(pgtype.Int8OID, pgx.BinaryFormatCode), be(8, 1<<40), 1 << 40, false},
		{field(pgtype.Int8OID, pgx.BinaryFormatCode), be(8, math.MaxUint64), -1, false},
		{field(pgtype.Int4OID, pgx.BinaryFormatCode), be(4, 20), 20, false},
		{field(pgtype.Int4OID, pgx.BinaryFormatCode), be(4, math.MaxUint32), -1, false},
		{field(pgtype.Int2OID, pgx.BinaryFormatCode), be(2, 7), 7, false},
		{field(pgtype.Int8OID, pgx.TextFormatCode), []byte("-42"), -42, false},
		{field(pgtype.Int8OID, pgx.BinaryFormatCode), nil, 0, false}, // NULL
		{field(pgtype.Int8OID, pgx.BinaryFormatCode), be(4, 1), 0, true},
		{field(pgtype.Float8OID, pgx.BinaryFormatCode), be(8, 1), 0, true},
		{field(pgtype.Int8OID, pgx.TextFormatCode), []byte("4x"), 0, true},
	}
	for _, tt := range tests {
		got, err := rawInt64(tt.f, tt.v)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("rawInt64(%d/%d, %x) = %d, %v; want %d, error %v", tt.f.DataTypeOID, tt.f.Format, tt.v, got, err, tt.want, tt.wantErr)
		}
	}
	if _, err := notNullInt64(field(pgtype.Int8OID, pgx.BinaryFormatCode), nil); err == nil {
		t.Error("notNullInt64 accepted NULL")
	}
}

// FuzzRawInt64 holds the binary and text decodings of every int8 to the same value.
func FuzzRawInt64(f *testing.F) {
	for _, n := range []int64{0, 1, -1, math.MaxInt64, math.MinInt64, 1 << 33} {
		f.Add(n)
	}
	f.Fuzz(func(t *testing.T, n int64) {
		bin := binary.BigEndian.AppendUint64(nil, uint64(n))
		got, err := rawInt64(field(pgtype.Int8OID, pgx.BinaryFormatCode), bin)
		if err != nil || got != n {
			t.Fatalf("binary %d: %d, %v", n, got, err)
		}
		got, err = rawInt64(field(pgtype.Int8OID, pgx.TextFormatCode), fmt.Append(nil, n))
		if err != nil || got != n {
			t.Fatalf("text %d: %d, %v", n, got, err)
		}
	})
}
