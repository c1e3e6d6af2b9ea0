package store_test

import (
	"strings"
	"testing"

	"forumstats.local/forum-svc/internal/store"
	"forumstats.local/shared/db"
	"forumstats.local/shared/testutil"
)

// TestSweepPlan: a sweep's batch reads the oldest expired rows in the order of
// idempotency_keys_created_at, with no scan of the table nor sort, on both databases (20,000
// expired rows, 1,000 current ones).
func TestSweepPlan(t *testing.T) {
	const now = 1_800_000_000
	for _, dialect := range []string{"postgres", "sqlite"} {
		t.Run(dialect, func(t *testing.T) {
			_, gdb := retryStore(t, dialect, now)
			testutil.Exec(t, gdb, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 21000)
INSERT INTO idempotency_keys (api_key_hash, user_id, idempotency_key, fingerprint, created_at, status, body)
SELECT 'owner', i % 100, 'k' || i, 'f', CASE WHEN i <= 20000 THEN 1700000000 + i ELSE 1800000000 END, 200, '{}' FROM n`,
				`ANALYZE idempotency_keys`)
			var (
				line    string
				explain = "EXPLAIN (COSTS OFF) "
				dest    = []any{&line}
			)
			if dialect == "sqlite" {
				var id, parent, unused int
				explain, dest = "EXPLAIN QUERY PLAN ", []any{&id, &parent, &unused, &line}
			}
			rows, err := gdb.Raw(explain+store.SweepSQL(db.DialectOf(gdb)), store.ExpiredAt(now), store.RetrySweepBatch).Rows()
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var lines []string
			for rows.Next() {
				if err := rows.Scan(dest...); err != nil {
					t.Fatal(err)
				}
				lines = append(lines, line)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			batch := strings.Join(lines, "\n")
			if dialect == "postgres" {
				// The batch is what runs below Limit; the delete then joins it to the table on the
				// primary key (a nested loop over idempotency_keys_pkey, or a hash join over the
				// table while it is as small as here).
				batch = ""
				for i, l := range lines {
					if strings.Contains(l, "->  Limit") {
						indent := len(l) - len(strings.TrimLeft(l, " "))
						for _, below := range lines[i+1:] {
							if len(below)-len(strings.TrimLeft(below, " ")) <= indent {
								break
							}
							batch += below + "\n"
						}
					}
				}
			}
			if !strings.Contains(batch, "idempotency_keys_created_at") ||
				strings.Contains(batch, "Seq Scan") || strings.Contains(batch, "Sort") || // PostgreSQL
				strings.Contains(batch, "SCAN idempotency_keys") || strings.Contains(batch, "TEMP B-TREE") { // SQLite
				t.Fatalf("the batch is not read in the order of idempotency_keys_created_at:\n%s", strings.Join(lines, "\n"))
			}
		})
	}
}
