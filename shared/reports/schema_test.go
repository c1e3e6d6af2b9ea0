package reports_test

import (
	"errors"
	"testing"
	"time"

	"gorm.io/gorm"

	"forumstats.local/shared/migrate/migratetest"
	"forumstats.local/shared/reports"
)

// checkEquivalents are the rules SQLite spells its own way: it has no regular expressions, and
// GLOB's [0-9] is a range of code points, as is PostgreSQL's. TestSQLiteRefusesWhatPostgresRefuses
// shows each pair refusing the same values.
var checkEquivalents = migratetest.Equivalents{
	`guild_id ~ '^[0-9]{1,20}$'`:           `length(guild_id) BETWEEN 1 AND 20 AND guild_id NOT GLOB '*[^0-9]*'`,
	`day ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'`: `day GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'`,
	`month ~ '^[0-9]{4}-[0-9]{2}$'`:        `month GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]'`,
}

func TestMigrationTreesAgree(t *testing.T) {
	migratetest.CompareTrees(t, reports.Migrations, checkEquivalents)
}

var errRollback = errors.New("rollback")

// accepts reports whether gdb takes the insert, leaving the database as it was.
func accepts(t *testing.T, gdb *gorm.DB, sql string, args ...any) bool {
	t.Helper()
	var insertErr error
	err := gdb.Transaction(func(tx *gorm.DB) error {
		insertErr = tx.Exec(sql, args...).Error
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("transaction: %v", err)
	}
	return insertErr == nil
}

func TestSQLiteRefusesWhatPostgresRefuses(t *testing.T) {
	pg, lite := migratetest.Databases(t, reports.Migrations)
	const (
		catalog = `INSERT INTO catalog_servers (number, name, guild_id) VALUES (1, 'a', ?)`
		daily   = `INSERT INTO daily_reports (guild_id, day, generated_at, status, total_messages) VALUES ('1', ?, ?, 'ok', 0)`
		monthly = `INSERT INTO monthly_reports (guild_id, month, generated_at, status, total_messages) VALUES ('1', ?, ?, 'ok', 0)`
	)
	now := time.Now()
	for _, c := range []struct {
		name, sql, value string
		valid            bool
	}{
		{"guild id of one digit", catalog, "1", true},
		{"guild id of 20 digits", catalog, "12345678901234567890", true},
		{"guild id of 21 digits", catalog, "123456789012345678901", false},
		{"empty guild id", catalog, "", false},
		{"guild id with a letter", catalog, "12a", false},
		{"negative guild id", catalog, "-12", false},
		{"guild id with a space", catalog, " 12", false},
		{"guild id with a newline", catalog, "12\n", false},
		{"guild id of Arabic-Indic digits", catalog, "١٢", false},
		{"day", daily, "2024-02-29", true},
		{"day checked for shape only", daily, "2024-13-45", true},
		{"day of one-digit month", daily, "2024-2-29", false},
		{"day with a letter", daily, "2024-02-2x", false},
		{"day with slashes", daily, "2024/02/29", false},
		{"day with a time", daily, "2024-02-29 00:00", false},
		{"day of five-digit year", daily, "20240-02-29", false},
		{"empty day", daily, "", false},
		{"month", monthly, "2024-02", true},
		{"month of one digit", monthly, "2024-2", false},
		{"month of three digits", monthly, "2024-002", false},
		{"month with an underscore", monthly, "2024_02", false},
		{"day as a month", monthly, "2024-02-29", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []any{c.value}
			if c.sql != catalog {
				args = append(args, now)
			}
			inPG, inLite := accepts(t, pg, c.sql, args...), accepts(t, lite, c.sql, args...)
			if inPG != c.valid || inLite != c.valid {
				t.Errorf("%q: postgres accepts %t, sqlite accepts %t, want %t", c.value, inPG, inLite, c.valid)
			}
		})
	}
}

