package check

import (
	"bytes"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/toolshed/toolshed/host/wasm"
	"github.com/toolshed/toolshed/internal/config"
	"github.com/toolshed/toolshed/internal/oci"
)

const dir = "../kubernetes"

// sessionMiB is the memory a live session holding its plugin instance
// costs (docs/BENCHMARKS.md, "Memory per session": 4.4 MiB of Go heap),
// and baseMiB the server's before any (docs/SERVING.md: 57 MiB), rounded
// up: the sizing rule of docs/DEPLOY.md.
const sessionMiB, baseMiB = 4.4, 64

// imagePlugins is where deploy/Dockerfile puts the bundled plugins.
const imagePlugins = "/usr/share/toolshed/plugins"

// objects are the decoded manifests, by kind.
type objects struct {
	namespaces []corev1.Namespace
	configMaps []corev1.ConfigMap
	secrets    []corev1.Secret
	services   []corev1.Service
	deploys    []appsv1.Deployment
	stateful   []appsv1.StatefulSet
	ingresses  []networkingv1.Ingress
	hpas       []autoscalingv2.HorizontalPodAutoscaler
	pdbs       []policyv1.PodDisruptionBudget
	netpols    []networkingv1.NetworkPolicy
	files      []string
}

// decode reads every manifest strictly into the Kubernetes API's own
// types: an unknown field, a misspelt one, a duplicate key or a value of
// the wrong type is an error.
func decode(t *testing.T) *objects {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) == 0 {
		t.Fatal("no manifests")
	}
	o := &objects{}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		o.files = append(o.files, filepath.Base(f))
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range bytes.Split(data, []byte("\n---\n")) {
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal(doc, &tm); err != nil {
				t.Fatalf("%s #%d: %v", f, i+1, err)
			}
			var err error
			switch tm.APIVersion + " " + tm.Kind {
			case "v1 Namespace":
				err = add(&o.namespaces, doc)
			case "v1 ConfigMap":
				err = add(&o.configMaps, doc)
			case "v1 Secret":
				err = add(&o.secrets, doc)
			case "v1 Service":
				err = add(&o.services, doc)
			case "apps/v1 Deployment":
				err = add(&o.deploys, doc)
			case "apps/v1 StatefulSet":
				err = add(&o.stateful, doc)
			case "networking.k8s.io/v1 Ingress":
				err = add(&o.ingresses, doc)
			case "autoscaling/v2 HorizontalPodAutoscaler":
				err = add(&o.hpas, doc)
			case "policy/v1 PodDisruptionBudget":
				err = add(&o.pdbs, doc)
			case "networking.k8s.io/v1 NetworkPolicy":
				err = add(&o.netpols, doc)
			default:
				t.Fatalf("%s #%d: unexpected %s %s", f, i+1, tm.APIVersion, tm.Kind)
			}
			if err != nil {
				t.Fatalf("%s #%d (%s): %v", f, i+1, tm.Kind, err)
			}
		}
	}
	if len(o.deploys) != 1 || len(o.configMaps) != 1 || len(o.secrets) != 1 || len(o.hpas) != 1 || len(o.pdbs) != 1 || len(o.netpols) < 1 ||
		len(o.services) < 1 || len(o.ingresses) < 1 {
		t.Fatalf("want one Deployment, ConfigMap, Secret, HPA, PDB, and at least one NetworkPolicy, Service and Ingress")
	}
	return o
}

// add decodes one object strictly and appends it.
func add[T any](list *[]T, doc []byte) error {
	var v T
	if err := yaml.UnmarshalStrict(doc, &v); err != nil {
		return err
	}
	*list = append(*list, v)
	return nil
}

// TestStrictDecodingCatchesMistakes: the decoder used here refuses what
// it must, so a pass means something.
func TestStrictDecodingCatchesMistakes(t *testing.T) {
	for _, bad := range []string{
		"apiVersion: apps/v1\nkind: Deployment\nspec:\n  replica: 2\n",                                              // misspelt
		"apiVersion: apps/v1\nkind: Deployment\nspec:\n  replicas: two\n",                                           // wrong type
		"apiVersion: apps/v1\nkind: Deployment\nspec:\n  replicas: 2\n  replicas: 3\n",                              // duplicate
		"apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n      - nam: x\n", // nested
	} {
		var d appsv1.Deployment
		if err := yaml.UnmarshalStrict([]byte(bad), &d); err == nil {
			t.Errorf("accepted:\n%s", bad)
		}
	}
}

