package deploy

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// newObject lists the kinds the manifests may hold, each with its k8s.io/api type. A kind
// missing here fails the render test, so a new kind gets decoded strictly too.
var newObject = map[string]func() any{
	"v1/Namespace":                           func() any { return &corev1.Namespace{} },
	"v1/ConfigMap":                           func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                              func() any { return &corev1.Secret{} },
	"v1/Service":                             func() any { return &corev1.Service{} },
	"apps/v1/Deployment":                     func() any { return &appsv1.Deployment{} },
	"batch/v1/Job":                           func() any { return &batchv1.Job{} },
	"autoscaling/v2/HorizontalPodAutoscaler": func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"policy/v1/PodDisruptionBudget":          func() any { return &policyv1.PodDisruptionBudget{} },
	// The Prometheus Operator's kinds, from the monitoring component.
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return &monitoringv1.ServiceMonitor{} },
	"monitoring.coreos.com/v1/PrometheusRule": func() any { return &monitoringv1.PrometheusRule{} },
}

// decodeStrict decodes one object into its API type, refusing unknown fields (field names
// compared case-sensitively, as the API server does) and duplicate fields.
func decodeStrict(apiVersion, kind string, data []byte) (any, error) {
	mk, ok := newObject[apiVersion+"/"+kind]
	if !ok {
		return nil, fmt.Errorf("%s %s: a kind these checks do not know; add its type to newObject", apiVersion, kind)
	}
	obj := mk()
	strict, err := sigsjson.UnmarshalStrict(data, obj)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		return nil, errors.Join(strict...)
	}
	return obj, nil
}

type object struct {
	Kind, Name string
	Obj        any // *corev1.Service, *appsv1.Deployment, ...
}

type rendered []object

// get returns the object of that kind and name, typed.
func get[T any](r rendered, kind, name string) (*T, bool) {
	for _, o := range r {
		if o.Kind == kind && o.Name == name {
			v, ok := o.Obj.(*T)
			return v, ok
		}
	}
	return nil, false
}

func all[T any](r rendered, kind string) []*T {
	var out []*T
	for _, o := range r {
		if o.Kind == kind {
			if v, ok := o.Obj.(*T); ok {
				out = append(out, v)
			}
		}
	}
	return out
}

// render builds a kustomization as `kubectl apply -k` would (default load restrictions: no
// file from outside the kustomization's tree) and decodes every object strictly.
func render(dir string) (rendered, error) {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, err
	}
	var out rendered
	var errs []error
	for _, res := range m.Resources() {
		data, err := res.MarshalJSON()
		if err != nil {
			return nil, err
		}
		obj, err := decodeStrict(res.GetApiVersion(), res.GetKind(), data)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", res.GetKind(), res.GetName(), err))
			continue
		}
		out = append(out, object{Kind: res.GetKind(), Name: res.GetName(), Obj: obj})
	}
	return out, errors.Join(errs...)
}

var renders sync.Map // dir -> renderResult

type renderResult struct {
	r   rendered
	err error
}

func renderCached(t testing.TB, dir string) rendered {
	t.Helper()
	v, ok := renders.Load(dir)
	if !ok {
		r, err := render(dir)
		v, _ = renders.LoadOrStore(dir, renderResult{r, err})
	}
	res := v.(renderResult)
	if res.err != nil {
		t.Fatalf("kustomize build %s: %v", dir, res.err)
	}
	return res.r
}

func k8sDir(t testing.TB) string { return filepath.Join(repoRoot(t), "deploy", "k8s") }

