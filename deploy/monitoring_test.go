package deploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// grafanaSchemaVersion is the dashboard schema of current Grafana (12.x and 13.x write 42);
// an older file is migrated at every load, a newer one may not load in the Grafana we target.
const grafanaSchemaVersion = 42

// The files these tests read, relative to the workspace root.
const (
	dashboardsDir      = "deploy/grafana/dashboards"
	dashboardProvider  = "deploy/grafana/provisioning/dashboards/forumstats.yaml"
	datasourceProvider = "deploy/grafana/provisioning/datasources/prometheus.yaml"
	monitoringDir      = "deploy/k8s/components/monitoring"
	rulesFile          = monitoringDir + "/prometheusrule.yaml"
	rulesUnitTests     = "deploy/testdata/alerts_test.yaml"
)

// promParser parses PromQL as Prometheus does by default (no experimental functions).
var promParser = parser.NewParser(parser.Options{})

// promExpr is one PromQL expression of a dashboard or a rule.
type promExpr struct {
	Where string // file and panel, variable or alert
	Raw   string // as written
	Expr  string // Grafana variables substituted: what Prometheus receives
	// Label is the label a Grafana label_values(selector, label) variable lists; it must exist
	// on the selected series like the labels of a matcher.
	Label string
}

// --- Grafana --------------------------------------------------------------------------------

type grafanaDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaTarget struct {
	RefID      string             `json:"refId"`
	Expr       string             `json:"expr"`
	Datasource *grafanaDatasource `json:"datasource"`
}

type grafanaPanel struct {
	ID         int                `json:"id"`
	Type       string             `json:"type"`
	Title      string             `json:"title"`
	Datasource *grafanaDatasource `json:"datasource"`
	GridPos    *struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []grafanaTarget `json:"targets"`
	Panels  []grafanaPanel  `json:"panels"` // of a collapsed row
}

type grafanaVariable struct {
	Name       string             `json:"name"`
	Type       string             `json:"type"`
	Query      json.RawMessage    `json:"query"` // a string, or the query editor's {"query": ...}
	Datasource *grafanaDatasource `json:"datasource"`
	Current    struct {
		Value json.RawMessage `json:"value"`
	} `json:"current"`
}

type grafanaDashboard struct {
	File          string
	ID            json.RawMessage `json:"id"`
	UID           string          `json:"uid"`
	Title         string          `json:"title"`
	SchemaVersion int             `json:"schemaVersion"`
	Templating    struct {
		List []grafanaVariable `json:"list"`
	} `json:"templating"`
	Panels []grafanaPanel `json:"panels"`
}

// allPanels lists the panels, those of collapsed rows included.
func (d grafanaDashboard) allPanels() []grafanaPanel {
	var out []grafanaPanel
	var walk func([]grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// query returns a variable's query text.
func (v grafanaVariable) query() string {
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var q struct {
		Query string `json:"query"`
	}
	_ = json.Unmarshal(v.Query, &q)
	return q.Query
}

// grafanaBuiltins are the global variables Grafana substitutes, with values of the size they
// have on the dashboards' 30 s scrape interval.
var grafanaBuiltins = map[string]string{
	"__rate_interval": "2m", "__interval": "30s", "__interval_ms": "30000",
	"__range": "6h", "__range_s": "21600", "__range_ms": "21600000",
}

// grafanaVarRef matches $name, ${name}, ${name:format} and [[name]]; $1 of a label_replace
// is no variable.
var grafanaVarRef = regexp.MustCompile(`\$\{([A-Za-z_]\w*)(?::[^}]*)?\}|\[\[([A-Za-z_]\w*)(?::[^\]]*)?\]\]|\$([A-Za-z_]\w*)`)

// expand substitutes the dashboard's variables as Grafana would before sending a query: a
// built-in by its usual value, a variable by its current value, or by a placeholder when it
// has none (a selection made in the browser). A reference to no variable is an error.
func (d grafanaDashboard) expand(s string) (string, error) {
	var errs []error
	out := grafanaVarRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := grafanaVarRef.FindStringSubmatch(ref)
		name := m[1] + m[2] + m[3]
		if v, ok := grafanaBuiltins[name]; ok {
			return v
		}
		i := slices.IndexFunc(d.Templating.List, func(v grafanaVariable) bool { return v.Name == name })
		if i < 0 {
			errs = append(errs, fmt.Errorf("variable %s is not defined", ref))
			return ref
		}
		var cur string
		if json.Unmarshal(d.Templating.List[i].Current.Value, &cur) == nil && cur != "" {
			return cur
		}
		return "placeholder"
	})
	return out, errors.Join(errs...)
}

