package testutil

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// fatalRecorder is the part of testing.TB that Exec uses, recording the failure instead of
// ending the test.
type fatalRecorder struct{ failed string }

func (*fatalRecorder) Helper()                             {}
func (r *fatalRecorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

func TestExec(t *testing.T) {
	gdb := OpenDB(t, "sqlite:"+filepath.Join(t.TempDir(), "x.db"))
	Exec(t, gdb, "CREATE TABLE n (v int)", "INSERT INTO n VALUES (1), (2)")
	var sum int
	if err := gdb.Raw("SELECT sum(v) FROM n").Scan(&sum).Error; err != nil || sum != 3 {
		t.Fatalf("sum %d, %v: want both statements run", sum, err)
	}
	var r fatalRecorder
	Exec(&r, gdb, "INSERT INTO missing VALUES (1)")
	if !strings.Contains(r.failed, "INSERT INTO missing") {
		t.Fatalf("failure %q: want the failed statement named", r.failed)
	}
}