// kustomizations lists the directories under deploy/k8s holding a kustomization of kind
// Kustomization (components are rendered through the overlays that use them).
func kustomizations(t testing.TB) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(k8sDir(t), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "kustomization.yaml" {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var head struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal(data, &head); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		switch head.Kind {
		case "Kustomization":
			dirs = append(dirs, filepath.Dir(p))
		case "Component":
		default:
			return fmt.Errorf("%s: kind %q", p, head.Kind)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

func TestKustomizationsRenderStrictly(t *testing.T) {
	dirs := kustomizations(t)
	want := []string{"base/collector-svc", "base/forum-svc", "base/stats-svc", "overlays/dev", "overlays/prod"}
	var got []string
	for _, d := range dirs {
		rel, _ := filepath.Rel(k8sDir(t), d)
		got = append(got, filepath.ToSlash(rel))
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("no kustomization in deploy/k8s/%s", w)
		}
	}
	for _, d := range dirs {
		rel, _ := filepath.Rel(k8sDir(t), d)
		t.Run(filepath.ToSlash(rel), func(t *testing.T) {
			r := renderCached(t, d)
			if len(r) == 0 {
				t.Fatal("renders no object")
			}
		})
	}
}

// TestStrictDecodingCatchesMistakes keeps the strict decoding honest: a misspelled field, a
// field in the wrong case and a duplicate field all fail, through kustomize too.
func TestStrictDecodingCatchesMistakes(t *testing.T) {
	good := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"},"spec":{"template":{"spec":{"containers":[{"name":"x","image":"x","ports":[{"containerPort":1}]}]}}}}`
	if _, err := decodeStrict("apps/v1", "Deployment", []byte(good)); err != nil {
		t.Fatalf("a valid Deployment is refused: %v", err)
	}
	for name, bad := range map[string]string{
		"misspelled": strings.Replace(good, `"containers"`, `"contianers"`, 1),
		"case":       strings.Replace(good, `"containerPort"`, `"containerport"`, 1),
		"duplicate":  strings.Replace(good, `"image":"x"`, `"image":"x","image":"y"`, 1),
		"type":       strings.Replace(good, `"containerPort":1`, `"containerPort":"1"`, 1),
	} {
		if _, err := decodeStrict("apps/v1", "Deployment", []byte(bad)); err == nil {
			t.Errorf("%s: accepted %s", name, bad)
		}
	}

	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("kustomization.yaml", "resources: [svc.yaml]\n")
	write("svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  ports: [{port: 80, targetPrt: 8080}]\n")
	if _, err := render(dir); err == nil {
		t.Error("a kustomization with a misspelled field renders")
	}
}

// parseImage splits an image reference into repository and tag ("" when none).
func parseImage(ref string) (repo, tag string) {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i], ref[i+1:]
	}
	return ref, ""
}

// sameRepo reports whether repo is want, possibly under a registry (prod renames images).
func sameRepo(repo, want string) bool {
	return repo == want || strings.HasSuffix(repo, "/"+want)
}

// envVar is where a container's variable comes from.
type envVar struct {
	Value         string // a literal or a ConfigMap value
	Secret, Key   string // secretKeyRef
	FromConfigMap bool
	Optional      bool
}

// containerEnv resolves the variables of c: envFrom ConfigMaps (which must exist in r), then
// env, which overrides them as in Kubernetes.
func containerEnv(r rendered, c corev1.Container) (map[string]envVar, error) {
	env := map[string]envVar{}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm, ok := get[corev1.ConfigMap](r, "ConfigMap", from.ConfigMapRef.Name)
			if !ok {
				return nil, fmt.Errorf("envFrom: no ConfigMap %q", from.ConfigMapRef.Name)
			}
			for k, v := range cm.Data {
				env[from.Prefix+k] = envVar{Value: v, FromConfigMap: true}
			}
		default:
			return nil, fmt.Errorf("envFrom other than a ConfigMap: its names cannot be checked")
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = envVar{Value: e.Value}
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			env[e.Name] = envVar{Secret: ref.Name, Key: ref.Key, Optional: ref.Optional != nil && *ref.Optional}
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm, ok := get[corev1.ConfigMap](r, "ConfigMap", ref.Name)
			if !ok {
				return nil, fmt.Errorf("%s: no ConfigMap %q", e.Name, ref.Name)
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				return nil, fmt.Errorf("%s: ConfigMap %q has no key %q", e.Name, ref.Name, ref.Key)
			}
			env[e.Name] = envVar{Value: v, FromConfigMap: true}
		default:
			return nil, fmt.Errorf("%s: a valueFrom these checks do not read", e.Name)
		}
	}
	return env, nil
}

// checkRestricted checks a pod against the restricted Pod Security profile our namespaces
// enforce, and the hardening this project adds (read-only root filesystem, resources).
func checkRestricted(t *testing.T, spec corev1.PodSpec, readOnlyRoot bool) {
	t.Helper()
	psc := spec.SecurityContext
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("pod: seccompProfile RuntimeDefault not set")
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		t.Error("pod: shares a host namespace")
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("pod: mounts a service account token it does not need")
	}
	containers := append(slices.Clone(spec.InitContainers), spec.Containers...)
	for _, c := range containers {
		sc := c.SecurityContext
		if sc == nil {
			t.Errorf("%s: no securityContext", c.Name)
			continue
		}
		nonRoot := (psc != nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot) || (sc.RunAsNonRoot != nil && *sc.RunAsNonRoot)
		if !nonRoot || (sc.RunAsNonRoot != nil && !*sc.RunAsNonRoot) {
			t.Errorf("%s: runAsNonRoot is not true", c.Name)
		}
		uids := []*int64{sc.RunAsUser}
		if psc != nil {
			uids = append(uids, psc.RunAsUser)
		}
		for _, uid := range uids {
			if uid != nil && *uid == 0 {
				t.Errorf("%s: runs as uid 0", c.Name)
			}
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: allowPrivilegeEscalation is not false", c.Name)
		}
		if sc.Privileged != nil && *sc.Privileged {
			t.Errorf("%s: privileged", c.Name)
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
			t.Errorf("%s: capabilities are not drop ALL, add none", c.Name)
		}
		if readOnlyRoot && (sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem) {
			t.Errorf("%s: readOnlyRootFilesystem is not true", c.Name)
		}
		for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, okReq := c.Resources.Requests[res]
			lim, okLim := c.Resources.Limits[res]
			if !okReq || !okLim || req.IsZero() || lim.IsZero() {
				t.Errorf("%s: %s request and limit not both set", c.Name, res)
			} else if req.Cmp(lim) > 0 {
				t.Errorf("%s: %s request %s above its limit %s", c.Name, res, req.String(), lim.String())
			}
		}
	}
}

