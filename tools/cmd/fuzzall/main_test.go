package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestFind(t *testing.T) {
	root := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/b/x_test.go", "package b\nfunc FuzzOne(f *testing.F) {}\nfunc FuzzTwo(ff *testing.F) {\n}\nfunc TestX(t *testing.T) {}\n")
	write("a/b/x.go", "package b\nfunc FuzzNotATest(f *testing.F) {}\n")
	write("c/testdata/y_test.go", "func FuzzHidden(f *testing.F) {}\n")
	write(".git/z_test.go", "func FuzzGit(f *testing.F) {}\n")
	write("d/z_test.go", "// func FuzzComment(f *testing.F)\nfunc FuzzHelper(x int) {}\n")
	got, err := find(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []target{{"a/b", "FuzzOne"}, {"a/b", "FuzzTwo"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
