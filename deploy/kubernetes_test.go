package deploy

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/soakd/soakd/cmd/soakd/plugins"
	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/dashboards/mixin"
	"github.com/soakd/soakd/sources"
)

// objects is what kustomize builds from one directory, each decoded
// strictly into its Kubernetes API type.
type objects struct {
	secrets     map[string]*corev1.Secret
	configMaps  []*corev1.ConfigMap
	deployments []*appsv1.Deployment
	jobs        []*batchv1.Job
	podMonitors []*monitoringv1.PodMonitor
	rules       []*monitoringv1.PrometheusRule
}

// build runs kustomize (the one kubectl apply -k runs) on dir and decodes
// every resource strictly: an unknown or misspelt field fails, as does a
// kind the test does not know.
func build(t *testing.T, dir string) objects {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	o := objects{secrets: map[string]*corev1.Secret{}}
	for _, r := range rm.Resources() {
		b, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		var obj any
		switch gvk := r.GetGvk(); gvk.ApiVersion() + "/" + gvk.Kind {
		case "v1/Secret":
			s := &corev1.Secret{}
			obj, o.secrets[r.GetName()] = s, s
		case "v1/ConfigMap":
			c := &corev1.ConfigMap{}
			obj, o.configMaps = c, append(o.configMaps, c)
		case "apps/v1/Deployment":
			d := &appsv1.Deployment{}
			obj, o.deployments = d, append(o.deployments, d)
		case "batch/v1/Job":
			j := &batchv1.Job{}
			obj, o.jobs = j, append(o.jobs, j)
		case "monitoring.coreos.com/v1/PodMonitor":
			p := &monitoringv1.PodMonitor{}
			obj, o.podMonitors = p, append(o.podMonitors, p)
		case "monitoring.coreos.com/v1/PrometheusRule":
			p := &monitoringv1.PrometheusRule{}
			obj, o.rules = p, append(o.rules, p)
		default:
			t.Fatalf("%s: unexpected %s", dir, gvk)
		}
		if err := yaml.UnmarshalStrict(b, obj); err != nil {
			t.Errorf("%s: %s %s: %v", dir, r.GetKind(), r.GetName(), err)
		}
	}
	// Every manifest in the directory is part of the build.
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	kust, _ := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	for _, f := range files {
		if b := filepath.Base(f); b != "kustomization.yaml" && !strings.Contains(string(kust), "- "+b) {
			t.Errorf("%s is not in %s/kustomization.yaml", b, dir)
		}
	}
	return o
}

// soakdContainer returns the pod's soakd container.
func soakdContainer(t *testing.T, where string, spec corev1.PodSpec) corev1.Container {
	t.Helper()
	for _, c := range spec.Containers {
		if c.Name == "soakd" {
			return c
		}
	}
	t.Fatalf("%s: no soakd container", where)
	return corev1.Container{}
}

// checkContainer checks soakd's container as the orchestrator runs it
// (port, probes, resources, non-root) and returns its environment as soakd
// would see it: *_FILE variables pointing at files holding the values of
// the Secret keys mounted there.
func checkContainer(t *testing.T, where string, o objects, spec corev1.PodSpec) map[string]string {
	t.Helper()
	c := soakdContainer(t, where, spec)
	port := false
	for _, p := range c.Ports {
		port = port || (p.Name == "soakd" && p.ContainerPort == 9480)
	}
	if !port {
		t.Errorf("%s: no port soakd 9480: %v", where, c.Ports)
	}
	// An image tagged latest (or not at all) is pulled Always by default:
	// one built and loaded into the node (kind load, minikube image load)
	// then fails to start with ErrImagePull.
	if tag := c.Image[strings.LastIndex(c.Image, "/")+1:]; (!strings.Contains(tag, ":") || strings.HasSuffix(tag, ":latest")) &&
		c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("%s: image %s with imagePullPolicy %q: want IfNotPresent, or a tag of its own", where, c.Image, c.ImagePullPolicy)
	}
	for probe, path := range map[*corev1.Probe]string{c.LivenessProbe: "/healthz", c.ReadinessProbe: "/readyz"} {
		if probe == nil || probe.HTTPGet == nil || probe.HTTPGet.Path != path || probe.HTTPGet.Port.String() != "soakd" {
			t.Errorf("%s: want an HTTP probe on soakd %s, got %+v", where, path, probe)
		}
	}
	for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if c.Resources.Requests.Name(res, "").IsZero() || c.Resources.Limits.Name(res, "").IsZero() {
			t.Errorf("%s: no %s request and limit", where, res)
		}
	}
	if sc := c.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("%s: soakd may run as root", where)
	}

	dir := t.TempDir()
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			t.Errorf("%s: %s comes from %v: secrets are files (*_FILE)", where, e.Name, e.ValueFrom)
			continue
		}
		env[e.Name] = e.Value
		if !strings.HasSuffix(e.Name, "_FILE") {
			continue
		}
		val, ok := secretFile(o, spec, c, e.Value)
		if !ok {
			t.Errorf("%s: %s=%s is no key of a mounted Secret", where, e.Name, e.Value)
			continue
		}
		f := filepath.Join(dir, e.Name)
		if err := os.WriteFile(f, []byte(val), 0o600); err != nil {
			t.Fatal(err)
		}
		env[e.Name] = f
	}
	return env
}