// containerPort resolves a probe's or a Service's port against the container's ports.
func containerPort(c corev1.Container, p intstr.IntOrString) (int32, bool) {
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return cp.ContainerPort, true
		}
	}
	return 0, false
}

func selects(sel *metav1.LabelSelector, podLabels map[string]string) bool {
	if sel == nil {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && !s.Empty() && s.Matches(labels.Set(podLabels))
}

func findContainer(cs []corev1.Container, name string) (corev1.Container, bool) {
	for _, c := range cs {
		if c.Name == name {
			return c, true
		}
	}
	return corev1.Container{}, false
}

// checkService checks everything about one service that holds in every overlay.
func checkService(t *testing.T, r rendered, s service, code serviceCode) {
	dep, ok := get[appsv1.Deployment](r, "Deployment", s.Name)
	if !ok {
		t.Fatalf("no Deployment %s", s.Name)
	}
	pod := dep.Spec.Template
	if !selects(dep.Spec.Selector, pod.Labels) {
		t.Errorf("the Deployment's selector does not match its pod labels %v", pod.Labels)
	}
	checkRestricted(t, pod.Spec, true)
	if pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks {
		t.Error("enableServiceLinks: Kubernetes would add variables the service does not read")
	}

	c, ok := findContainer(pod.Spec.Containers, s.Name)
	if !ok {
		t.Fatalf("no container %s", s.Name)
	}
	if len(pod.Spec.Containers) != 1 {
		t.Errorf("%d containers; want the service alone", len(pod.Spec.Containers))
	}
	if len(c.Command) > 0 {
		t.Errorf("command %q overrides the image's entrypoint", c.Command)
	}
	if err := code.checkArgs(c.Args); err != nil {
		t.Errorf("args %q: %v", c.Args, err)
	} else if c.Args[0] != "serve" {
		t.Errorf("args %q; want serve", c.Args)
	}

	// Every container of the pod runs the service's own image and reads only its variables.
	env := map[string]map[string]envVar{}
	for _, cc := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		if repo, _ := parseImage(cc.Image); !sameRepo(repo, imageRepo(s.Name)) {
			t.Errorf("%s: image %q is not %s", cc.Name, cc.Image, imageRepo(s.Name))
		}
		if cc.Image != c.Image {
			t.Errorf("%s: image %q differs from the service container's %q", cc.Name, cc.Image, c.Image)
		}
		e, err := containerEnv(r, cc)
		if err != nil {
			t.Errorf("%s: %v", cc.Name, err)
			continue
		}
		env[cc.Name] = e
		for name, v := range e {
			if !code.readsEnv(name) {
				t.Errorf("%s: %s is not read by %s (no such string literal in its sources or in LoadCommon)", cc.Name, name, s.Name)
			}
			if slices.Contains(s.SecretEnv, name) {
				if v.Secret == "" {
					t.Errorf("%s: %s must come from a Secret, not a literal or a ConfigMap", cc.Name, name)
				} else if !strings.HasPrefix(v.Secret, secretName(s.Name)) || v.Key != name {
					t.Errorf("%s: %s comes from Secret %s key %s; want %s key %s", cc.Name, name, v.Secret, v.Key, secretName(s.Name), name)
				}
			}
		}
	}
	mainEnv := env[c.Name]
	for _, name := range s.SecretEnv {
		v, ok := mainEnv[name]
		if !ok {
			t.Errorf("%s is not set", name)
			continue
		}
		if name == "DATABASE_URL" && v.Optional {
			t.Error("DATABASE_URL is optional: without it the service would fall back to SQLite in the container")
		}
	}

	// Listening port: HTTP_ADDR, the container port, the probes, the scrape annotation.
	if addr := mainEnv["HTTP_ADDR"].Value; addr != fmt.Sprintf(":%d", s.Port) {
		t.Errorf("HTTP_ADDR = %q; want :%d", addr, s.Port)
	}
	if p, ok := containerPort(c, intstr.FromString("http")); !ok || p != int32(s.Port) {
		t.Errorf("container port http = %d; want %d", p, s.Port)
	}
	for _, pr := range []struct {
		kind  string
		probe *corev1.Probe
		path  string
	}{{"readiness", c.ReadinessProbe, "/readyz"}, {"liveness", c.LivenessProbe, "/healthz"}} {
		if pr.probe == nil || pr.probe.HTTPGet == nil {
			t.Errorf("no HTTP %s probe", pr.kind)
			continue
		}
		if pr.probe.HTTPGet.Path != pr.path {
			t.Errorf("%s probe path %q; want %s", pr.kind, pr.probe.HTTPGet.Path, pr.path)
		}
		if p, ok := containerPort(c, pr.probe.HTTPGet.Port); !ok || p != int32(s.Port) {
			t.Errorf("%s probe port %s is not the service's port %d", pr.kind, pr.probe.HTTPGet.Port.String(), s.Port)
		}
	}
	if ann := pod.Annotations["prometheus.io/port"]; ann != strconv.Itoa(s.Port) {
		t.Errorf("prometheus.io/port annotation %q; want %d", ann, s.Port)
	}

	// The Service.
	svc, ok := get[corev1.Service](r, "Service", s.Name)
	if !ok {
		t.Fatalf("no Service %s", s.Name)
	}
	if !selects(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, pod.Labels) {
		t.Errorf("Service selector %v does not match the pod labels %v", svc.Spec.Selector, pod.Labels)
	}
	if len(svc.Spec.Ports) != 1 {
		t.Errorf("Service has %d ports; want 1", len(svc.Spec.Ports))
	}
	for _, sp := range svc.Spec.Ports {
		if p, ok := containerPort(c, sp.TargetPort); !ok || p != int32(s.Port) || sp.Port != int32(s.Port) {
			t.Errorf("Service port %d -> %s does not reach container port %d", sp.Port, sp.TargetPort.String(), s.Port)
		}
	}

	// Migrations, scaling and draining.
	hpa, hasHPA := get[autoscalingv2.HorizontalPodAutoscaler](r, "HorizontalPodAutoscaler", s.Name)
	pdb, hasPDB := get[policyv1.PodDisruptionBudget](r, "PodDisruptionBudget", s.Name)
	if hasPDB && !selects(pdb.Spec.Selector, pod.Labels) {
		t.Error("the PodDisruptionBudget does not select the pods")
	}
	if hasPDB && pdb.Spec.MinAvailable != nil {
		t.Error("PodDisruptionBudget with minAvailable: blocks draining a node when replicas are few")
	}
	if s.Autoscaled {
		if !hasHPA || !hasPDB {
			t.Fatalf("HorizontalPodAutoscaler present: %v, PodDisruptionBudget present: %v; want both", hasHPA, hasPDB)
		}
		ref := hpa.Spec.ScaleTargetRef
		if ref.Kind != "Deployment" || ref.Name != dep.Name || ref.APIVersion != "apps/v1" {
			t.Errorf("HPA targets %s %s %s", ref.APIVersion, ref.Kind, ref.Name)
		}
		if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 1 || hpa.Spec.MaxReplicas < *hpa.Spec.MinReplicas {
			t.Errorf("HPA replicas: min unset or below 1, or max %d below min", hpa.Spec.MaxReplicas)
		}
		if len(hpa.Spec.Metrics) == 0 {
			t.Error("HPA without metrics")
		}
		if dep.Spec.Replicas != nil {
			t.Error("Deployment sets replicas although the HPA owns them: every apply would reset the count")
		}
		if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil || c.Lifecycle.PreStop.Sleep.Seconds <= 0 {
			t.Error("no preStop sleep to drain before shutdown")
		} else if g := pod.Spec.TerminationGracePeriodSeconds; g == nil || c.Lifecycle.PreStop.Sleep.Seconds >= *g {
			t.Errorf("preStop sleep %ds leaves no time of the grace period for shutdown", c.Lifecycle.PreStop.Sleep.Seconds)
		}
		// Migrations in an initContainer; serve must not migrate again.
		mig, ok := findContainer(pod.Spec.InitContainers, "migrate")
		if !ok || !slices.Equal(mig.Args, []string{"migrate"}) {
			t.Errorf("no initContainer migrate with args [migrate]")
		} else {
			if err := code.checkArgs(mig.Args); err != nil {
				t.Errorf("initContainer: %v", err)
			}
			if got, want := env[mig.Name]["DATABASE_URL"], mainEnv["DATABASE_URL"]; got != want {
				t.Errorf("the migration's DATABASE_URL %+v differs from the service's %+v", got, want)
			}
		}
		if v := mainEnv["MIGRATE_ON_START"]; v.Value != "false" {
			t.Errorf("MIGRATE_ON_START = %q; want false (the initContainer migrates)", v.Value)
		}
	} else {
		if hasHPA {
			t.Error("an HPA on a service with a fixed replica count")
		}
		if dep.Spec.Replicas == nil || *dep.Spec.Replicas != s.Replicas {
			got := "unset"
			if dep.Spec.Replicas != nil {
				got = strconv.Itoa(int(*dep.Spec.Replicas))
			}
			t.Errorf("replicas %s; want %d", got, s.Replicas)
		}
		// collector-svc has no migrate command: serve migrates, under the advisory lock.
		if len(pod.Spec.InitContainers) > 0 {
			t.Errorf("unexpected initContainers")
		}
		if v, ok := mainEnv["MIGRATE_ON_START"]; ok && v.Value != "true" {
			t.Errorf("MIGRATE_ON_START = %q; serve must migrate (no migrate command)", v.Value)
		}
	}
}

