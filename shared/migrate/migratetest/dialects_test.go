package migratetest_test

import (
	"sync"
	"testing"

	"gorm.io/gorm"

	"forumstats.local/shared/migrate/migratetest"
)

// Dialects runs its function once per dialect, each time over a database of that dialect (named
// by the subtest) with the set's tree of that dialect applied, and each database its own.
func TestDialects(t *testing.T) {
	var (
		mu   sync.Mutex
		seen = map[string]*gorm.DB{}
	)
	t.Run("run", func(t *testing.T) {
		migratetest.Dialects(t, fixture, func(t *testing.T, gdb *gorm.DB) {
			if got, want := gdb.Dialector.Name(), t.Name()[len("TestDialects/run/"):]; got != want {
				t.Errorf("subtest %s ran over a %s database", want, got)
			}
			// The parents' code CHECK is written per dialect: it holds only if the right tree ran.
			if err := gdb.Exec(`INSERT INTO parents (id, code) VALUES (1, 'abc')`).Error; err != nil {
				t.Fatal(err)
			}
			if err := gdb.Exec(`INSERT INTO parents (id, code) VALUES (2, 'ABC')`).Error; err == nil {
				t.Error("the code CHECK let an upper-case code in")
			}
			mu.Lock()
			seen[gdb.Dialector.Name()] = gdb
			mu.Unlock()
		})
	})
	if len(seen) != 2 || seen["postgres"] == nil || seen["sqlite"] == nil || seen["postgres"] == seen["sqlite"] {
		t.Fatalf("ran over %v, want one postgres and one sqlite database", seen)
	}
}