// labelValuesQuery is Grafana's Prometheus variable query label_values(selector, label).
var labelValuesQuery = regexp.MustCompile(`^\s*label_values\(\s*(.+?)\s*,\s*(\w+)\s*\)\s*$`)

func readDashboards(t testing.TB) []grafanaDashboard {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(t), dashboardsDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no dashboard in %s", dashboardsDir)
	}
	var out []grafanaDashboard
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d grafanaDashboard
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		d.File = filepath.ToSlash(filepath.Join(dashboardsDir, filepath.Base(f)))
		out = append(out, d)
	}
	return out
}

// dashboardExprs returns the PromQL of every panel target and every query variable.
func dashboardExprs(d grafanaDashboard) ([]promExpr, error) {
	var out []promExpr
	var errs []error
	add := func(where, raw, label string) {
		e, err := d.expand(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
		}
		out = append(out, promExpr{Where: where, Raw: raw, Expr: e, Label: label})
	}
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			add(fmt.Sprintf("%s: panel %q, query %s", d.File, p.Title, tg.RefID), tg.Expr, "")
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q := v.query()
		where := fmt.Sprintf("%s: variable %s", d.File, v.Name)
		switch m := labelValuesQuery.FindStringSubmatch(q); {
		case m != nil:
			add(where, m[1], m[2])
		default:
			errs = append(errs, fmt.Errorf("%s: query %q is not label_values(selector, label)", where, q))
		}
	}
	return out, errors.Join(errs...)
}

// --- rules ----------------------------------------------------------------------------------

// decodeYAMLStrict decodes one YAML object into v as the API server would: unknown, misspelled
// and duplicate fields are errors.
func decodeYAMLStrict(data []byte, v any) error {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return err
	}
	strict, err := sigsjson.UnmarshalStrict(j, v)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

func readRules(t testing.TB) *monitoringv1.PrometheusRule {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), rulesFile))
	if err != nil {
		t.Fatal(err)
	}
	var pr monitoringv1.PrometheusRule
	if err := decodeYAMLStrict(data, &pr); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	return &pr
}

// ruleExprs returns the expression of every rule.
func ruleExprs(file string, pr *monitoringv1.PrometheusRule) []promExpr {
	var out []promExpr
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			name := r.Alert
			if name == "" {
				name = "record " + r.Record
			}
			e := r.Expr.String()
			out = append(out, promExpr{Where: fmt.Sprintf("%s: group %s, %s", file, g.Name, name), Raw: e, Expr: e})
		}
	}
	return out
}

// recordedNames are the series that recording rules create: queries may use them like the
// services' own.
func recordedNames(pr *monitoringv1.PrometheusRule) map[string]bool {
	out := map[string]bool{}
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				out[r.Record] = true
			}
		}
	}
	return out
}

// --- PromQL facts ---------------------------------------------------------------------------

// exprFacts is what the checks need from a parsed expression.
type exprFacts struct {
	Selectors []*parser.VectorSelector
	Grouping  []string // by, without, on, ignoring and group_left/right labels
	Numbers   []float64
	Ranges    []time.Duration // of range selectors and subqueries
}

// selectorName is the metric name a selector fixes ("" when it does not).
func selectorName(vs *parser.VectorSelector) string {
	if vs.Name != "" {
		return vs.Name
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
			return m.Value
		}
	}
	return ""
}