// TestManifests: the objects decode strictly and agree with each other
// and with Toolshed's configuration.
func TestManifests(t *testing.T) {
	o := decode(t)
	d := o.deploys[0]
	pod := d.Spec.Template
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
		t.Fatalf("the Deployment's selector does not select its pods: %v", err)
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatal("want one container")
	}
	c := pod.Spec.Containers[0]
	port := map[string]int32{}
	for _, p := range c.Ports {
		port[p.Name] = p.ContainerPort
	}

	// Services and ingresses reach the pods on a port they expose.
	svcPorts := map[string][]string{}
	for _, s := range o.services {
		if s.Name == storeService {
			continue // the session store's (checkSessionStore)
		}
		if !labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(pod.Labels)) || len(s.Spec.Selector) == 0 {
			t.Errorf("Service %s does not select the pods", s.Name)
		}
		// Any replica serves any request (the session store): no client
		// is pinned to one, which would skew the load behind a NAT.
		if s.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
			t.Errorf("Service %s pins clients to a replica (sessionAffinity: ClientIP); the session store makes that needless", s.Name)
		}
		for _, p := range s.Spec.Ports {
			if _, ok := port[p.TargetPort.StrVal]; !ok {
				t.Errorf("Service %s targets port %q the container does not name", s.Name, p.TargetPort.StrVal)
			}
			svcPorts[s.Name] = append(svcPorts[s.Name], p.Name)
		}
	}
	mcpRouted := false
	for _, ing := range o.ingresses {
		for _, r := range ing.Spec.Rules {
			for _, p := range r.HTTP.Paths {
				b := p.Backend.Service
				if b == nil || !slices.Contains(svcPorts[b.Name], b.Port.Name) {
					t.Errorf("Ingress %s: path %s goes to a Service or port that does not exist", ing.Name, p.Path)
					continue
				}
				if p.Path == "/mcp" {
					mcpRouted = true
				}
				for _, a := range []string{"nginx.ingress.kubernetes.io/upstream-hash-by", "nginx.ingress.kubernetes.io/affinity"} {
					if v := ing.Annotations[a]; v != "" {
						t.Errorf("Ingress %s: %s is pinned to a replica (%s %q); any replica serves any request", ing.Name, p.Path, a, v)
					}
				}
			}
		}
	}
	if !mcpRouted {
		t.Error("no Ingress routes /mcp")
	}

	// Probes: readiness is /readyz, liveness /healthz, on a named port.
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"readiness", c.ReadinessProbe, "/readyz"}, {"liveness", c.LivenessProbe, "/healthz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || port[p.probe.HTTPGet.Port.StrVal] == 0 {
			t.Errorf("%s probe: want GET %s on a named container port", p.name, p.path)
		}
	}

	// The configuration, loaded as serve loads it, with the environment
	// the pod gets (secrets replaced by valid stand-ins).
	cm := o.configMaps[0]
	cfgDir := t.TempDir()
	for k, v := range cm.Data {
		os.WriteFile(filepath.Join(cfgDir, k), []byte(v), 0o644)
	}
	secret := o.secrets[0]
	stand := map[string]string{"api-keys": "k8s-check-api-key-0123456789", "continuation-key": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", "model-api-key": "sk-test",
		"sessions-password": "0123456789abcdef0123456789abcdef"}
	var env []string
	envVal := map[string]string{}
	for _, e := range c.Env {
		v := e.Value
		if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil {
			if ref.SecretKeyRef.Name != secret.Name {
				t.Errorf("env %s: Secret %q is not in the manifests", e.Name, ref.SecretKeyRef.Name)
			}
			if _, ok := secret.StringData[ref.SecretKeyRef.Key]; !ok {
				t.Errorf("env %s: the Secret has no key %q", e.Name, ref.SecretKeyRef.Key)
			}
			v = stand[ref.SecretKeyRef.Key]
		}
		if ref := e.ValueFrom; ref != nil && ref.ResourceFieldRef != nil {
			if _, ok := c.Resources.Limits[corev1.ResourceName(strings.TrimPrefix(ref.ResourceFieldRef.Resource, "limits."))]; !ok {
				t.Errorf("env %s: %s is not set", e.Name, ref.ResourceFieldRef.Resource)
			}
			continue
		}
		v = expand(v, envVal)
		env = append(env, e.Name+"="+v)
		envVal[e.Name] = v
	}
	cfgPath := argAfter(c.Args, "--config")
	mount := func(path string) *corev1.VolumeMount {
		var best *corev1.VolumeMount
		for i, m := range c.VolumeMounts {
			if strings.HasPrefix(path+"/", strings.TrimSuffix(m.MountPath, "/")+"/") && (best == nil || len(m.MountPath) > len(best.MountPath)) {
				best = &c.VolumeMounts[i]
			}
		}
		return best
	}
	volume := func(name string) *corev1.Volume {
		for i, v := range pod.Spec.Volumes {
			if v.Name == name {
				return &pod.Spec.Volumes[i]
			}
		}
		return nil
	}
	// fromConfigMap checks that a path the pod reads is a key of the ConfigMap.
	fromConfigMap := func(what, path string) {
		m := mount(path)
		if m == nil || volume(m.Name) == nil || volume(m.Name).ConfigMap == nil || volume(m.Name).ConfigMap.Name != cm.Name {
			t.Errorf("%s %s is not on the ConfigMap's volume", what, path)
			return
		}
		if _, ok := cm.Data[strings.TrimPrefix(path, m.MountPath+"/")]; !ok {
			t.Errorf("%s %s: the ConfigMap has no key %q", what, path, strings.TrimPrefix(path, m.MountPath+"/"))
		}
	}
	// writable checks that a path the pod writes is on an emptyDir (the
	// root file system is read-only).
	writable := func(what, path string) {
		m := mount(path)
		if m == nil || m.ReadOnly || volume(m.Name) == nil || volume(m.Name).EmptyDir == nil {
			t.Errorf("%s %s is not on a writable volume (readOnlyRootFilesystem)", what, path)
		}
	}
	fromConfigMap("--config", cfgPath)
	l, err := config.Load(config.Source{File: filepath.Join(cfgDir, strings.TrimPrefix(cfgPath, "/etc/toolshed/")), Env: env})
	if err != nil {
		t.Fatalf("toolshed.yaml of the ConfigMap: %v", err)
	}
	cfg := l.Config
	fromConfigMap("plugins.grants", cfg.Plugins.Grants)
	writable("plugins.dir", cfg.Plugins.Dir)
	writable("plugins.cache_dir", cfg.Plugins.CacheDir)
	writable("XDG_DATA_HOME", envVal["XDG_DATA_HOME"])
	if len(cfg.Server.APIKeys) == 0 {
		t.Error("no API keys: serve refuses to listen beyond loopback")
	}
	_, p, _ := net.SplitHostPort(cfg.Server.Addr)
	if p != fmt.Sprint(port["http"]) || config.IsLoopback(cfg.Server.Addr) {
		t.Errorf("server.addr %s: the container port is %d, reachable from outside the pod", cfg.Server.Addr, port["http"])
	}
	if len(cfg.Registry.Sources) == 0 {
		t.Error("no registry.sources")
	}
	for _, s := range cfg.Registry.Sources {
		if _, err := oci.ParseReference(s); err != nil {
			t.Error(err)
		}
	}
	if m := mount(cfg.Registry.DockerConfig); m == nil || volume(m.Name).Secret == nil || filepath.Base(cfg.Registry.DockerConfig) != corev1.DockerConfigJsonKey {
		t.Errorf("registry.docker_config %s is not the %s key of a mounted Secret", cfg.Registry.DockerConfig, corev1.DockerConfigJsonKey)
	}
	// The grants name the image's bundled plugin folder: here, its source.
	grants := filepath.Join(cfgDir, filepath.Base(cfg.Plugins.Grants))
	src, _ := filepath.Abs("../../plugin-manifests")
	os.WriteFile(grants, []byte(strings.ReplaceAll(cm.Data[filepath.Base(cfg.Plugins.Grants)], imagePlugins, src)), 0o644)
	_, g, err := wasm.LoadGrants(grants)
	if err != nil {
		t.Fatalf("grants.json: %v", err)
	}
	for name, gr := range g {
		if gr.Artifacts != "" {
			writable("grants: "+name+" artifacts", gr.Artifacts)
		}
	}

	// Draining fits the grace period: the preStop pause, then
	// server.shutdown_timeout, then a margin, before the SIGKILL.
	pause := time.Duration(0)
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
		pause = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
	}
	grace := time.Duration(*pod.Spec.TerminationGracePeriodSeconds) * time.Second
	if need := pause + cfg.Server.ShutdownTimeout + 5*time.Second; grace < need {
		t.Errorf("terminationGracePeriodSeconds %s < preStop %s + server.shutdown_timeout %s + 5s", grace, pause, cfg.Server.ShutdownTimeout)
	}
	// Memory: plugin instances' linear memory lies outside the Go heap, so
	// the plugin memory budget is set, and the Go heap's soft limit is
	// about 90 % of what the budget leaves of the pod's limit; the two
	// together stay under the limit.
	limit := c.Resources.Limits.Memory().Value()
	budget := int64(cfg.Server.InstanceMemoryMB) << 20
	if budget <= 0 || limit-budget < 512<<20 {
		t.Errorf("server.instance_memory_mb %d MiB: set it, leaving at least 512 MiB of the %d MiB limit to the Go heap", budget>>20, limit>>20)
	}
	rest := limit - budget
	if soft, err := parseGoMemLimit(envVal["GOMEMLIMIT"]); err != nil || float64(soft) < 0.85*float64(rest) || float64(soft) > 0.92*float64(rest) {
		t.Errorf("GOMEMLIMIT %q (%v) is not about 90 %% of the memory limit less the plugin memory budget (%d MiB)", envVal["GOMEMLIMIT"], err, rest>>20)
	}
	if m := pod.Spec.AutomountServiceAccountToken; m == nil || *m {
		t.Error("the pod mounts a service-account token (automountServiceAccountToken: false)")
	}
	// The shipped Secret's placeholders are refused at start.
	var placeholders []string
	for _, e := range c.Env {
		if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil && secret.StringData[ref.SecretKeyRef.Key] != "" {
			placeholders = append(placeholders, e.Name+"="+secret.StringData[ref.SecretKeyRef.Key])
		}
	}
	if _, err := config.Load(config.Source{File: filepath.Join(cfgDir, filepath.Base(cfgPath)), Env: placeholders}); err == nil ||
		!strings.Contains(err.Error(), "placeholder") {
		t.Errorf("the Secret's placeholders are accepted at start: %v", err)
	}
	// The NetworkPolicy selects the pods, lets clients reach the HTTP
	// port and the pods reach DNS and the model.
	np := findPolicy(o.netpols, "toolshed")
	if np == nil {
		t.Fatal("no NetworkPolicy toolshed")
	}
	if s, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector); err != nil || !s.Matches(labels.Set(pod.Labels)) {
		t.Error("the NetworkPolicy does not select the pods")
	}
	allows := func(rules [][]networkingv1.NetworkPolicyPort, want string) bool {
		for _, ps := range rules {
			for _, p := range ps {
				if p.Port != nil && (p.Port.String() == want || p.Port.IntValue() != 0 && p.Port.IntValue() == int(port[want])) {
					return true
				}
			}
		}
		return false
	}
	var in, out [][]networkingv1.NetworkPolicyPort
	for _, r := range np.Spec.Ingress {
		in = append(in, r.Ports)
	}
	for _, r := range np.Spec.Egress {
		out = append(out, r.Ports)
	}
	modelPort := "443"
	if u, err := url.Parse(cfg.Model.BaseURL); err == nil && u.Port() != "" {
		modelPort = u.Port()
	}
	for _, want := range []struct {
		rules [][]networkingv1.NetworkPolicyPort
		port  string
		what  string
	}{{in, "http", "clients to the HTTP port"}, {out, "53", "DNS"}, {out, modelPort, "the model"}, {out, "443", "the registry"},
		{out, storePort(cfg.Server.Sessions.Store), "the session store"}} {
		if !allows(want.rules, want.port) {
			t.Errorf("the NetworkPolicy does not allow %s (port %s)", want.what, want.port)
		}
	}
	sessions := cfg.Server.MaxConcurrent + cfg.Server.MCP.MaxSessions
	if need := int64((baseMiB + sessionMiB*float64(sessions)) * (1 << 20)); limit < need {
		t.Errorf("memory limit %d MiB < %d MiB + %d sessions (server.max_concurrent + server.mcp.max_sessions) × %.1f MiB",
			limit>>20, baseMiB, sessions, sessionMiB)
	}
	checkSessionStore(t, o, cfg.Server.Sessions.Store, c, secret)
	// Timeouts follow the server's.
	for _, ing := range o.ingresses {
		if v, ok := ing.Annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"]; ok {
			if secs, err := strconv.Atoi(v); err != nil || time.Duration(secs)*time.Second < cfg.Server.RequestTimeout {
				t.Errorf("Ingress %s: proxy-read-timeout %q is shorter than server.request_timeout %s", ing.Name, v, cfg.Server.RequestTimeout)
			}
		}
	}
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Error("the root file system should be read-only")
	}

	// Autoscaling and disruption.
	h := o.hpas[0]
	if h.Spec.ScaleTargetRef.Kind != "Deployment" || h.Spec.ScaleTargetRef.Name != d.Name || h.Spec.ScaleTargetRef.APIVersion != "apps/v1" {
		t.Errorf("the HPA scales %+v, not the Deployment", h.Spec.ScaleTargetRef)
	}
	if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 {
		t.Error("the HPA should keep at least 2 replicas")
	}
	for _, m := range h.Spec.Metrics {
		if m.Resource != nil {
			if _, ok := c.Resources.Requests[m.Resource.Name]; !ok {
				t.Errorf("the HPA scales on %s utilisation, which the container does not request", m.Resource.Name)
			}
		}
	}
	pdb := o.pdbs[0]
	ps, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || !ps.Matches(labels.Set(pod.Labels)) {
		t.Error("the PodDisruptionBudget does not select the pods")
	}
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() >= int(*h.Spec.MinReplicas) {
		t.Error("the PodDisruptionBudget lets every replica go at once")
	}
}

