package deploy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

type instruction struct {
	Cmd  string // upper case
	Args string
}

type stage struct {
	Name, From string
	Instr      []instruction
}

type dockerfile struct {
	Args   map[string]string // global ARG defaults
	Stages []stage
}

// parseDockerfile reads the instructions of a Dockerfile: comments dropped, continuation
// lines joined, grouped by stage.
func parseDockerfile(p string) (dockerfile, error) {
	f, err := os.Open(p)
	if err != nil {
		return dockerfile{}, err
	}
	defer f.Close()
	df := dockerfile{Args: map[string]string{}}
	var lines []string
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue
		}
		if cont, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(line)
		lines = append(lines, cur.String())
		cur.Reset()
	}
	if err := sc.Err(); err != nil {
		return dockerfile{}, err
	}
	for _, l := range lines {
		cmd, args, _ := strings.Cut(l, " ")
		in := instruction{Cmd: strings.ToUpper(cmd), Args: strings.TrimSpace(args)}
		switch {
		case in.Cmd == "FROM":
			fields := strings.Fields(in.Args)
			var st stage
			for i := 0; i < len(fields); i++ {
				switch {
				case strings.HasPrefix(fields[i], "--"):
				case strings.EqualFold(fields[i], "AS") && i+1 < len(fields):
					st.Name = fields[i+1]
					i++
				default:
					st.From = fields[i]
				}
			}
			df.Stages = append(df.Stages, st)
		case len(df.Stages) == 0:
			if in.Cmd != "ARG" {
				return dockerfile{}, fmt.Errorf("%s before the first FROM", in.Cmd)
			}
			name, def, _ := strings.Cut(in.Args, "=")
			df.Args[name] = def
		default:
			last := &df.Stages[len(df.Stages)-1]
			last.Instr = append(last.Instr, in)
		}
	}
	return df, nil
}

func (d dockerfile) stage(name string) (stage, bool) {
	for _, s := range d.Stages {
		if s.Name == name {
			return s, true
		}
	}
	return stage{}, false
}

// chain returns the stage and the stages it is built FROM, nearest first.
func (d dockerfile) chain(name string) []stage {
	var out []stage
	for {
		s, ok := d.stage(name)
		if !ok || slices.ContainsFunc(out, func(o stage) bool { return o.Name == s.Name }) {
			return out
		}
		out = append(out, s)
		name = s.From
	}
}

// base resolves the image a stage chain finally starts from, with the global ARG defaults.
func (d dockerfile) base(name string) string {
	ch := d.chain(name)
	if len(ch) == 0 {
		return ""
	}
	from := ch[len(ch)-1].From
	for k, v := range d.Args {
		from = strings.ReplaceAll(from, "${"+k+"}", v)
	}
	return from
}

var envPair = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S*)`)

// env returns the ENV settings in force in a stage, inherited ones included.
func (d dockerfile) env(name string) map[string]string {
	out := map[string]string{}
	ch := d.chain(name)
	for i := len(ch) - 1; i >= 0; i-- {
		for _, in := range ch[i].Instr {
			if in.Cmd == "ENV" {
				for _, m := range envPair.FindAllStringSubmatch(in.Args, -1) {
					out[m[1]] = strings.Trim(m[2], `"`)
				}
			}
		}
	}
	return out
}

// runs returns the RUN commands of a stage chain.
func (d dockerfile) runs(name string) []string {
	var out []string
	for _, s := range d.chain(name) {
		for _, in := range s.Instr {
			if in.Cmd == "RUN" {
				out = append(out, in.Args)
			}
		}
	}
	return out
}

func loadDockerfile(t testing.TB) dockerfile {
	t.Helper()
	df, err := parseDockerfile(filepath.Join(repoRoot(t), "deploy", "Dockerfile"))
	if err != nil {
		t.Fatalf("deploy/Dockerfile: %v", err)
	}
	return df
}

// workspaceModules lists the directories of go.work's use directives.
func workspaceModules(t testing.TB) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "go.work"))
	if err != nil {
		t.Fatal(err)
	}
	var mods []string
	inUse := false
	for _, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "//")
		line = strings.TrimSpace(line)
		switch {
		case line == "use (":
			inUse = true
		case inUse && line == ")":
			inUse = false
		case inUse && line != "":
			mods = append(mods, path.Clean(line))
		case strings.HasPrefix(line, "use "):
			mods = append(mods, path.Clean(strings.TrimSpace(strings.TrimPrefix(line, "use "))))
		}
	}
	if len(mods) == 0 {
		t.Fatal("go.work uses no module")
	}
	return mods
}

