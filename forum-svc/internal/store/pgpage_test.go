package store

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"

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

func openStore(t testing.TB) *Store {
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

// The pgx path and the GORM path give the same answers.
func TestMessagePagePathsAgree(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	type key struct{ user, page int64 }
	want := map[key]conversation.PageRows{}
	wantErr := map[key]error{}
	for _, user := range []int64{1, 2, 3} {
		for page := int64(1); page <= 13; page++ { // 11 pages, then two past the end
			k := key{user, page}
			want[k], wantErr[k] = messagePageSQL(st.db.WithContext(ctx), 1, user, page)
			got, err := st.MessagePage(ctx, 1, user, page)
			if !errors.Is(err, wantErr[k]) || !reflect.DeepEqual(got, want[k]) {
				t.Fatalf("user %d page %d: pgx %+v, %v; GORM %+v, %v", user, page, got, err, want[k], wantErr[k])
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
		"pgx": st.MessagePage,
		"GORM": func(ctx context.Context, c, u, p int64) (conversation.PageRows, error) {
			return messagePageSQL(st.db.WithContext(ctx), c, u, p)
		},
	} {
		if _, err := read(ctx, 1, 1, math.MaxInt64); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("%s: the overflowing page got %v", name, err)
		}
	}
}

func TestMessagePageDatabaseGone(t *testing.T) {
	st := openStore(t)
	pool, err := st.db.DB()
	if err != nil {
		t.Fatal(err)
	}
	if err := pool.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = st.MessagePage(context.Background(), 1, 1, 1)
	if err == nil || errors.Is(err, conversation.ErrConversationNotFound) {
		t.Fatalf("with the pool closed a page read got %v", err)
	}
}

// BenchmarkMessagePage reads a 5-message page of the fixture on PostgreSQL: through pgx with the
// statement rendered once (the service's path), through pgx rendering it per call, and through
// GORM's rows (database/sql, the SQLite path).
//
//	go test -run '^$' -bench MessagePage -benchmem ./forum-svc/internal/store/
func BenchmarkMessagePage(b *testing.B) {
	st := openStore(b)
	ctx := context.Background()
	perCall := func(ctx context.Context, c, u, p int64) (conversation.PageRows, error) {
		q, err := renderPage(st.db)
		if err != nil {
			return conversation.PageRows{}, err
		}
		s := *st
		s.pgPage = q
		return s.messagePagePostgres(ctx, st.db, c, u, p)
	}
	for _, c := range []struct {
		name string
		read func(context.Context, int64, int64, int64) (conversation.PageRows, error)
	}{
		{"pgx", st.MessagePage},
		{"pgx-render-per-call", perCall},
		{"gorm", func(ctx context.Context, c, u, p int64) (conversation.PageRows, error) {
			return messagePageSQL(st.db.WithContext(ctx), c, u, p)
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if p, err := c.read(ctx, 1, 1, 2); err != nil || len(p.Messages) != 5 {
					b.Fatalf("%+v, %v", p, err)
				}
			}
		})
	}
}

// The page statement, as PostgreSQL receives it, fits in pg_stat_activity's default 1 kB
// (track_activity_query_size), which keeps 1,023 bytes of it.
func TestPageStatementFitsActivity(t *testing.T) {
	if s := openStore(t); len(s.pgPage) >= 1023 {
		t.Fatalf("the page statement is %d bytes: %s", len(s.pgPage), s.pgPage)
	}
	// The message a reply answers with, as PostgreSQL receives it ($n placeholders).
	if q := strings.ReplaceAll(messageSQL, "?", "$1"); len(q) >= 1023 {
		t.Fatalf("the message statement is %d bytes: %s", len(q), q)
	}
}