// overlay renders deploy/k8s/overlays/name.
func overlay(t testing.TB, name string) rendered {
	return renderCached(t, filepath.Join(k8sDir(t), "overlays", name))
}

func TestOverlayServices(t *testing.T) {
	for _, o := range []string{"dev", "prod"} {
		r := overlay(t, o)
		for _, s := range services {
			t.Run(o+"/"+s.Name, func(t *testing.T) {
				checkService(t, r, s, code(t)[s.Name])
			})
		}
		t.Run(o+"/pods", func(t *testing.T) {
			ns := all[corev1.Namespace](r, "Namespace")
			if len(ns) != 1 || ns[0].Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
				t.Errorf("want one Namespace enforcing the restricted pod security profile")
			}
			for _, d := range all[appsv1.Deployment](r, "Deployment") {
				t.Run(d.Name, func(t *testing.T) {
					if d.Namespace != ns[0].Name {
						t.Errorf("namespace %q; want %q", d.Namespace, ns[0].Name)
					}
					// PostgreSQL needs a writable root filesystem; everything else runs read-only.
					checkRestricted(t, d.Spec.Template.Spec, d.Name != "postgres")
				})
			}
		})
	}
}

func TestProdOverlay(t *testing.T) {
	r := overlay(t, "prod")
	if s := all[corev1.Secret](r, "Secret"); len(s) > 0 {
		t.Errorf("prod renders %d Secret(s): its secrets are created by the operator, never committed", len(s))
	}
	for _, d := range all[appsv1.Deployment](r, "Deployment") {
		if !slices.ContainsFunc(services, func(s service) bool { return s.Name == d.Name }) {
			t.Errorf("unexpected Deployment %s in prod (PostgreSQL and Redis are managed services)", d.Name)
		}
		for _, c := range append(slices.Clone(d.Spec.Template.Spec.InitContainers), d.Spec.Template.Spec.Containers...) {
			if _, tag := parseImage(c.Image); tag == "" || tag == "dev" || tag == "latest" {
				t.Errorf("%s/%s: image %q needs a release tag", d.Name, c.Name, c.Image)
			}
		}
	}
}

