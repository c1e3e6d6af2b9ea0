// Command fuzzall finds every FuzzXxx target in the workspace's _test.go files and runs each
// for a short time (`go test -run=^$ -fuzz=^FuzzXxx$ -fuzztime=T ./pkg`), one after the other,
// so that `make fuzz` covers targets added later without editing the Makefile. It exits 1 when
// any target fails (the failing input is then in the package's testdata/fuzz).
//
//	go run ./tools/cmd/fuzzall -fuzztime 5s [-list] [-match REGEXP]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

var fuzzFunc = regexp.MustCompile(`^func (Fuzz[A-Za-z0-9_]*)\(\w+ \*testing\.F\)`)

// target is one fuzz function and the directory of its package.
type target struct{ dir, name string }

func main() {
	fuzztime := flag.Duration("fuzztime", 5*time.Second, "how long to fuzz each target")
	list := flag.Bool("list", false, "list the targets and exit")
	match := flag.String("match", "", "only targets whose dir/name matches this regexp")
	root := flag.String("root", ".", "workspace root")
	flag.Parse()
	var re *regexp.Regexp
	if *match != "" {
		var err error
		if re, err = regexp.Compile(*match); err != nil {
			fmt.Fprintln(os.Stderr, "fuzzall: -match:", err)
			os.Exit(2)
		}
	}
	targets, err := find(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fuzzall:", err)
		os.Exit(2)
	}
	var failed []string
	for _, t := range targets {
		id := t.dir + " " + t.name
		if re != nil && !re.MatchString(t.dir+"/"+t.name) {
			continue
		}
		if *list {
			fmt.Println(id)
			continue
		}
		fmt.Printf("=== fuzz %s for %s\n", id, *fuzztime)
		cmd := exec.Command("go", "test", "-run=^$", "-fuzz=^"+t.name+"$", "-fuzztime="+fuzztime.String(), "./"+t.dir)
		cmd.Dir = *root
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			failed = append(failed, id)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(os.Stderr, "fuzzall: %d target(s) failed:\n  %s\n", len(failed), strings.Join(failed, "\n  "))
		os.Exit(1)
	}
}

// find walks root for _test.go files declaring fuzz targets (vendor, testdata and hidden
// directories skipped).
func find(root string) ([]target, error) {
	var out []target
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "vendor" || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if m := fuzzFunc.FindStringSubmatch(sc.Text()); m != nil {
				dir, _ := filepath.Rel(root, filepath.Dir(path))
				out = append(out, target{dir: filepath.ToSlash(dir), name: m[1]})
			}
		}
		return sc.Err()
	})
	sort.Slice(out, func(i, j int) bool {
		if out[i].dir != out[j].dir {
			return out[i].dir < out[j].dir
		}
		return out[i].name < out[j].name
	})
	return out, err
}