// TestKustomization: kustomization.yaml lists every manifest.
func TestKustomization(t *testing.T) {
	o := decode(t)
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Namespace  string   `json:"namespace"`
		Resources  []string `json:"resources"`
	}
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		t.Fatal(err)
	}
	slices.Sort(k.Resources)
	if !slices.Equal(k.Resources, o.files) {
		t.Fatalf("kustomization resources %v, manifests %v", k.Resources, o.files)
	}
	if len(o.namespaces) != 1 || o.namespaces[0].Name != k.Namespace {
		t.Fatalf("namespace %q is not the Namespace of the manifests", k.Namespace)
	}
}

// TestDockerfile: the image has what the manifests expect of it.
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(data)
	for _, want := range []string{"CGO_ENABLED=0", "FROM gcr.io/distroless/static", "USER 65532:65532",
		`ENTRYPOINT ["/usr/local/bin/toolshed"]`, "plugin-manifests/glossary-data", imagePlugins} {
		if !strings.Contains(df, want) {
			t.Errorf("deploy/Dockerfile lacks %q", want)
		}
	}
	o := decode(t)
	c := o.deploys[0].Spec.Template.Spec.Containers[0]
	if c.Args[0] != "serve" || o.deploys[0].Spec.Template.Spec.SecurityContext.RunAsUser == nil || *o.deploys[0].Spec.Template.Spec.SecurityContext.RunAsUser != 65532 {
		t.Error("the Deployment runs something else than the image's serve as its user")
	}
}