var createDatabase = regexp.MustCompile(`(?i)CREATE\s+DATABASE\s+"?([a-z0-9_]+)"?`)

func TestDevOverlay(t *testing.T) {
	r := overlay(t, "dev")
	envOf := func(dep string) map[string]envVar {
		t.Helper()
		d, ok := get[appsv1.Deployment](r, "Deployment", dep)
		if !ok {
			t.Fatalf("no Deployment %s", dep)
		}
		e, err := containerEnv(r, d.Spec.Template.Spec.Containers[0])
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	// secretValue reads a generated Secret's value.
	secretValue := func(v envVar) string {
		t.Helper()
		s, ok := get[corev1.Secret](r, "Secret", v.Secret)
		if !ok {
			t.Fatalf("no Secret %s", v.Secret)
		}
		val, ok := s.Data[v.Key]
		if !ok {
			t.Fatalf("Secret %s has no key %s", v.Secret, v.Key)
		}
		return string(val)
	}
	// reachable checks that host:port of a URL is a Service of the overlay.
	reachable := func(name, raw string) {
		t.Helper()
		u, err := url.Parse(raw)
		if err != nil {
			t.Errorf("%s %q: %v", name, raw, err)
			return
		}
		svc, ok := get[corev1.Service](r, "Service", u.Hostname())
		if !ok {
			t.Errorf("%s %q: no Service %s", name, raw, u.Hostname())
			return
		}
		if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return strconv.Itoa(int(p.Port)) == u.Port() }) {
			t.Errorf("%s %q: Service %s has no port %s", name, raw, svc.Name, u.Port())
		}
	}

	// Databases: the forum's and the reports one, which stats-svc and collector-svc share.
	pg := envOf("postgres")
	databases := map[string]bool{pg["POSTGRES_DB"].Value: true}
	for _, cm := range all[corev1.ConfigMap](r, "ConfigMap") {
		if strings.HasPrefix(cm.Name, "postgres-init") {
			for _, sql := range cm.Data {
				for _, m := range createDatabase.FindAllStringSubmatch(sql, -1) {
					databases[m[1]] = true
				}
			}
		}
	}
	urls := map[string]map[string]string{}
	for _, s := range services {
		e := envOf(s.Name)
		urls[s.Name] = map[string]string{}
		for _, name := range s.SecretEnv {
			urls[s.Name][name] = secretValue(e[name])
		}
		db := urls[s.Name]["DATABASE_URL"]
		reachable("DATABASE_URL", db)
		if u, err := url.Parse(db); err == nil && !databases[strings.TrimPrefix(u.Path, "/")] {
			t.Errorf("%s: database %q of %s is never created (have %v)", s.Name, u.Path, db, databases)
		}
		reachable("REDIS_URL", urls[s.Name]["REDIS_URL"])
	}
	for _, name := range []string{"DATABASE_URL", "REDIS_URL"} {
		if a, b := urls["stats-svc"][name], urls["collector-svc"][name]; a != b {
			t.Errorf("%s: stats-svc has %q, collector-svc %q; they must share it", name, a, b)
		}
	}
	if a, b := urls["forum-svc"]["DATABASE_URL"], urls["stats-svc"]["DATABASE_URL"]; a == b {
		t.Errorf("forum-svc and stats-svc share the database %q", a)
	}

	// The collector talks to the fake Discord API, which serves the catalog's servers.
	col := envOf("collector-svc")
	base := col["DISCORD_API_BASE"].Value
	reachable("DISCORD_API_BASE", base)
	fake, ok := get[appsv1.Deployment](r, "Deployment", "fake-discord")
	if !ok {
		t.Fatal("no Deployment fake-discord")
	}
	fc := fake.Spec.Template.Spec.Containers[0]
	if repo, _ := parseImage(fc.Image); !sameRepo(repo, imageRepo("collector-svc")) {
		t.Errorf("fake-discord image %q is not collector-svc's", fc.Image)
	}
	if err := code(t)["collector-svc"].checkArgs(fc.Args); err != nil || fc.Args[0] != "fake-discord" {
		t.Errorf("fake-discord args %q: %v", fc.Args, err)
	}
	if u, err := url.Parse(base); err == nil {
		i := slices.Index(fc.Args, "--addr")
		if i < 0 || i+1 >= len(fc.Args) || fc.Args[i+1] != ":"+u.Port() {
			t.Errorf("fake-discord args %q do not listen on port %s of DISCORD_API_BASE %q", fc.Args, u.Port(), base)
		}
		if p, ok := containerPort(fc, intstr.FromString("http")); !ok || strconv.Itoa(int(p)) != u.Port() {
			t.Errorf("fake-discord container port %d; want %s", p, u.Port())
		}
	}

	// CATALOG_FILE is mounted from the ConfigMap holding the same catalog as compose.
	file := col["CATALOG_FILE"].Value
	if file == "" {
		t.Fatal("CATALOG_FILE is not set")
	}
	colDep, _ := get[appsv1.Deployment](r, "Deployment", "collector-svc")
	cc, _ := findContainer(colDep.Spec.Template.Spec.Containers, "collector-svc")
	var volume string
	for _, m := range cc.VolumeMounts {
		if m.MountPath == path.Dir(file) {
			volume = m.Name
		}
	}
	var catalog []byte
	for _, v := range colDep.Spec.Template.Spec.Volumes {
		if v.Name == volume && v.ConfigMap != nil {
			cm, ok := get[corev1.ConfigMap](r, "ConfigMap", v.ConfigMap.Name)
			if !ok {
				t.Fatalf("no ConfigMap %s", v.ConfigMap.Name)
			}
			catalog = []byte(cm.Data[path.Base(file)])
		}
	}
	if catalog == nil {
		t.Fatalf("CATALOG_FILE %s is not in a mounted ConfigMap", file)
	}
	checkCatalogMatchesCompose(t, catalog)
}

