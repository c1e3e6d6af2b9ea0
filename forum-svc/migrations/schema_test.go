package migrations_test

import (
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/migrations"
	"forumstats.local/shared/migrate/migratetest"
	"forumstats.local/shared/testutil"
)

func TestMigrationTreesAgree(t *testing.T) {
	pg, lite := migratetest.CompareTrees(t, migrations.Set, nil)
	// The drift 0002 fixed in SQLite: a key without a hash.
	const keyless = `INSERT INTO api_keys (key_hash, key_type, created_at) VALUES (NULL, 'super', 1)`
	for name, gdb := range map[string]*gorm.DB{"postgres": pg, "sqlite": lite} {
		if err := gdb.Exec(keyless).Error; err == nil {
			t.Errorf("%s accepted an API key without a hash", name)
		}
	}
}

// A SQLite database made by 0001 (such as the demo's data/forum.db) keeps its rows through the
// rebuild of api_keys in 0002.
func TestSQLiteUpgradeKeepsRows(t *testing.T) {
	migratetest.SQLiteUpgrade(t, migrations.Set, 1, func(gdb *gorm.DB) {
		testutil.Exec(t, gdb,
			`INSERT INTO users VALUES (1, 'alice'), (2, 'bob')`,
			`INSERT INTO conversations VALUES (10, 'hello', 1, 100, 1, 1000, 1000, 100)`,
			`INSERT INTO conversation_participants VALUES (10, 1, 100), (10, 2, 0)`,
			`INSERT INTO conversation_messages VALUES (1000, 10, 1, 'hi', 100, 1)`,
			`INSERT INTO api_keys VALUES ('`+strings.Repeat("a", 64)+`', 'user', 1, 'read', 1, NULL, 50),
				('`+strings.Repeat("b", 64)+`', 'super', NULL, '', 0, 60, 50)`,
		)
	})
}

// A SQLite database made by 0003 keeps its rows through the rebuild of conversations,
// conversation_participants and conversation_messages in 0004, and its schema but for
// AUTOINCREMENT: foreign keys, cascades and indexes work as before, and an id once used is not
// given again.
func TestSQLiteUpgradeIDsNeverReused(t *testing.T) {
	var before map[string]string
	lite := migratetest.SQLiteUpgrade(t, migrations.Set, 3, func(gdb *gorm.DB) {
		testutil.Exec(t, gdb,
			`INSERT INTO users VALUES (1, 'alice'), (2, 'bob'), (3, 'carol')`,
			`INSERT INTO conversations VALUES (10, 'hello', 1, 100, 2, 1000, 1001, 110, 1, 0),
				(11, 'closed', 2, 200, 1, 1100, 1100, 200, 0, 1)`,
			// starred, left_state and last_message_date: the inbox columns.
			`INSERT INTO conversation_participants VALUES (10, 1, 110, 1, 0, 110), (10, 2, 0, 0, 1, 110),
				(11, 2, 200, 0, 0, 200), (11, 3, 0, 1, 2, 200)`,
			`INSERT INTO conversation_messages VALUES (1000, 10, 1, 'hi', 100, 1), (1001, 10, 2, 'hey', 110, 2),
				(1100, 11, 2, 'bye', 200, 1)`,
			`INSERT INTO api_keys VALUES ('`+strings.Repeat("a", 64)+`', 'user', 1, 'conversation:write', 1, NULL, 50)`,
			`INSERT INTO idempotency_keys VALUES ('`+strings.Repeat("a", 64)+`', 1, 'k1', '`+strings.Repeat("f", 64)+`',
				150, 200, '{"success": true, "conversation": {"conversation_id": 10}}')`,
		)
		before = schema(t, withLaterMigrations(t, gdb, 4))
	})
	after := schema(t, lite)
	for name, want := range before {
		if got := after[name]; got != want {
			t.Errorf("%s after 0004, AUTOINCREMENT aside:\n got %q\nwant %q", name, got, want)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s only after 0004", name)
		}
	}
	for pragma, want := range map[string]string{"foreign_key_check": "", "integrity_check": "ok"} {
		var got []string
		if err := lite.Raw("SELECT * FROM pragma_" + pragma).Scan(&got).Error; err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, "\n") != want {
			t.Errorf("%s: %q", pragma, got)
		}
	}
	// Foreign keys hold on the rebuilt tables.
	for _, bad := range []string{
		`INSERT INTO conversations (title, user_id) VALUES ('nobody', 99)`,
		`INSERT INTO conversation_participants (conversation_id, user_id) VALUES (99, 1)`,
		`INSERT INTO conversation_participants (conversation_id, user_id) VALUES (10, 99)`,
		`INSERT INTO conversation_messages (conversation_id, user_id, message, message_date, position) VALUES (99, 1, 'x', 1, 1)`,
		`INSERT INTO conversation_messages (conversation_id, user_id, message, message_date, position) VALUES (10, 99, 'x', 1, 3)`,
	} {
		if err := lite.Exec(bad).Error; err == nil {
			t.Errorf("accepted: %s", bad)
		}
	}
	// Deleting the conversation of the largest ids cascades, and frees no id.
	testutil.Exec(t, lite, `DELETE FROM conversations WHERE conversation_id = 11`)
	var left int64
	if err := lite.Raw(`SELECT (SELECT COUNT(*) FROM conversation_participants WHERE conversation_id = 11)
		+ (SELECT COUNT(*) FROM conversation_messages WHERE conversation_id = 11)`).Scan(&left).Error; err != nil || left != 0 {
		t.Errorf("rows of the deleted conversation: %d, %v", left, err)
	}
	var id, messageID int64
	if err := lite.Raw(`INSERT INTO conversations (title, user_id) VALUES ('new', 1) RETURNING conversation_id`).
		Row().Scan(&id); err != nil {
		t.Fatal(err)
	}
	if err := lite.Raw(`INSERT INTO conversation_messages (conversation_id, user_id, message, message_date, position)
		VALUES (?, 1, 'new', 300, 1) RETURNING message_id`, id).Row().Scan(&messageID); err != nil {
		t.Fatal(err)
	}
	if id != 12 || messageID != 1101 {
		t.Errorf("new ids after deleting conversation 11 and message 1100: %d, %d; want 12, 1101", id, messageID)
	}
}