func analyze(expr string) (exprFacts, error) {
	e, err := promParser.ParseExpr(expr)
	if err != nil {
		return exprFacts{}, err
	}
	var f exprFacts
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case *parser.VectorSelector:
			f.Selectors = append(f.Selectors, n)
		case *parser.MatrixSelector:
			f.Ranges = append(f.Ranges, n.Range)
		case *parser.SubqueryExpr:
			f.Ranges = append(f.Ranges, n.Range)
		case *parser.AggregateExpr:
			f.Grouping = append(f.Grouping, n.Grouping...)
		case *parser.BinaryExpr:
			if n.VectorMatching != nil {
				f.Grouping = append(f.Grouping, n.VectorMatching.MatchingLabels...)
				f.Grouping = append(f.Grouping, n.VectorMatching.Include...)
			}
		case *parser.NumberLiteral:
			f.Numbers = append(f.Numbers, n.Val)
		}
		return nil
	})
	var errs []error
	for _, vs := range f.Selectors {
		if selectorName(vs) == "" {
			errs = append(errs, fmt.Errorf("selector %s names no metric: it cannot be checked against /metrics", vs))
		}
	}
	return f, errors.Join(errs...)
}

// matchers returns the matchers of every selector on label name.
func (f exprFacts) matchers(name string) []*labels.Matcher {
	var out []*labels.Matcher
	for _, vs := range f.Selectors {
		for _, m := range vs.LabelMatchers {
			if m.Name == name {
				out = append(out, m)
			}
		}
	}
	return out
}

// checkRuleJobs checks that every job a rule selects by name is the job of a scraped Service.
func checkRuleJobs(pr *monitoringv1.PrometheusRule, jobs map[string]string) []error {
	known := map[string]bool{}
	for _, j := range jobs {
		known[j] = true
	}
	var errs []error
	for _, e := range ruleExprs("PrometheusRule "+pr.Name, pr) {
		f, err := analyze(e.Expr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %v", e.Where, err))
			continue
		}
		for _, m := range f.matchers("job") {
			var names []string
			switch m.Type {
			case labels.MatchEqual:
				names = []string{m.Value}
			case labels.MatchRegexp:
				names = strings.Split(m.Value, "|")
			}
			for _, n := range names {
				if !known[n] {
					errs = append(errs, fmt.Errorf("%s: %s: no ServiceMonitor scrapes a job %q (jobs: %v)", e.Where, m, n, jobs))
				}
			}
		}
	}
	return errs
}

// --- tests ----------------------------------------------------------------------------------

func TestGrafanaDashboards(t *testing.T) {
	uids, titles := map[string]string{}, map[string]string{}
	for _, d := range readDashboards(t) {
		t.Run(filepath.Base(d.File), func(t *testing.T) {
			// Provisioning matches dashboards by uid; a numeric id would clash between instances.
			if d.UID == "" || len(d.UID) > 40 {
				t.Errorf("uid %q: want 1 to 40 characters", d.UID)
			}
			if prev, ok := uids[d.UID]; ok {
				t.Errorf("uid %q also in %s", d.UID, prev)
			}
			uids[d.UID] = d.File
			if d.Title == "" {
				t.Error("no title")
			} else if prev, ok := titles[d.Title]; ok {
				t.Errorf("title %q also in %s", d.Title, prev)
			}
			titles[d.Title] = d.File
			if id := string(d.ID); id != "" && id != "null" {
				t.Errorf("id %s: a provisioned dashboard has none (null)", id)
			}
			if d.SchemaVersion != grafanaSchemaVersion {
				t.Errorf("schemaVersion %d; want %d", d.SchemaVersion, grafanaSchemaVersion)
			}
			i := slices.IndexFunc(d.Templating.List, func(v grafanaVariable) bool { return v.Name == "datasource" })
			if i < 0 || d.Templating.List[i].Type != "datasource" || d.Templating.List[i].query() != "prometheus" {
				t.Error(`no variable "datasource" of type datasource listing prometheus data sources`)
			}
			for _, v := range d.Templating.List {
				if v.Type == "query" && !usesDatasourceVar(v.Datasource) {
					t.Errorf("variable %s: datasource %+v; want ${datasource}", v.Name, v.Datasource)
				}
			}

			ids := map[int]bool{}
			panels := 0
			for _, p := range d.allPanels() {
				if ids[p.ID] || p.ID <= 0 {
					t.Errorf("panel %q: id %d missing or repeated", p.Title, p.ID)
				}
				ids[p.ID] = true
				if p.GridPos == nil || p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X < 0 || p.GridPos.X+p.GridPos.W > 24 {
					t.Errorf("panel %q: gridPos %+v outside the 24 columns", p.Title, p.GridPos)
				}
				if p.Type == "row" {
					continue
				}
				panels++
				if p.Title == "" {
					t.Errorf("panel %d: no title", p.ID)
				}
				if !usesDatasourceVar(p.Datasource) {
					t.Errorf("panel %q: datasource %+v; want ${datasource}", p.Title, p.Datasource)
				}
				if len(p.Targets) == 0 {
					t.Errorf("panel %q: no query", p.Title)
				}
				refs := map[string]bool{}
				for _, tg := range p.Targets {
					if tg.RefID == "" || refs[tg.RefID] {
						t.Errorf("panel %q: refId %q missing or repeated", p.Title, tg.RefID)
					}
					refs[tg.RefID] = true
					if tg.Datasource != nil && !usesDatasourceVar(tg.Datasource) {
						t.Errorf("panel %q, query %s: datasource %+v; want ${datasource}", p.Title, tg.RefID, tg.Datasource)
					}
				}
			}
			if panels == 0 {
				t.Error("no panel")
			}

			exprs, err := dashboardExprs(d)
			if err != nil {
				t.Error(err)
			}
			for _, e := range exprs {
				if _, err := analyze(e.Expr); err != nil {
					t.Errorf("%s: %s: %v", e.Where, e.Raw, err)
				}
			}
		})
	}
}