// checkMonitors checks the ServiceMonitors of a render against its Services and Deployments:
// each selects at least one Service of its namespace, names a port that Service has (by
// name: the operator resolves it on the endpoints), scrapes /metrics, and that port reaches a
// container port of the pods behind the Service. It returns the job label of each scraped
// Service (jobLabel, else the Service's name, as the operator does).
func checkMonitors(r rendered) (map[string]string, []error) {
	var errs []error
	jobs := map[string]string{}
	for _, m := range all[monitoringv1.ServiceMonitor](r, "ServiceMonitor") {
		fail := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("ServiceMonitor %s: "+format, append([]any{m.Name}, args...)...))
		}
		if ns := m.Spec.NamespaceSelector; ns.Any || (len(ns.MatchNames) > 0 && !slices.Contains(ns.MatchNames, m.Namespace)) {
			fail("namespaceSelector %+v reaches beyond its own namespace %q", ns, m.Namespace)
		}
		if len(m.Spec.Endpoints) == 0 {
			fail("no endpoints")
		}
		matched := 0
		for _, svc := range all[corev1.Service](r, "Service") {
			if svc.Namespace != m.Namespace || !selects(&m.Spec.Selector, svc.Labels) {
				continue
			}
			matched++
			for _, ep := range m.Spec.Endpoints {
				if ep.Port == "" {
					fail("an endpoint without a port name")
					continue
				}
				if p := ep.Path; p != "" && p != "/metrics" {
					fail("path %q; the services serve /metrics", p)
				}
				i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port })
				if i < 0 {
					fail("port %q: Service %s has no port of that name", ep.Port, svc.Name)
					continue
				}
				if !reachesContainer(r, svc, svc.Spec.Ports[i]) {
					fail("port %q of Service %s reaches no container port of its pods", ep.Port, svc.Name)
				}
			}
			job := svc.Name
			if m.Spec.JobLabel != "" {
				job = svc.Labels[m.Spec.JobLabel]
				if job == "" {
					fail("jobLabel %q: Service %s has no such label", m.Spec.JobLabel, svc.Name)
				}
			}
			if _, dup := jobs[svc.Name]; dup {
				fail("Service %s is selected by another ServiceMonitor too: its pods would be scraped twice", svc.Name)
			}
			jobs[svc.Name] = job
		}
		if matched == 0 {
			fail("selector %v selects no Service in %q", m.Spec.Selector.MatchLabels, m.Namespace)
		}
	}
	return jobs, errs
}