// withLaterMigrations copies gdb's schema (tables, then indexes) into a new SQLite database and
// applies to it the SQLite migrations numbered above after: the schema an upgrade through after
// would give if migration after itself changed nothing, so that a test holds after alone to that.
func withLaterMigrations(t *testing.T, gdb *gorm.DB, after int) *gorm.DB {
	t.Helper()
	var stmts []string
	if err := gdb.Raw(`SELECT sql FROM sqlite_master WHERE sql IS NOT NULL
		AND tbl_name NOT LIKE 'sqlite\_%' ESCAPE '\' AND tbl_name <> 'schema_migrations'
		ORDER BY type <> 'table', rowid`).Scan(&stmts).Error; err != nil {
		t.Fatal(err)
	}
	names, err := fs.Glob(migrations.Set.FS, "sqlite/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		n, err := strconv.Atoi(strings.SplitN(path.Base(name), "_", 2)[0])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if n > after {
			b, err := fs.ReadFile(migrations.Set.FS, name)
			if err != nil {
				t.Fatal(err)
			}
			stmts = append(stmts, string(b))
		}
	}
	cp := testutil.OpenDB(t, "sqlite:"+filepath.Join(t.TempDir(), "copy.db"))
	testutil.Exec(t, cp, stmts...)
	return cp
}

// blanks are what schema ignores in the stored CREATE statements: layout, the quotes ALTER
// TABLE ... RENAME puts around a table's name, and AUTOINCREMENT.
var blanks = regexp.MustCompile(`\s+|"|(?i:AUTOINCREMENT)`)

// schema reads the tables and indexes of a SQLite database (but the runner's and SQLite's own
// tables), by type and name, as their CREATE statements without blanks; an index SQLite makes for
// a constraint has none.
func schema(t *testing.T, gdb *gorm.DB) map[string]string {
	t.Helper()
	var rows []struct{ Type, Name, SQL string }
	if err := gdb.Raw(`SELECT type, name, COALESCE(sql, '') AS sql FROM sqlite_master
		WHERE tbl_name NOT LIKE 'sqlite\_%' ESCAPE '\' AND tbl_name <> 'schema_migrations'`).
		Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range rows {
		out[r.Type+" "+r.Name] = blanks.ReplaceAllString(r.SQL, "")
	}
	return out
}