func usesDatasourceVar(ds *grafanaDatasource) bool {
	return ds != nil && ds.Type == "prometheus" && ds.UID == "${datasource}"
}

// TestDashboardChecksCanFail keeps the dashboard checks honest: an undefined variable and a
// selector without a metric name are refused.
func TestDashboardChecksCanFail(t *testing.T) {
	d := grafanaDashboard{}
	d.Templating.List = []grafanaVariable{{Name: "job", Type: "query"}}
	for _, tc := range []struct {
		expr string
		ok   bool
	}{
		{`sum(rate(http_requests_total{job=~"$job"}[$__rate_interval]))`, true},
		{`sum(rate(http_requests_total{job=~"${job:regex}"}[$__rate_interval]))`, true},
		{`sum(rate(http_requests_total{job=~"$jb"}[5m]))`, false},
		{`label_replace(http_requests_total{job=~"$job"}, "svc", "$1", "job", "(.*)")`, true},
		{`sum(rate({job="forum-svc"}[5m]))`, false},
		{`sum(rate(http_requests_total[5m])`, false},
	} {
		e, err := d.expand(tc.expr)
		if err == nil {
			_, err = analyze(e)
		}
		if (err == nil) != tc.ok {
			t.Errorf("%s: error %v; want ok=%v", tc.expr, err, tc.ok)
		}
	}
}

// grafanaProviders is Grafana's dashboard provisioning file, field by field (strict decoding
// refuses anything else, such as a misspelled option).
type grafanaProviders struct {
	APIVersion int `json:"apiVersion"`
	Providers  []struct {
		Name                  string `json:"name"`
		OrgID                 int    `json:"orgId"`
		Folder                string `json:"folder"`
		FolderUID             string `json:"folderUid"`
		Type                  string `json:"type"`
		DisableDeletion       bool   `json:"disableDeletion"`
		AllowUIUpdates        bool   `json:"allowUiUpdates"`
		UpdateIntervalSeconds int    `json:"updateIntervalSeconds"`
		Options               struct {
			Path                      string `json:"path"`
			FoldersFromFilesStructure bool   `json:"foldersFromFilesStructure"`
		} `json:"options"`
	} `json:"providers"`
}

type grafanaDatasources struct {
	APIVersion  int `json:"apiVersion"`
	Datasources []struct {
		Name      string         `json:"name"`
		UID       string         `json:"uid"`
		Type      string         `json:"type"`
		Access    string         `json:"access"`
		URL       string         `json:"url"`
		IsDefault bool           `json:"isDefault"`
		Editable  bool           `json:"editable"`
		JSONData  map[string]any `json:"jsonData"`
	} `json:"datasources"`
}

