package deploy

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// service holds the deployment facts of one service, from the root README (Commands, Configuration).
// Everything the tests derive from them is checked against the service's sources too.
type service struct {
	Name string
	Port int // of the default HTTP_ADDR
	// SecretEnv are the variables that must come from the service's Secret, never from a
	// ConfigMap or a literal.
	SecretEnv []string
	// Autoscaled services take traffic: HPA, PDB, preStop pause, migrations in an initContainer.
	Autoscaled bool
	// Replicas is the fixed replica count of a service that is not autoscaled.
	Replicas int32
}

var services = []service{
	{Name: "forum-svc", Port: 8081, SecretEnv: []string{"DATABASE_URL", "REDIS_URL"}, Autoscaled: true},
	{Name: "stats-svc", Port: 8082, SecretEnv: []string{"DATABASE_URL", "REDIS_URL"}, Autoscaled: true},
	{Name: "collector-svc", Port: 8083, SecretEnv: []string{"DATABASE_URL", "REDIS_URL", "DISCORD_TOKEN"}, Replicas: 3},
}

// imageRepo is the image repository of svc, in compose and in the Kustomize bases.
func imageRepo(svc string) string { return "forumstats/" + svc }

// secretName is the Secret the Kubernetes manifests read svc's secret variables from.
func secretName(svc string) string { return svc + "-secrets" }

// repoRoot is the workspace root: the tests run in deploy/.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Fatalf("workspace root %s: %v", root, err)
	}
	return root
}

// goSource is what the non-test Go files of a directory tree say, as far as deployment cares:
// their string literals and whether they call config.LoadCommon.
type goSource struct {
	literals   map[string]bool
	loadCommon bool
}

func parseGoTree(dir string) (goSource, error) {
	src := goSource{literals: map[string]bool{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != dir && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind == token.STRING {
					if s, err := strconv.Unquote(n.Value); err == nil {
						src.literals[s] = true
					}
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "config" && n.Sel.Name == "LoadCommon" {
					src.loadCommon = true
				}
			}
			return true
		})
		return nil
	})
	return src, err
}

// commonEnv returns the string literals of shared/config's LoadCommon: the variables it reads.
func commonEnv(root string) (map[string]bool, error) {
	fset := token.NewFileSet()
	pkgDir := filepath.Join(root, "shared", "config")
	entries, err := os.ReadDir(pkgDir)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	found := false
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(pkgDir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Name.Name != "LoadCommon" {
				continue
			}
			found = true
			ast.Inspect(fn, func(n ast.Node) bool {
				if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil {
						out[s] = true
					}
				}
				return true
			})
		}
	}
	if !found {
		return nil, fmt.Errorf("no func LoadCommon in %s", pkgDir)
	}
	return out, nil
}

// serviceCode is what the deployment checks know of one service's code.
type serviceCode struct {
	all    goSource // the whole module
	cmd    goSource // cmd/<svc>: where the subcommands are
	common map[string]bool
}

// readsEnv reports whether the service reads the environment variable name: its own code
// holds the name as a string literal, or it calls config.LoadCommon, which reads it.
func (c serviceCode) readsEnv(name string) bool {
	if name == "" {
		return false
	}
	return c.all.literals[name] || (c.all.loadCommon && c.common[name])
}

// checkArgs checks a container command line against the service's code: the subcommand is a
// literal of cmd/<svc>, and every --flag names a literal of the module.
func (c serviceCode) checkArgs(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("no subcommand")
	}
	if !c.cmd.literals[args[0]] {
		return fmt.Errorf("subcommand %q is not in the command's source", args[0])
	}
	for _, a := range args[1:] {
		if name, ok := strings.CutPrefix(a, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			if !c.all.literals[name] {
				return fmt.Errorf("flag %q is not in the service's source", a)
			}
		}
	}
	return nil
}

var (
	codeOnce sync.Once
	codeMap  map[string]serviceCode
	codeErr  error
)

// code parses the services' sources once per test binary.
func code(t testing.TB) map[string]serviceCode {
	t.Helper()
	root := repoRoot(t)
	codeOnce.Do(func() {
		common, err := commonEnv(root)
		if err != nil {
			codeErr = err
			return
		}
		m := map[string]serviceCode{}
		for _, s := range services {
			all, err := parseGoTree(filepath.Join(root, s.Name))
			if err != nil {
				codeErr = err
				return
			}
			cmd, err := parseGoTree(filepath.Join(root, s.Name, "cmd", s.Name))
			if err != nil {
				codeErr = err
				return
			}
			m[s.Name] = serviceCode{all: all, cmd: cmd, common: common}
		}
		codeMap = m
	})
	if codeErr != nil {
		t.Fatalf("reading the services' sources: %v", codeErr)
	}
	return codeMap
}

// TestServiceFacts checks the facts above against the code, so that the other tests compare
// the deployment files with what the services really do.
func TestServiceFacts(t *testing.T) {
	for _, s := range services {
		t.Run(s.Name, func(t *testing.T) {
			c := code(t)[s.Name]
			if addr := fmt.Sprintf(":%d", s.Port); !c.all.literals[addr] {
				t.Errorf("the default listen address %q is not in the source", addr)
			}
			for _, name := range append([]string{"HTTP_ADDR", "MIGRATE_ON_START"}, s.SecretEnv...) {
				if !c.readsEnv(name) {
					t.Errorf("the service does not read %s", name)
				}
			}
			if err := c.checkArgs([]string{"serve"}); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestEnvCheckCanFail makes sure the env check is not vacuous.
func TestEnvCheckCanFail(t *testing.T) {
	c := code(t)["forum-svc"]
	for _, name := range []string{"HTTP_ADRR", "DISCORD_TOKEN", "CDN_BASE_URL", ""} {
		if c.readsEnv(name) {
			t.Errorf("forum-svc is said to read %q", name)
		}
	}
	if err := c.checkArgs([]string{"serv"}); err == nil {
		t.Error(`subcommand "serv" accepted`)
	}
	if err := c.checkArgs([]string{"seed", "--fiel", "x"}); err == nil {
		t.Error(`flag "--fiel" accepted`)
	}
}