// reachesContainer reports whether a Service port's target is a container port of a
// Deployment whose pods the Service selects.
func reachesContainer(r rendered, svc *corev1.Service, sp corev1.ServicePort) bool {
	for _, d := range all[appsv1.Deployment](r, "Deployment") {
		if d.Namespace != svc.Namespace || !selects(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, d.Spec.Template.Labels) {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if _, ok := containerPort(c, sp.TargetPort); ok {
				return true
			}
		}
	}
	return false
}

// refreshInterval is the collector's pause between passes in a render: REFRESH_INTERVAL when
// set, else REFRESH_MINUTES (the code's precedence).
func refreshInterval(r rendered) (time.Duration, error) {
	d, ok := get[appsv1.Deployment](r, "Deployment", "collector-svc")
	if !ok {
		return 0, errors.New("no Deployment collector-svc")
	}
	c, ok := findContainer(d.Spec.Template.Spec.Containers, "collector-svc")
	if !ok {
		return 0, errors.New("no container collector-svc")
	}
	env, err := containerEnv(r, c)
	if err != nil {
		return 0, err
	}
	if v := env["REFRESH_INTERVAL"].Value; v != "" {
		return time.ParseDuration(v)
	}
	m, err := strconv.Atoi(env["REFRESH_MINUTES"].Value)
	if err != nil || m <= 0 {
		return 0, fmt.Errorf("REFRESH_MINUTES %q: %v", env["REFRESH_MINUTES"].Value, err)
	}
	return time.Duration(m) * time.Minute, nil
}

// intervalRules says how the alerts that depend on the collector's refresh interval use it
// (prometheusrule.yaml says why), so that an overlay with another interval cannot keep rules
// tuned for the old one.
var intervalRules = map[string]func(f exprFacts, interval time.Duration) error{
	// No good pass for 3 × the interval, looking back at least that far.
	"ForumstatsCollectorNotPassing": func(f exprFacts, i time.Duration) error {
		stale := 3 * i
		if !slices.Contains(f.Numbers, stale.Seconds()) {
			return fmt.Errorf("compares with %v; want 3 × the interval = %v s", f.Numbers, stale.Seconds())
		}
		for _, r := range f.Ranges {
			if r < stale {
				return fmt.Errorf("range %v is shorter than 3 × the interval (%v)", r, stale)
			}
		}
		return nil
	},
	// The current reports older than 3 × the interval: what stats-svc answers as stale.
	"ForumstatsReportsStale": func(f exprFacts, i time.Duration) error {
		if stale := 3 * i; !slices.Contains(f.Numbers, stale.Seconds()) {
			return fmt.Errorf("compares with %v; want 3 × the interval = %v s", f.Numbers, stale.Seconds())
		}
		return nil
	},
	// Stale markings of two consecutive passes: a window of at least one interval, below two.
	"ForumstatsReportsGoingStale": func(f exprFacts, i time.Duration) error {
		for _, r := range f.Ranges {
			if r < i || r >= 2*i {
				return fmt.Errorf("range %v; want from the interval %v to below twice it", r, i)
			}
		}
		return nil
	},
	// The histogram bucket whose bound is the interval, as Prometheus 2 and 3 write it.
	"ForumstatsCollectorPassLongerThanInterval": func(f exprFacts, i time.Duration) error {
		ms := f.matchers("le")
		if len(ms) == 0 {
			return errors.New("no le matcher")
		}
		bound := strconv.FormatFloat(i.Seconds(), 'f', -1, 64)
		for _, m := range ms {
			for _, v := range []string{bound, bound + ".0"} {
				if !m.Matches(v) {
					return fmt.Errorf("matcher %s does not select the bucket le=%q (the interval)", m, v)
				}
			}
		}
		return nil
	},
}