// A SQLite database made by 0001 (such as the demo's data/stats.db) keeps its rows through the
// rebuild of 0002, and its channel counts still cascade from their reports.
func TestSQLiteUpgradeKeepsReports(t *testing.T) {
	at := time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC)
	lite := migratetest.SQLiteUpgrade(t, reports.Migrations, 1, func(gdb *gorm.DB) {
		for _, stmt := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO catalog_servers VALUES (1, 'One', '111'), (2, 'Two', '222')`, nil},
			{`INSERT INTO guilds VALUES ('111', 'icon', NULL, 1, ?), ('222', NULL, NULL, 0, NULL)`, []any{at}},
			{`INSERT INTO daily_reports VALUES ('111', '2024-02-28', ?, 'ok', NULL, NULL, 5), ('111', '2024-02-29', ?, 'stale', 'E', 'm', 7)`, []any{at, at}},
			{`INSERT INTO daily_channel_counts VALUES ('111', '2024-02-28', 'c1', 'general', 5), ('111', '2024-02-29', 'c1', 'general', 7)`, nil},
			{`INSERT INTO monthly_reports VALUES ('111', '2024-02', ?, 'ok', NULL, NULL, 12)`, []any{at}},
			{`INSERT INTO monthly_channel_counts VALUES ('111', '2024-02', 'c1', 'general', 12)`, nil},
			{`UPDATE collector_state SET generation = 7, last_good_pass_at = ?`, []any{at}},
		} {
			if err := gdb.Exec(stmt.sql, stmt.args...).Error; err != nil {
				t.Fatalf("%s: %v", stmt.sql, err)
			}
		}
	})
	for _, del := range []struct{ parent, child string }{
		{`DELETE FROM daily_reports WHERE day = '2024-02-28'`, `SELECT count(*) FROM daily_channel_counts WHERE day = '2024-02-28'`},
		{`DELETE FROM monthly_reports`, `SELECT count(*) FROM monthly_channel_counts`},
	} {
		var left int
		if err := lite.Exec(del.parent).Error; err != nil {
			t.Fatal(err)
		}
		if err := lite.Raw(del.child).Scan(&left).Error; err != nil || left != 0 {
			t.Errorf("%s left %d channel rows (%v), want the cascade to delete them", del.parent, left, err)
		}
	}
	if err := lite.Exec(`INSERT INTO daily_channel_counts VALUES ('9', '2024-01-01', 'c', 'n', 1)`).Error; err == nil {
		t.Error("a channel count without its report was accepted")
	}
}

// The live tables refuse, in both dialects, the rows their rules exclude: counts below zero,
// empty gaps, a shard outside its count.
func TestLiveTablesRefuseTheSameRows(t *testing.T) {
	pg, lite := migratetest.Databases(t, reports.Migrations)
	now := time.Now()
	for _, c := range []struct {
		name, sql string
		args      []any
		valid     bool
	}{
		{"a count", `INSERT INTO live_counts VALUES ('1', 490000, '', 3)`, nil, true},
		{"a count below zero", `INSERT INTO live_counts VALUES ('1', 490000, '2', -1)`, nil, false},
		{"a negative hour", `INSERT INTO live_counts VALUES ('1', -1, '2', 1)`, nil, false},
		{"a server's start", `INSERT INTO live_guilds (guild_id, since_id) VALUES ('1', 5)`, nil, true},
		{"a start at zero", `INSERT INTO live_guilds (guild_id, since_id) VALUES ('1', 0)`, nil, false},
		{"a server whose channels were listed", `INSERT INTO live_guilds VALUES ('1', 5, true)`, nil, true},
		{"a channel of unknown type", `INSERT INTO live_channels (guild_id, channel_id, name, thread) VALUES ('1', '2', 'c', false)`, nil, true},
		{"a finished day", `INSERT INTO live_finished VALUES ('1', '2026-11-18', ?)`, []any{now}, true},
		{"a finished period without its time", `INSERT INTO live_finished (guild_id, period) VALUES ('1', '2026-11')`, nil, false},
		{"a gap", `INSERT INTO live_gaps (guild_id, min_id, max_id, recorded_at) VALUES ('1', 5, 9, ?)`, []any{now}, true},
		{"an empty gap", `INSERT INTO live_gaps (guild_id, min_id, max_id, recorded_at) VALUES ('1', 9, 9, ?)`, []any{now}, false},
		{"a checkpoint", `INSERT INTO live_checkpoints VALUES (1, 2, 's', 7, 'wss://r', ?)`, []any{now}, true},
		{"a shard past the count", `INSERT INTO live_checkpoints VALUES (2, 2, 's', 7, 'wss://r', ?)`, []any{now}, false},
		{"a negative sequence", `INSERT INTO live_checkpoints VALUES (0, 1, 's', -1, 'wss://r', ?)`, []any{now}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			inPG, inLite := accepts(t, pg, c.sql, c.args...), accepts(t, lite, c.sql, c.args...)
			if inPG != c.valid || inLite != c.valid {
				t.Errorf("postgres accepts %t, sqlite accepts %t, want %t", inPG, inLite, c.valid)
			}
		})
	}
}