// secretFile returns the content of path in container c: a key of a
// Secret volume mounted there.
func secretFile(o objects, spec corev1.PodSpec, c corev1.Container, path string) (string, bool) {
	for _, m := range c.VolumeMounts {
		key, ok := strings.CutPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/")
		if !ok {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			if s := o.secrets[v.Secret.SecretName]; s != nil {
				if val, ok := s.StringData[key]; ok {
					return val, true
				}
				if val, ok := s.Data[key]; ok {
					return string(val), true
				}
			}
		}
	}
	return "", false
}

// The sidecar: an application Deployment with soakd next to it,
// configured by env, its secrets (target password, control token) read
// from a Secret through *_FILE, probes, resources, scraped by the
// PodMonitor.
func TestKubernetesSidecar(t *testing.T) {
	t.Parallel()
	o := build(t, "kubernetes/sidecar")
	if len(o.deployments) != 1 {
		t.Fatalf("%d Deployments, want 1", len(o.deployments))
	}
	d := o.deployments[0]
	spec := d.Spec.Template.Spec
	if len(spec.Containers) < 2 {
		t.Errorf("soakd is alone in its pod: not a sidecar")
	}
	env := checkContainer(t, "sidecar", o, spec)
	if env["SOAKD_CONTROL_TOKEN_FILE"] == "" {
		t.Error("sidecar: no control token from the Secret")
	}
	checkSoakdEnv(t, "sidecar", env)
	checkScraped(t, "sidecar", d.Spec.Template.Labels)
}

