package migrate

import (
	"testing"
	"testing/fstest"
)

func TestLoadOrdersAndRejectsBadNames(t *testing.T) {
	good := fstest.MapFS{
		"sqlite/0002_b.sql": {Data: []byte("B")},
		"sqlite/0001_a.sql": {Data: []byte("A")},
		"sqlite/README":     {Data: []byte("ignored")},
	}
	ms, err := load(good, "sqlite")
	if err != nil || len(ms) != 2 || ms[0].version != 1 || ms[1].version != 2 {
		t.Fatalf("load: %+v %v", ms, err)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"no version": {"sqlite/init.sql": {Data: []byte("x")}},
		"duplicate":  {"sqlite/0001_a.sql": {Data: []byte("x")}, "sqlite/0001_b.sql": {Data: []byte("y")}},
		"empty":      {"postgres/0001_a.sql": {Data: []byte("x")}},
	} {
		if _, err := load(fsys, "sqlite"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