// goBuild finds the `go build` that writes out, the binary of pkg, in a stage chain: one with
// -o out, or one with -o into out's directory that builds pkg (named, as go build names it, after
// its last element).
func goBuild(d dockerfile, stageName, out, pkg string) (string, bool) {
	for _, r := range d.runs(stageName) {
		if !strings.Contains(r, "go build") {
			continue
		}
		if strings.Contains(r, "-o "+out+" ") ||
			(strings.Contains(r, "-o "+path.Dir(out)+"/ ") && strings.Contains(r+" ", " ./"+pkg+" ") && path.Base(pkg) == path.Base(out)) {
			return r, true
		}
	}
	return "", false
}

func checkGoBuild(t *testing.T, d dockerfile, stageName, out, pkg string) {
	t.Helper()
	run, ok := goBuild(d, stageName, out, pkg)
	if !ok {
		t.Errorf("stage %s: no `go build -o %s`", stageName, out)
		return
	}
	env := d.env(stageName)
	for _, want := range []string{`-ldflags="-s -w"`, "-tags timetzdata", " ./" + pkg} {
		if !strings.Contains(run+" ", want) {
			t.Errorf("stage %s: %q lacks %s", stageName, run, want)
		}
	}
	if !strings.Contains(run, "-trimpath") && !strings.Contains(env["GOFLAGS"], "-trimpath") {
		t.Errorf("stage %s: build without -trimpath", stageName)
	}
	if env["CGO_ENABLED"] != "0" {
		t.Errorf("stage %s: CGO_ENABLED=%q; want 0 (a static binary)", stageName, env["CGO_ENABLED"])
	}
	// The package is a real main package of the workspace.
	dir := filepath.Join(repoRoot(t), filepath.FromSlash(pkg))
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Errorf("stage %s builds ./%s: %v", stageName, pkg, err)
		return
	}
	isMain := false
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.PackageClauseOnly)
			if err == nil && f.Name.Name == "main" {
				isMain = true
			}
		}
	}
	if !isMain {
		t.Errorf("stage %s builds ./%s, which is not a main package", stageName, pkg)
	}
}

func TestDockerfileServices(t *testing.T) {
	d := loadDockerfile(t)
	for _, svc := range services {
		t.Run(svc.Name, func(t *testing.T) {
			st, ok := d.stage(svc.Name)
			if !ok {
				t.Fatalf("no stage %s", svc.Name)
			}
			if base := d.base(svc.Name); base != "scratch" && !strings.HasPrefix(base, "gcr.io/distroless/static") {
				t.Errorf("runs on %q; want distroless/static or scratch", base)
			}
			var user, entrypoint, cmd, expose string
			var copies []string
			// The stage and the runtime stages it is built FROM, the farthest first, as the image
			// inherits them.
			chain := d.chain(st.Name)
			var instr []instruction
			for i := len(chain) - 1; i >= 0; i-- {
				instr = append(instr, chain[i].Instr...)
			}
			for _, in := range instr {
				switch in.Cmd {
				case "USER":
					user = in.Args
				case "ENTRYPOINT":
					entrypoint = in.Args
				case "CMD":
					cmd = in.Args
				case "EXPOSE":
					expose = in.Args
				case "COPY":
					copies = append(copies, in.Args)
				case "RUN":
					t.Errorf("RUN in the runtime stage: %s", in.Args)
				}
			}
			uid, _, _ := strings.Cut(user, ":")
			if n, err := strconv.Atoi(uid); err != nil || n == 0 {
				t.Errorf("USER %q; want a numeric non-root uid", user)
			}
			bin := "/usr/local/bin/" + svc.Name
			var ep, args []string
			if json.Unmarshal([]byte(entrypoint), &ep) != nil || !slices.Equal(ep, []string{bin}) {
				t.Errorf("ENTRYPOINT %s; want [%q]", entrypoint, bin)
			}
			if json.Unmarshal([]byte(cmd), &args) != nil {
				t.Errorf("CMD %s is not an exec-form list", cmd)
			} else if err := code(t)[svc.Name].checkArgs(args); err != nil {
				t.Errorf("CMD %s: %v", cmd, err)
			}
			if expose != strconv.Itoa(svc.Port) {
				t.Errorf("EXPOSE %q; want %d", expose, svc.Port)
			}
			buildStage := "build"
			wantCopy := fmt.Sprintf("--from=%s /out/%s /out/healthcheck /usr/local/bin/", buildStage, svc.Name)
			if !slices.Contains(copies, wantCopy) {
				t.Errorf("COPY %q missing (have %q)", wantCopy, copies)
			}
			checkGoBuild(t, d, buildStage, "/out/"+svc.Name, svc.Name+"/cmd/"+svc.Name)
			checkGoBuild(t, d, buildStage, "/out/healthcheck", "deploy/cmd/healthcheck")
		})
	}
}