func TestGrafanaProvisioning(t *testing.T) {
	root := repoRoot(t)
	read := func(rel string, v any) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		if err := decodeYAMLStrict(data, v); err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
	}
	var dp grafanaProviders
	read(dashboardProvider, &dp)
	if dp.APIVersion != 1 || len(dp.Providers) != 1 {
		t.Fatalf("%s: want apiVersion 1 and one provider", dashboardProvider)
	}
	p := dp.Providers[0]
	if p.Type != "file" || !filepath.IsAbs(p.Options.Path) {
		t.Errorf("provider type %q, path %q: want a file provider with an absolute path", p.Type, p.Options.Path)
	}
	var ds grafanaDatasources
	read(datasourceProvider, &ds)
	if ds.APIVersion != 1 || len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].URL == "" {
		t.Errorf("%s: want apiVersion 1 and one prometheus data source with a url", datasourceProvider)
	}
	// The README tells where the files go: the paths must be the ones in the files.
	readme, err := os.ReadFile(filepath.Join(root, "deploy", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{p.Options.Path, dashboardsDir, dashboardProvider, datasourceProvider} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("deploy/README.md does not mention %s", want)
		}
	}
}

// severities are the values of the severity label the alert routing knows.
var severities = []string{"critical", "warning"}

func TestPrometheusRules(t *testing.T) {
	pr := readRules(t)
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	groups, alerts := map[string]bool{}, map[string]bool{}
	for _, g := range pr.Spec.Groups {
		if g.Name == "" || groups[g.Name] {
			t.Errorf("group name %q missing or repeated", g.Name)
		}
		groups[g.Name] = true
		for _, r := range g.Rules {
			t.Run(g.Name+"/"+r.Alert+r.Record, func(t *testing.T) {
				if _, err := analyze(r.Expr.String()); err != nil {
					t.Errorf("expr %q: %v", r.Expr.String(), err)
				}
				if r.Alert == "" {
					return // a recording rule
				}
				if alerts[r.Alert] {
					t.Errorf("alert %s defined twice", r.Alert)
				}
				alerts[r.Alert] = true
				if r.For == nil {
					t.Error("no for: one bad scrape would page")
				} else if d, err := model.ParseDuration(string(*r.For)); err != nil || time.Duration(d) < time.Minute {
					t.Errorf("for %q: want a duration of at least 1m (%v)", *r.For, err)
				}
				if !slices.Contains(severities, r.Labels["severity"]) {
					t.Errorf("severity %q; want one of %v", r.Labels["severity"], severities)
				}
				for _, a := range []string{"summary", "description"} {
					if strings.TrimSpace(r.Annotations[a]) == "" {
						t.Errorf("no %s annotation", a)
					}
				}
				// The runbook: deploy/README.md says what the alert means and what to do.
				if !strings.Contains(string(readme), "`"+r.Alert+"`") {
					t.Errorf("deploy/README.md has no runbook line for `%s`", r.Alert)
				}
			})
		}
	}
	if len(alerts) == 0 {
		t.Fatal("no alert")
	}
}

// TestPromtool runs `promtool check rules` on the PrometheusRule's groups and its unit tests
// (deploy/testdata/alerts_test.yaml). CI must have promtool (.ci/run installs it); elsewhere
// these two checks are skipped without it.
func TestPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is not on PATH, and CI must check the rules with it: .ci/run installs the Debian package prometheus")
		}
		t.Skip("promtool is not on PATH (Debian: apt-get install prometheus): rules not checked with it")
	}
	root := repoRoot(t)
	data, err := os.ReadFile(filepath.Join(root, rulesFile))
	if err != nil {
		t.Fatal(err)
	}
	// The spec of a PrometheusRule is a Prometheus rule file as it stands.
	var obj struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	spec, err := yaml.JSONToYAML(obj.Spec)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), spec, 0o644); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join(root, rulesUnitTests))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