// TestMonitoringComponent checks every overlay that includes components/monitoring (prod
// must): the monitors scrape each service on its real port, the rules select the jobs the
// monitors create, and the interval-bound alerts follow the overlay's REFRESH_MINUTES.
func TestMonitoringComponent(t *testing.T) {
	for _, o := range []string{"dev", "prod"} {
		r := overlay(t, o)
		mons := all[monitoringv1.ServiceMonitor](r, "ServiceMonitor")
		rules := all[monitoringv1.PrometheusRule](r, "PrometheusRule")
		if o == "prod" && (len(mons) == 0 || len(rules) == 0) {
			t.Fatalf("prod renders %d ServiceMonitor(s) and %d PrometheusRule(s): it must include %s", len(mons), len(rules), monitoringDir)
		}
		if len(mons) == 0 && len(rules) == 0 {
			continue
		}
		t.Run(o, func(t *testing.T) {
			jobs, errs := checkMonitors(r)
			for _, err := range errs {
				t.Error(err)
			}
			for _, s := range services {
				if jobs[s.Name] != s.Name {
					t.Errorf("%s: scraped as job %q; the rules and dashboards select job %q", s.Name, jobs[s.Name], s.Name)
				}
			}
			interval, err := refreshInterval(r)
			if err != nil {
				t.Fatal(err)
			}
			found := map[string]bool{}
			for _, pr := range rules {
				for _, err := range checkRuleJobs(pr, jobs) {
					t.Error(err)
				}
				for _, g := range pr.Spec.Groups {
					for _, rule := range g.Rules {
						check, ok := intervalRules[rule.Alert]
						if !ok {
							continue
						}
						found[rule.Alert] = true
						f, err := analyze(rule.Expr.String())
						if err == nil {
							err = check(f, interval)
						}
						if err != nil {
							t.Errorf("%s, with the collector's interval %v: %v", rule.Alert, interval, err)
						}
					}
				}
			}
			for name := range intervalRules {
				if !found[name] {
					t.Errorf("no alert %s: intervalRules names an alert that is gone", name)
				}
			}
		})
	}
}

// TestMonitorChecksCanFail keeps the monitor and interval checks honest on a copy of prod:
// a wrong port name, a selector matching nothing and another interval are all caught.
func TestMonitorChecksCanFail(t *testing.T) {
	prod := overlay(t, "prod")
	mutate := func(f func(*monitoringv1.ServiceMonitor)) rendered {
		out := slices.Clone(prod)
		for i, o := range out {
			if m, ok := o.Obj.(*monitoringv1.ServiceMonitor); ok && m.Name == "stats-svc" {
				c := m.DeepCopy()
				f(c)
				out[i].Obj = c
			}
		}
		return out
	}
	for name, r := range map[string]rendered{
		"port":     mutate(func(m *monitoringv1.ServiceMonitor) { m.Spec.Endpoints[0].Port = "metrics" }),
		"selector": mutate(func(m *monitoringv1.ServiceMonitor) { m.Spec.Selector.MatchLabels["app.kubernetes.io/name"] = "stats" }),
		"path":     mutate(func(m *monitoringv1.ServiceMonitor) { m.Spec.Endpoints[0].Path = "/stats/metrics" }),
		"job":      mutate(func(m *monitoringv1.ServiceMonitor) { m.Spec.JobLabel = "app" }),
	} {
		if _, errs := checkMonitors(r); len(errs) == 0 {
			t.Errorf("%s: a broken ServiceMonitor passes", name)
		}
	}
	if _, errs := checkMonitors(prod); len(errs) > 0 {
		t.Fatalf("prod itself fails: %v", errs)
	}

	pr := readRules(t)
	for _, g := range pr.Spec.Groups {
		for _, rule := range g.Rules {
			check, ok := intervalRules[rule.Alert]
			if !ok {
				continue
			}
			f, err := analyze(rule.Expr.String())
			if err != nil {
				t.Fatal(err)
			}
			if err := check(f, 2*time.Minute); err == nil {
				t.Errorf("%s: passes with a 2-minute interval although tuned for 10", rule.Alert)
			}
		}
	}
	if errs := checkRuleJobs(pr, map[string]string{"forum-svc": "forum-svc"}); len(errs) == 0 {
		t.Error("rules selecting stats-svc and collector-svc pass with forum-svc scraped alone")
	}
}