func find(svcs []corev1.Service, name string) *corev1.Service {
	for i := range svcs {
		if svcs[i].Name == name {
			return &svcs[i]
		}
	}
	return nil
}

// storeService is the session store's Service (sessions.yaml).
const storeService = "toolshed-sessions"

// expand replaces $(NAME) with the value of an earlier variable, as the
// kubelet does in a container's env and args; an unknown one is kept.
func expand(v string, vars map[string]string) string {
	for name, val := range vars {
		v = strings.ReplaceAll(v, "$("+name+")", val)
	}
	return v
}

// storePort is the port of the session store's URL (6379 when it names
// none).
func storePort(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Port() != "" {
		return u.Port()
	}
	return "6379"
}

func findPolicy(ps []networkingv1.NetworkPolicy, name string) *networkingv1.NetworkPolicy {
	for i := range ps {
		if ps[i].Name == name {
			return &ps[i]
		}
	}
	return nil
}

// checkSessionStore: server.sessions.store is set (any replica serves any
// MCP request), names the session store's Service on a port it serves,
// and carries the password the store's container is started with (the
// same Secret key); the store's StatefulSet selects its pods, its Service
// selects them, and its NetworkPolicy lets toolshed's pods (and only
// them) in.
func checkSessionStore(t *testing.T, o *objects, raw string, c corev1.Container, secret corev1.Secret) {
	t.Helper()
	if raw == "" {
		t.Error("server.sessions.store is not set: MCP sessions would live in one replica's memory")
		return
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("server.sessions.store: %v", err)
	}
	svc := find(o.services, storeService)
	if u.Hostname() != storeService || svc == nil {
		t.Fatalf("server.sessions.store names %q, not the Service %s", u.Hostname(), storeService)
	}
	if len(o.stateful) != 1 {
		t.Fatalf("want one StatefulSet (the session store), got %d", len(o.stateful))
	}
	st := o.stateful[0]
	sel, err := metav1.LabelSelectorAsSelector(st.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(st.Spec.Template.Labels)) || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(st.Spec.Template.Labels)) {
		t.Error("the session store's StatefulSet or Service does not select its pods")
	}
	if st.Spec.ServiceName != storeService {
		t.Errorf("the StatefulSet's serviceName %q is not %s", st.Spec.ServiceName, storeService)
	}
	sc := st.Spec.Template.Spec.Containers[0]
	served := false
	for _, p := range svc.Spec.Ports {
		for _, cp := range sc.Ports {
			if fmt.Sprint(p.Port) == storePort(raw) && p.TargetPort.StrVal == cp.Name {
				served = true
			}
		}
	}
	if !served {
		t.Errorf("the Service %s does not serve port %s to the store's container", storeService, storePort(raw))
	}
	// The password: the URL's comes from the same Secret key as the
	// --requirepass of the store.
	keyOf := func(env []corev1.EnvVar, name string) string {
		for _, e := range env {
			if e.Name == name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				return e.ValueFrom.SecretKeyRef.Key
			}
		}
		return ""
	}
	pass := argAfter(sc.Args, "--requirepass")
	storeKey := keyOf(sc.Env, strings.TrimSuffix(strings.TrimPrefix(pass, "$("), ")"))
	var urlKey string
	for _, e := range c.Env {
		if e.Name == "TOOLSHED_SERVER_SESSIONS_STORE" {
			if i, j := strings.Index(e.Value, ":$("), strings.Index(e.Value, ")@"); i >= 0 && j > i {
				urlKey = keyOf(c.Env, e.Value[i+3:j])
			}
		}
	}
	if storeKey == "" || storeKey != urlKey {
		t.Errorf("the store's password (Secret key %q) and the one server.sessions.store carries (Secret key %q) differ", storeKey, urlKey)
	}
	if _, ok := secret.StringData[storeKey]; !ok {
		t.Errorf("the Secret has no key %q", storeKey)
	}
	np := findPolicy(o.netpols, storeService)
	if np == nil {
		t.Fatalf("no NetworkPolicy %s: any pod could reach the store", storeService)
	}
	if s, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector); err != nil || !s.Matches(labels.Set(st.Spec.Template.Labels)) {
		t.Error("the store's NetworkPolicy does not select its pods")
	}
	toolshedIn := false
	for _, r := range np.Spec.Ingress {
		if len(r.From) == 0 {
			t.Error("the store's NetworkPolicy lets any pod in")
		}
		for _, f := range r.From {
			if f.PodSelector != nil && f.PodSelector.MatchLabels["app.kubernetes.io/name"] == "toolshed" {
				toolshedIn = true
			}
		}
	}
	if !toolshedIn {
		t.Error("the store's NetworkPolicy does not let toolshed's pods in")
	}
}

func argAfter(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// parseGoMemLimit reads GOMEMLIMIT as the Go runtime does: bytes, or a
// number with B, KiB, MiB, GiB or TiB.
func parseGoMemLimit(s string) (int64, error) {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			return v * u.mult, err
		}
	}
	return strconv.ParseInt(s, 10, 64)
}
