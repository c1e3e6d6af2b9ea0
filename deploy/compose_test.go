package deploy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
)

// The subset of the Compose specification docker-compose.yml uses. Decoding is strict: a key
// outside it (a misspelling, or a new key these checks must learn about) fails.
type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]*struct{}      `yaml:"volumes"`
}

type composeService struct {
	Image       string                       `yaml:"image"`
	Build       *composeBuild                `yaml:"build"`
	Profiles    []string                     `yaml:"profiles"`
	Command     []string                     `yaml:"command"`
	Environment map[string]string            `yaml:"environment"`
	Volumes     []string                     `yaml:"volumes"`
	Ports       []composePort                `yaml:"ports"`
	Healthcheck *composeHealthcheck          `yaml:"healthcheck"`
	ReadOnly    bool                         `yaml:"read_only"`
	SecurityOpt []string                     `yaml:"security_opt"`
	CapDrop     []string                     `yaml:"cap_drop"`
	DependsOn   map[string]composeDependency `yaml:"depends_on"`
	Restart     string                       `yaml:"restart"`
}

type composeBuild struct {
	Context    string `yaml:"context"`
	Dockerfile string `yaml:"dockerfile"`
	Target     string `yaml:"target"`
}

type composePort struct {
	Target    int    `yaml:"target"`
	Published string `yaml:"published"`
	HostIP    string `yaml:"host_ip"`
}

type composeHealthcheck struct {
	Test          []string `yaml:"test"`
	Interval      string   `yaml:"interval"`
	Timeout       string   `yaml:"timeout"`
	Retries       int      `yaml:"retries"`
	StartPeriod   string   `yaml:"start_period"`
	StartInterval string   `yaml:"start_interval"`
}

type composeDependency struct {
	Condition string `yaml:"condition"`
	Required  *bool  `yaml:"required"`
}

// service returns the service name of the file, failing the test where there is none.
func (f composeFile) service(t testing.TB, name string) composeService {
	t.Helper()
	s, ok := f.Services[name]
	if !ok {
		t.Fatalf("no service %s", name)
	}
	return s
}

func loadCompose(t testing.TB) composeFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f composeFile
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	return f
}

var interpolation = regexp.MustCompile(`\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?-)([^}$]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)|\$\{[^}]*\}?`)

// interpolate evaluates Compose's ${VAR}, ${VAR:-default}, ${VAR-default} and $VAR against env
// (nil: nothing set); any other form is an error, so the checks never guess.
func interpolate(s string, env map[string]string) (string, error) {
	var err error
	out := interpolation.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		sm := interpolation.FindStringSubmatch(m)
		name, op, def, bare := sm[1], sm[2], sm[3], sm[4]
		if bare != "" {
			return env[bare]
		}
		if name == "" {
			err = fmt.Errorf("%q: unsupported interpolation %q", s, m)
			return m
		}
		v, set := env[name]
		switch {
		case op == ":-" && v == "", op == "-" && !set:
			return def
		}
		return v
	})
	return out, err
}

