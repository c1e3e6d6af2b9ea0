package migrations_test

import (
	"strings"
	"testing"

	"gorm.io/gorm"

	"forumstats.local/forum-svc/migrations"
	"forumstats.local/shared/migrate/migratetest"
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
		for _, sql := range []string{
			`INSERT INTO users VALUES (1, 'alice'), (2, 'bob')`,
			`INSERT INTO conversations VALUES (10, 'hello', 1, 100, 1, 1000, 1000, 100)`,
			`INSERT INTO conversation_participants VALUES (10, 1, 100), (10, 2, 0)`,
			`INSERT INTO conversation_messages VALUES (1000, 10, 1, 'hi', 100, 1)`,
			`INSERT INTO api_keys VALUES ('` + strings.Repeat("a", 64) + `', 'user', 1, 'read', 1, NULL, 50),
				('` + strings.Repeat("b", 64) + `', 'super', NULL, '', 0, 60, 50)`,
		} {
			if err := gdb.Exec(sql).Error; err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
		}
	})
}