// TestDockerfileLayers checks the layer order: go.work and every module's go.mod/go.sum, then
// `go mod download`, then the sources.
func TestDockerfileLayers(t *testing.T) {
	d := loadDockerfile(t)
	root := repoRoot(t)
	need := []string{"go.work", "go.work.sum"}
	for _, m := range workspaceModules(t) {
		need = append(need, m+"/go.mod")
		if _, err := os.Stat(filepath.Join(root, m, "go.sum")); err == nil {
			need = append(need, m+"/go.sum")
		}
	}
	for _, s := range d.Stages {
		var copied []string
		download, sources := -1, -1
		for i, in := range s.Instr {
			switch {
			case in.Cmd == "COPY" && !strings.HasPrefix(in.Args, "--from"):
				fields := strings.Fields(in.Args)
				if slices.Equal(fields, []string{".", "."}) && sources < 0 {
					sources = i
				}
				copied = append(copied, fields[:len(fields)-1]...)
			case in.Cmd == "RUN" && strings.Contains(in.Args, "go mod download") && download < 0:
				download = i
				for _, n := range need {
					if !slices.ContainsFunc(copied, func(pattern string) bool { ok, _ := path.Match(pattern, n); return ok }) {
						t.Errorf("stage %s: %s is not copied before `go mod download`", s.Name, n)
					}
				}
			}
		}
		if download >= 0 && sources >= 0 && sources < download {
			t.Errorf("stage %s: sources copied before `go mod download`", s.Name)
		}
	}
	if !slices.ContainsFunc(d.runs("build"), func(r string) bool { return strings.Contains(r, "go mod download") }) {
		t.Error("no `go mod download` layer under the build stage")
	}
}

// stateFile reports files that are local state, never sources.
func stateFile(p string) bool {
	for _, suffix := range []string{".db", ".db-shm", ".db-wal", ".test", ".out"} {
		if strings.HasSuffix(p, suffix) {
			return true
		}
	}
	return false
}

func TestDockerignore(t *testing.T) {
	root := repoRoot(t)
	f, err := os.Open(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatal(err)
	}
	excluded := func(p string) bool {
		ex, err := pm.MatchesOrParentMatches(p)
		if err != nil {
			t.Fatal(err)
		}
		return ex
	}

	// Everything a build reads: the workspace files, every go.mod and go.sum, and every file of
	// the modules the images compile (sources, embedded migrations, OpenAPI documents).
	keep := []string{"go.work", "go.work.sum"}
	for _, m := range workspaceModules(t) {
		keep = append(keep, m+"/go.mod", m+"/go.sum")
	}
	for _, dir := range []string{"shared", "forum-svc", "stats-svc", "collector-svc", "deploy/cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			if rel = filepath.ToSlash(rel); !stateFile(rel) {
				keep = append(keep, rel)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range keep {
		if excluded(p) {
			t.Errorf("%s is excluded from the build context", p)
		}
	}
	for _, p := range []string{
		".git/config", ".env", "forum-svc/.env", "docker-compose.yml", "deploy/k8s/base/forum-svc/deployment.yaml",
		"deploy/README.md", "deploy/compose/catalog.json", "forum-svc/data/forum.db", "data/stats.db-wal",
		"collector-svc/collector.test", "bin/forum-svc", "tmp/x",
	} {
		if !excluded(p) {
			t.Errorf("%s is in the build context", p)
		}
	}
}