func mustInterpolate(t testing.TB, s string) string {
	t.Helper()
	v, err := interpolate(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestInterpolate(t *testing.T) {
	env := map[string]string{"SET": "x", "EMPTY": ""}
	for _, tt := range []struct{ in, want string }{
		{"a${SET}b", "axb"},
		{"${UNSET:-d}", "d"},
		{"${EMPTY:-d}", "d"},
		{"${EMPTY-d}", ""},
		{"${UNSET-d}", "d"},
		{"${SET:-d}", "x"},
		{"$SET/$UNSET", "x/"},
		{"$$SET", "$SET"},
		{"${UNSET:-./a/b.json}:/etc/c.json:ro", "./a/b.json:/etc/c.json:ro"},
	} {
		if got, err := interpolate(tt.in, env); err != nil || got != tt.want {
			t.Errorf("interpolate(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"${X:?required}", "${X:-${Y}}", "${X"} {
		if got, err := interpolate(bad, env); err == nil {
			t.Errorf("interpolate(%q) = %q, want an error", bad, got)
		}
	}
}

// env returns a service's environment with the defaults of an empty shell environment.
func (s composeService) env(t testing.TB) map[string]string {
	out := map[string]string{}
	for k, v := range s.Environment {
		out[k] = mustInterpolate(t, v)
	}
	return out
}

// mount is a short-syntax volume: host path or named volume, container path.
type mount struct{ Source, Target string }

func (s composeService) mounts(t testing.TB) []mount {
	var out []mount
	for _, v := range s.Volumes {
		parts := strings.Split(mustInterpolate(t, v), ":")
		if len(parts) < 2 || len(parts) > 3 || (len(parts) == 3 && parts[2] != "ro" && parts[2] != "rw") {
			t.Fatalf("volume %q: not SOURCE:TARGET[:ro]", v)
		}
		out = append(out, mount{parts[0], parts[1]})
	}
	return out
}

// serviceOfImage maps a compose image to the service whose image it is.
func serviceOfImage(t testing.TB, image string) (service, bool) {
	repo, _ := parseImage(mustInterpolate(t, image))
	for _, s := range services {
		if repo == imageRepo(s.Name) {
			return s, true
		}
	}
	return service{}, false
}

const healthcheckBin = "/usr/local/bin/healthcheck"

func checkComposeHardening(t *testing.T, name string, s composeService) {
	t.Helper()
	if !s.ReadOnly || !slices.Contains(s.SecurityOpt, "no-new-privileges:true") || !slices.Equal(s.CapDrop, []string{"ALL"}) {
		t.Errorf("%s: want read_only, no-new-privileges and cap_drop ALL", name)
	}
}

func TestComposeServices(t *testing.T) {
	f := loadCompose(t)
	df := loadDockerfile(t)
	devTag := devImageTag(t)
	for _, svc := range services {
		t.Run(svc.Name, func(t *testing.T) {
			c := code(t)[svc.Name]
			s := f.service(t, svc.Name)
			repo, tag := parseImage(mustInterpolate(t, s.Image))
			if repo != imageRepo(svc.Name) || tag != devTag {
				t.Errorf("image %q; want %s:%s, the image the dev overlay runs", s.Image, imageRepo(svc.Name), devTag)
			}
			if s.Build == nil || s.Build.Context != "." || s.Build.Dockerfile != "deploy/Dockerfile" || s.Build.Target != svc.Name {
				t.Errorf("build %+v; want context ., dockerfile deploy/Dockerfile, target %s", s.Build, svc.Name)
			} else if _, ok := df.stage(svc.Name); !ok {
				t.Errorf("deploy/Dockerfile has no stage %s", svc.Name)
			}
			if err := c.checkArgs(s.Command); err != nil || s.Command[0] != "serve" {
				t.Errorf("command %q: want serve (%v)", s.Command, err)
			}
			env := s.env(t)
			for name := range env {
				if !c.readsEnv(name) {
					t.Errorf("environment: %s is not read by %s", name, svc.Name)
				}
			}
			if env["HTTP_ADDR"] != fmt.Sprintf(":%d", svc.Port) {
				t.Errorf("HTTP_ADDR = %q; want :%d", env["HTTP_ADDR"], svc.Port)
			}
			if len(s.Ports) != 1 || s.Ports[0].Target != svc.Port || s.Ports[0].HostIP != "127.0.0.1" {
				t.Errorf("ports %+v; want target %d published on 127.0.0.1 only", s.Ports, svc.Port)
			} else if p, err := strconv.Atoi(mustInterpolate(t, s.Ports[0].Published)); err != nil || p != svc.Port {
				t.Errorf("published port %q; want %d by default", s.Ports[0].Published, svc.Port)
			}
			want := []string{"CMD", healthcheckBin, fmt.Sprintf("http://127.0.0.1:%d/readyz", svc.Port)}
			if s.Healthcheck == nil || !slices.Equal(s.Healthcheck.Test, want) {
				t.Errorf("healthcheck %+v; want test %q", s.Healthcheck, want)
			}
			checkComposeHardening(t, svc.Name, s)
			if s.Restart != "unless-stopped" && s.Restart != "always" {
				t.Errorf("restart %q; a server restarts", s.Restart)
			}

			// Dependencies: healthy stores, migrations completed before serving.
			for _, name := range []string{"DATABASE_URL", "REDIS_URL"} {
				u, err := url.Parse(env[name])
				if err != nil || u.Hostname() == "" {
					t.Errorf("%s %q: no host", name, env[name])
					continue
				}
				if dep := s.DependsOn[u.Hostname()]; dep.Condition != "service_healthy" {
					t.Errorf("%s host %s: depends_on condition %q; want service_healthy", name, u.Hostname(), dep.Condition)
				}
				if store, ok := f.Services[u.Hostname()]; !ok || store.Healthcheck == nil {
					t.Errorf("%s host %s: no such service with a healthcheck", name, u.Hostname())
				}
			}
			if env["MIGRATE_ON_START"] != "false" {
				t.Errorf("MIGRATE_ON_START = %q; want false (a one-shot service migrates first)", env["MIGRATE_ON_START"])
			}
			migrated := false
			for _, name := range completedBefore(f, svc.Name) {
				pre := f.Services[name]
				if slices.Equal(pre.Command, []string{"migrate"}) && pre.env(t)["DATABASE_URL"] == env["DATABASE_URL"] {
					migrated = true
				}
			}
			if !migrated {
				t.Error("no `migrate` of the same DATABASE_URL completes before it starts")
			}
		})
	}
}

// TestComposeOneShots checks the migration and seed jobs: they run a real subcommand, and a
// server waits for them with service_completed_successfully, which also lets
// `docker compose up --wait` accept that they exited.
func TestComposeOneShots(t *testing.T) {
	f := loadCompose(t)
	n := 0
	for name, s := range f.Services {
		if s.Restart != "no" {
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			svc, ok := serviceOfImage(t, s.Image)
			if !ok {
				t.Fatalf("image %q is none of the services'", s.Image)
			}
			c := code(t)[svc.Name]
			if err := c.checkArgs(s.Command); err != nil {
				t.Errorf("command %q: %v", s.Command, err)
			}
			for env := range s.env(t) {
				if !c.readsEnv(env) {
					t.Errorf("environment: %s is not read by %s", env, svc.Name)
				}
			}
			if s.Build == nil || s.Build.Target != svc.Name {
				t.Errorf("build %+v; want target %s like the server's (same image)", s.Build, svc.Name)
			}
			checkComposeHardening(t, name, s)
			if !waitedByServer(f, name, map[string]bool{}) {
				t.Error("no server waits for it with service_completed_successfully (directly or through another one-shot)")
			}
			for other, o := range f.Services {
				if dep, ok := o.DependsOn[name]; ok && dep.Condition != "service_completed_successfully" {
					t.Errorf("%s depends on it with %q", other, dep.Condition)
				}
			}
			// Files it reads exist in the repository.
			for i, a := range s.Command {
				if a != "--file" || i+1 >= len(s.Command) {
					continue
				}
				m := slices.IndexFunc(s.mounts(t), func(m mount) bool { return m.Target == s.Command[i+1] })
				if m < 0 {
					t.Errorf("--file %s is not mounted", s.Command[i+1])
					continue
				}
				src := s.mounts(t)[m].Source
				data, err := os.ReadFile(filepath.Join(repoRoot(t), src))
				if err != nil {
					t.Errorf("--file %s: %v", s.Command[i+1], err)
				} else if !json.Valid(data) {
					t.Errorf("--file %s: %s is not JSON", s.Command[i+1], src)
				}
			}
		})
	}
	if n < 3 {
		t.Errorf("%d one-shot services; want forum migrate, forum seed and reports migrate", n)
	}
	seed, ok := f.Services["forum-seed"]
	if !ok || len(seed.Command) < 3 || seed.Command[0] != "seed" {
		t.Fatal("no forum-seed service running `seed --file F`")
	}
	if src := seed.mounts(t)[0].Source; path.Clean(src) != "forum-svc/demo/seed.json" {
		t.Errorf("forum-seed loads %s; want the demo file forum-svc/demo/seed.json", src)
	}
}

func TestComposeStores(t *testing.T) {
	f := loadCompose(t)
	pg := f.service(t, "postgres")
	databases := map[string]bool{pg.env(t)["POSTGRES_DB"]: true}
	persisted := false
	for _, m := range pg.mounts(t) {
		if strings.HasPrefix(m.Target, "/docker-entrypoint-initdb.d/") {
			data, err := os.ReadFile(filepath.Join(repoRoot(t), m.Source))
			if err != nil {
				t.Fatal(err)
			}
			for _, sm := range createDatabase.FindAllStringSubmatch(string(data), -1) {
				databases[sm[1]] = true
			}
		}
		if _, named := f.Volumes[m.Source]; named && m.Target == "/var/lib/postgresql/data" {
			persisted = true
		}
	}
	if !persisted {
		t.Error("postgres data is not on a named volume")
	}
	for _, store := range []string{"postgres", "redis"} {
		s := f.Services[store]
		if s.Healthcheck == nil || len(s.Healthcheck.Test) == 0 {
			t.Errorf("%s: no healthcheck", store)
		}
		if len(s.Ports) > 0 {
			t.Errorf("%s publishes a port: clashes with a local one, and exposes dev credentials", store)
		}
	}
	urls := map[string]map[string]string{}
	for _, svc := range services {
		env := f.Services[svc.Name].env(t)
		urls[svc.Name] = env
		u, err := url.Parse(env["DATABASE_URL"])
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			t.Errorf("%s: DATABASE_URL %q is not PostgreSQL", svc.Name, env["DATABASE_URL"])
			continue
		}
		if db := strings.TrimPrefix(u.Path, "/"); !databases[db] {
			t.Errorf("%s: database %q is never created (have %v)", svc.Name, db, databases)
		}
	}
	for _, name := range []string{"DATABASE_URL", "REDIS_URL"} {
		if a, b := urls["stats-svc"][name], urls["collector-svc"][name]; a != b {
			t.Errorf("%s: stats-svc has %q, collector-svc %q; they must share it", name, a, b)
		}
	}
	if a, b := urls["forum-svc"]["DATABASE_URL"], urls["stats-svc"]["DATABASE_URL"]; a == b {
		t.Errorf("forum-svc and stats-svc share the database %q", a)
	}
}

// TestComposeFakeDiscord checks the fake Discord API of a token-less `make up`.
func TestComposeFakeDiscord(t *testing.T) {
	f := loadCompose(t)
	fake := f.service(t, "fake-discord")
	if !slices.Equal(fake.Profiles, []string{"fake-discord"}) {
		t.Errorf("profiles %q; want [fake-discord]: it runs only when DISCORD_TOKEN is empty", fake.Profiles)
	}
	if svc, ok := serviceOfImage(t, fake.Image); !ok || svc.Name != "collector-svc" || fake.Build == nil || fake.Build.Target != "collector-svc" {
		t.Errorf("image %q / build %+v; want collector-svc's", fake.Image, fake.Build)
	}
	collector := code(t)["collector-svc"]
	if err := collector.checkArgs(fake.Command); err != nil || fake.Command[0] != "fake-discord" {
		t.Fatalf("command %q: %v", fake.Command, err)
	}
	i := slices.Index(fake.Command, "--addr")
	if i < 0 || i+1 >= len(fake.Command) || !strings.HasPrefix(fake.Command[i+1], ":") {
		t.Fatalf("command %q: want --addr :PORT", fake.Command)
	}
	port := strings.TrimPrefix(fake.Command[i+1], ":")
	checkComposeHardening(t, "fake-discord", fake)

	col := f.Services["collector-svc"]
	env := col.env(t)
	u, err := url.Parse(env["DISCORD_API_BASE"])
	if err != nil || u.Hostname() != "fake-discord" || u.Port() != port {
		t.Errorf("collector DISCORD_API_BASE defaults to %q; want the fake at fake-discord:%s", env["DISCORD_API_BASE"], port)
	}
	if dep, ok := col.DependsOn["fake-discord"]; !ok || dep.Required == nil || *dep.Required || dep.Condition != "service_healthy" {
		t.Errorf("collector depends_on fake-discord %+v; want service_healthy, required: false", dep)
	}
	if env["DISCORD_TOKEN"] != "" {
		t.Errorf("DISCORD_TOKEN defaults to %q; want empty", env["DISCORD_TOKEN"])
	}

	// The catalog file is mounted where CATALOG_FILE says, and is the fake's catalog.
	var catalogSrc string
	for _, m := range col.mounts(t) {
		if m.Target == env["CATALOG_FILE"] {
			catalogSrc = m.Source
		}
	}
	if catalogSrc == "" {
		t.Fatalf("CATALOG_FILE %q is not mounted", env["CATALOG_FILE"])
	}
	if path.Clean(catalogSrc) != "deploy/compose/catalog.json" {
		t.Errorf("the default catalog is %s; want deploy/compose/catalog.json", catalogSrc)
	}
	catalog := loadCatalog(t)

	// Its healthcheck asks for a guild of that catalog on the fake's port.
	if fake.Healthcheck == nil || len(fake.Healthcheck.Test) != 3 || fake.Healthcheck.Test[1] != healthcheckBin {
		t.Fatalf("healthcheck %+v; want [CMD %s URL]", fake.Healthcheck, healthcheckBin)
	}
	hu, err := url.Parse(fake.Healthcheck.Test[2])
	if err != nil || hu.Port() != port {
		t.Fatalf("healthcheck URL %q is not on port %s", fake.Healthcheck.Test[2], port)
	}
	guild := path.Base(hu.Path)
	if !strings.HasPrefix(hu.Path, "/api/v10/guilds/") || !slices.ContainsFunc(catalog, func(e catalogEntry) bool { return e.GuildID == guild }) {
		t.Errorf("healthcheck URL %q does not name a guild of the catalog", hu)
	}
}

type catalogEntry struct {
	Number  int    `json:"number"`
	Name    string `json:"name"`
	GuildID string `json:"guildId"`
}

var snowflake = regexp.MustCompile(`^[0-9]{1,20}$`)

func parseCatalog(data []byte) ([]catalogEntry, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c []catalogEntry
	if err := dec.Decode(&c); err != nil {
		return nil, err
	}
	if len(c) == 0 {
		return nil, fmt.Errorf("empty catalog")
	}
	numbers, ids := map[int]bool{}, map[string]bool{}
	for _, e := range c {
		if e.Number < 1 || numbers[e.Number] || e.Name == "" || !snowflake.MatchString(e.GuildID) || ids[e.GuildID] {
			return nil, fmt.Errorf("entry %+v: want a unique positive number, a name and a unique guild id", e)
		}
		numbers[e.Number], ids[e.GuildID] = true, true
	}
	return c, nil
}

// loadCatalog reads deploy/compose/catalog.json, the fake Discord's servers
// (collector-svc/internal/fakediscord, DemoOptions: seed 1, three guilds).
func loadCatalog(t testing.TB) []catalogEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "compose", "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := parseCatalog(data)
	if err != nil {
		t.Fatalf("deploy/compose/catalog.json: %v", err)
	}
	return c
}

// checkCatalogMatchesCompose checks that a catalog (the dev overlay's) is compose's.
func checkCatalogMatchesCompose(t *testing.T, data []byte) {
	t.Helper()
	c, err := parseCatalog(data)
	if err != nil {
		t.Fatalf("catalog: %v", err)
	}
	if want := loadCatalog(t); !reflect.DeepEqual(c, want) {
		t.Errorf("catalog %+v differs from deploy/compose/catalog.json %+v", c, want)
	}
}

// completedBefore lists the one-shot services that complete before name starts: its
// service_completed_successfully dependencies and, transitively, theirs.
func completedBefore(f composeFile, name string) []string {
	var out []string
	var walk func(string)
	walk = func(n string) {
		for dep, d := range f.Services[n].DependsOn {
			if d.Condition == "service_completed_successfully" && !slices.Contains(out, dep) {
				out = append(out, dep)
				walk(dep)
			}
		}
	}
	walk(name)
	return out
}

// waitedByServer reports whether a long-running service waits for the one-shot name to
// complete, directly or through other one-shots.
func waitedByServer(f composeFile, name string, seen map[string]bool) bool {
	if seen[name] {
		return false
	}
	seen[name] = true
	for other, o := range f.Services {
		dep, ok := o.DependsOn[name]
		if !ok || dep.Condition != "service_completed_successfully" {
			continue
		}
		if o.Restart != "no" || waitedByServer(f, other, seen) {
			return true
		}
	}
	return false
}

// devImageTag is the tag the dev overlay gives the services' images.
func devImageTag(t testing.TB) string {
	t.Helper()
	r := overlay(t, "dev")
	tags := map[string]bool{}
	for _, s := range services {
		for _, d := range all[appsv1.Deployment](r, "Deployment") {
			if d.Name == s.Name {
				_, tag := parseImage(d.Spec.Template.Spec.Containers[0].Image)
				tags[tag] = true
			}
		}
	}
	if len(tags) != 1 {
		t.Fatalf("dev overlay image tags %v; want one", tags)
	}
	for tag := range tags {
		return tag
	}
	return ""
}
