package store

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"forumstats.local/forum-svc/migrations"
	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
	"forumstats.local/shared/testutil"
)

// TestSweepPlan: a sweep's batch reads the oldest expired rows in the order of
// idempotency_keys_created_at, with no scan of the table nor sort, on both databases (20,000
// expired rows, 1,000 current ones).
func TestSweepPlan(t *testing.T) {
	const now = 1_800_000_000
	for _, dialect := range []string{"postgres", "sqlite"} {
		t.Run(dialect, func(t *testing.T) {
			ctx := context.Background()
			u := "sqlite:" + t.TempDir() + "/forum.db"
			if dialect == "postgres" {
				u = testutil.NewDatabase(t, migrations.Set)
			}
			gdb, err := migrate.Open(ctx, u, nil, true, migrations.Set)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close(gdb) })
			testutil.Exec(t, gdb, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 21000)
INSERT INTO idempotency_keys (api_key_hash, user_id, idempotency_key, fingerprint, created_at, status, body)
SELECT 'owner', i % 100, 'k' || i, 'f', CASE WHEN i <= 20000 THEN 1700000000 + i ELSE 1800000000 END, 200, '{}' FROM n`,
				`ANALYZE idempotency_keys`)
			d := db.DialectOf(gdb)
			if dialect == "postgres" {
				var plan string
				if err := gdb.Raw(`EXPLAIN (FORMAT JSON) `+sweepSQL(d), expiredAt(now), RetrySweepBatch).Row().Scan(&plan); err != nil {
					t.Fatal(err)
				}
				var nodes []struct{ Plan planNode }
				if err := json.Unmarshal([]byte(plan), &nodes); err != nil || len(nodes) != 1 {
					t.Fatalf("EXPLAIN: %v\n%s", err, plan)
				}
				// The batch is the Limit's subtree; the delete joins it to the table on the primary
				// key, by a nested loop over idempotency_keys_pkey or, when the table is as small as
				// here, a hash join over the table.
				var batch []string
				nodes[0].Plan.walk(func(n planNode) {
					if n.NodeType == "Limit" {
						n.walk(func(n planNode) { batch = append(batch, strings.TrimSpace(n.NodeType+" "+n.IndexName)) })
					}
				})
				plan = strings.Join(batch, "; ")
				if !slices.Contains(batch, "Index Scan idempotency_keys_created_at") || strings.Contains(plan, "Sort") {
					t.Fatalf("the batch is not read in the order of idempotency_keys_created_at: %s", plan)
				}
			} else {
				rows, err := gdb.Raw(`EXPLAIN QUERY PLAN `+sweepSQL(d), expiredAt(now), RetrySweepBatch).Rows()
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				var lines []string
				for rows.Next() {
					var id, parent, unused int
					var detail string
					if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
						t.Fatal(err)
					}
					lines = append(lines, detail)
				}
				plan := strings.Join(lines, "; ")
				if !strings.Contains(plan, "USING INDEX idempotency_keys_created_at") || strings.Contains(plan, "SCAN idempotency_keys") ||
					strings.Contains(plan, "TEMP B-TREE") {
					t.Fatalf("the batch is not read in the order of idempotency_keys_created_at: %s", plan)
				}
			}
		})
	}
}

// planNode is the part of PostgreSQL's JSON plan the test reads.
type planNode struct {
	NodeType     string     `json:"Node Type"`
	RelationName string     `json:"Relation Name"`
	IndexName    string     `json:"Index Name"`
	Plans        []planNode `json:"Plans"`
}

func (n planNode) walk(f func(planNode)) {
	f(n)
	for _, c := range n.Plans {
		c.walk(f)
	}
}