// The sharded run: an Indexed Job whose pods each run SHARD=auto with the
// count the Job's completions sets, all at once, each a different shard.
func TestKubernetesShardedJob(t *testing.T) {
	t.Parallel()
	o := build(t, "kubernetes/sharded-job")
	if len(o.jobs) != 1 {
		t.Fatalf("%d Jobs, want 1", len(o.jobs))
	}
	j := o.jobs[0]
	n := checkJob(t, o, j)
	if n < 2 {
		t.Errorf("%d completions: not sharded", n)
	}
	checkScraped(t, "sharded job", j.Spec.Template.Labels)

	// Changing completions is enough: kustomize carries it to parallelism
	// and JOB_COMPLETIONS.
	dir := t.TempDir()
	for _, f := range []string{"kustomization.yaml", "job.yaml", "secret.yaml"} {
		b, err := os.ReadFile(filepath.Join("kubernetes/sharded-job", f))
		if err != nil {
			t.Fatal(err)
		}
		if f == "job.yaml" {
			b = []byte(strings.Replace(string(b), "completions: "+strconv.Itoa(n)+"\n", "completions: 7\n", 1))
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := checkJob(t, build(t, dir), build(t, dir).jobs[0]); got != 7 {
		t.Errorf("completions edited to 7, built %d", got)
	}
}

// checkJob checks an Indexed Job's shards and returns its completions.
func checkJob(t *testing.T, o objects, j *batchv1.Job) int {
	t.Helper()
	if j.Spec.CompletionMode == nil || *j.Spec.CompletionMode != batchv1.IndexedCompletion || j.Spec.Completions == nil {
		t.Fatalf("job %s is not an Indexed Job with completions", j.Name)
	}
	n := int(*j.Spec.Completions)
	if p := j.Spec.Parallelism; p == nil || int(*p) != n {
		t.Errorf("parallelism is not completions %d: every shard must run at once, or the rates do not add up", n)
	}
	env := checkContainer(t, "sharded job", o, j.Spec.Template.Spec)
	if env[config.JobCountVar] != strconv.Itoa(n) {
		t.Errorf("%s=%q, want completions %d", config.JobCountVar, env[config.JobCountVar], n)
	}
	seen := map[sources.Shard]bool{}
	for i := range n {
		// What Kubernetes adds to each pod of an Indexed Job.
		env[config.JobIndexVar] = strconv.Itoa(i)
		checkSoakdEnv(t, "sharded job index "+strconv.Itoa(i), env)
		p := plugins.All()
		cfg, _ := config.Load(env, p.Sources)
		for _, w := range cfg.Workload {
			if w.Shard != (sources.Shard{Index: i, Count: n}) {
				t.Errorf("index %d: workload %s runs shard %v, want %d/%d", i, w.Name, w.Shard, i, n)
			}
			seen[w.Shard] = true
		}
	}
	if len(seen) != n {
		t.Errorf("%d distinct shards for %d completions", len(seen), n)
	}
	return n
}

// checkScraped checks the PodMonitor scrapes pods with podLabels on
// soakd's port.
func checkScraped(t *testing.T, where string, podLabels map[string]string) {
	t.Helper()
	o := build(t, "kubernetes/monitoring")
	if len(o.podMonitors) != 1 {
		t.Fatalf("%d PodMonitors, want 1", len(o.podMonitors))
	}
	pm := o.podMonitors[0]
	for k, v := range pm.Spec.Selector.MatchLabels {
		if podLabels[k] != v {
			t.Errorf("%s: the PodMonitor selects %s=%s, the pods have %v", where, k, v, podLabels)
		}
	}
	if len(pm.Spec.PodMetricsEndpoints) != 1 || pm.Spec.PodMetricsEndpoints[0].Port == nil || *pm.Spec.PodMetricsEndpoints[0].Port != "soakd" {
		t.Errorf("PodMonitor endpoints %+v: want port soakd", pm.Spec.PodMetricsEndpoints)
	}
}

// Monitoring: the PodMonitor, the alert rules as a PrometheusRule, and
// the dashboards in a ConfigMap Grafana's sidecar picks up.
func TestKubernetesMonitoring(t *testing.T) {
	t.Parallel()
	o := build(t, "kubernetes/monitoring")
	if len(o.rules) != 1 || len(o.rules[0].Spec.Groups) == 0 || len(o.rules[0].Spec.Groups[0].Rules) == 0 {
		t.Fatalf("PrometheusRules %v", o.rules)
	}
	if len(o.configMaps) != 1 || o.configMaps[0].Labels["grafana_dashboard"] != "1" {
		t.Fatalf("want one ConfigMap labelled grafana_dashboard=1, got %v", o.configMaps)
	}
	for _, f := range []string{"soak.json", "capacity.json"} {
		want, err := os.ReadFile(filepath.Join("../dashboards", f))
		if err != nil {
			t.Fatal(err)
		}
		got := o.configMaps[0].Data["soakd-"+f]
		var d map[string]any
		if err := json.Unmarshal([]byte(got), &d); err != nil || got != string(want) {
			t.Errorf("ConfigMap soakd-%s is not dashboards/%s (%v)", f, f, err)
		}
	}
}

// gomaxprocs is the GOMAXPROCS soakd's Go runtime picks in container c on
// a node with more cores than its limit: GOMAXPROCS if the environment
// sets it, else the CPU limit rounded up, and never below 2 (the
// runtime's own rule, runtime.defaultGOMAXPROCS).
func gomaxprocs(t *testing.T, where string, c corev1.Container) int64 {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == "GOMAXPROCS" {
			n, err := strconv.ParseInt(e.Value, 10, 64)
			if err != nil || n < 1 {
				t.Fatalf("%s: GOMAXPROCS=%q", where, e.Value)
			}
			return n
		}
	}
	return max(2, (c.Resources.Limits.Cpu().MilliValue()+999)/1000)
}

// soakd's CPU limit lets it use every processor Go schedules it on. Go
// runs at least 2 (GOMAXPROCS is the limit rounded up, at least 2): under
// a smaller limit the kernel throttles soakd for the rest of each period,
// which its latencies then include, and it can never reach the share of
// its GOMAXPROCS SoakdCPUSaturated (and soakd capacity's soakd
// bottleneck) wait for, so a generator that limits its own test goes
// unreported.
func TestKubernetesCPULimitCoversGOMAXPROCS(t *testing.T) {
	t.Parallel()
	specs := map[string]corev1.PodSpec{}
	for _, d := range build(t, "kubernetes/sidecar").deployments {
		specs["sidecar "+d.Name] = d.Spec.Template.Spec
	}
	for _, j := range build(t, "kubernetes/sharded-job").jobs {
		specs["sharded job "+j.Name] = j.Spec.Template.Spec
	}
	if len(specs) != 2 {
		t.Fatalf("%d pod specs, want the sidecar's and the Job's", len(specs))
	}
	for where, spec := range specs {
		c := soakdContainer(t, where, spec)
		limit := c.Resources.Limits.Cpu()
		if limit.IsZero() {
			continue // no limit: checkContainer reports it
		}
		procs := gomaxprocs(t, where, c)
		if cores := float64(limit.MilliValue()) / 1000; cores < float64(procs) {
			t.Errorf("%s: CPU limit %s for GOMAXPROCS %d: soakd is throttled at %.0f %% of its processors, "+
				"below the %.0f %% SoakdCPUSaturated fires at; give it a limit of %d cores or more",
				where, limit, procs, 100*cores/float64(procs), 100*mixin.CPUSaturation, procs)
		}
	}
}

// A pod's termination grace period covers soakd's SHUTDOWN_GRACE and
// the time to write its summary after: the kubelet kills it then.
func TestKubernetesTerminationGraceCoversShutdownGrace(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"kubernetes/sidecar", "kubernetes/sharded-job"} {
		o := build(t, dir)
		var specs []corev1.PodSpec
		for _, d := range o.deployments {
			specs = append(specs, d.Spec.Template.Spec)
		}
		for _, j := range o.jobs {
			specs = append(specs, j.Spec.Template.Spec)
		}
		for _, spec := range specs {
			env := checkContainer(t, dir, o, spec)
			env[config.JobIndexVar] = "0"
			grace := shutdownGrace(t, dir, env)
			term := 30 * time.Second // Kubernetes' default
			if spec.TerminationGracePeriodSeconds != nil {
				term = time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second
			}
			if term < grace+exitMargin {
				t.Errorf("%s: terminationGracePeriodSeconds %v, SOAKD_SHUTDOWN_GRACE %v: want at least %v", dir, term, grace, grace+exitMargin)
			}
		}
	}
}

// serviceLinks are the variables the kubelet sets in every container of a
// pod (unless the pod sets enableServiceLinks: false) for a Service named
// name in its namespace with one TCP port: what pkg/kubelet/envvars makes
// of a ClusterIP service.
func serviceLinks(name string, port int, portName string) map[string]string {
	p := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	ip, n := "10.96.0.17", strconv.Itoa(port)
	url := "tcp://" + ip + ":" + n
	return map[string]string{
		p + "_SERVICE_HOST": ip,
		p + "_SERVICE_PORT": n,
		p + "_SERVICE_PORT_" + strings.ToUpper(strings.ReplaceAll(portName, "-", "_")): n,
		p + "_PORT":                     url,
		p + "_PORT_" + n + "_TCP":       url,
		p + "_PORT_" + n + "_TCP_PROTO": "tcp",
		p + "_PORT_" + n + "_TCP_PORT":  n,
		p + "_PORT_" + n + "_TCP_ADDR":  ip,
	}
}

// A Service in the namespace whose name starts with soakd (soakd, or
// soakd-metrics in front of the sidecars' port, or soakd-sharded in front
// of the Job's pods) does not stop soakd's pods from starting: the
// variables Kubernetes injects for it are no misspelt settings.
func TestKubernetesServiceLinks(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"kubernetes/sidecar", "kubernetes/sharded-job"} {
		o := build(t, dir)
		var specs []corev1.PodSpec
		for _, d := range o.deployments {
			specs = append(specs, d.Spec.Template.Spec)
		}
		for _, j := range o.jobs {
			specs = append(specs, j.Spec.Template.Spec)
		}
		for _, spec := range specs {
			if spec.EnableServiceLinks != nil && !*spec.EnableServiceLinks {
				continue
			}
			env := checkContainer(t, dir, o, spec)
			env[config.JobIndexVar] = "0"
			for _, svc := range []string{"soakd", "soakd-metrics", "soakd-sharded", "soakd-iot"} {
				maps.Copy(env, serviceLinks(svc, 9480, "http"))
			}
			checkSoakdEnv(t, dir+" beside Services soakd, soakd-metrics, soakd-sharded and soakd-iot", env)
		}
	}
}

// The PodMonitor asks for soakd's native histograms (the heatmaps and
// the quantiles at their resolution) the way current Prometheus takes
// them: in protobuf, with scrapeNativeHistograms, which the operator
// renders as scrape_native_histograms. From Prometheus 3.9 on,
// --enable-feature=native-histograms does nothing, and without the
// setting only the classic buckets are stored.
func TestPodMonitorScrapesNativeHistograms(t *testing.T) {
	t.Parallel()
	o := build(t, "kubernetes/monitoring")
	if len(o.podMonitors) != 1 {
		t.Fatalf("%d PodMonitors, want 1", len(o.podMonitors))
	}
	pm := o.podMonitors[0].Spec
	if len(pm.ScrapeProtocols) == 0 || pm.ScrapeProtocols[0] != monitoringv1.PrometheusProto {
		t.Errorf("scrapeProtocols %v: native histograms come only in protobuf, first", pm.ScrapeProtocols)
	}
	if pm.ScrapeNativeHistograms == nil || !*pm.ScrapeNativeHistograms {
		t.Error("scrapeNativeHistograms is not true: Prometheus 3.9 and later store only the classic buckets (the heatmaps stay empty)")
	}
}
