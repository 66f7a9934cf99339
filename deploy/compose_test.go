package deploy

import (
	"context"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"

	soakdcli "github.com/soakd/soakd/cmd/soakd/cli"
	"github.com/soakd/soakd/cmd/soakd/plugins"
	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/settings"
)

// loadCompose loads deploy/compose/compose.yaml as docker compose does:
// compose-go validates it against the Compose specification's schema
// (unknown keys fail) and checks its consistency (services, secrets and
// volumes it names exist).
func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{"compose/compose.yaml"},
		cli.WithWorkingDirectory("compose"), cli.WithEnv(nil), cli.WithResolvedPaths(true))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return p
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, err := p.GetService(name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// soakdEnv is a service's SOAKD_* environment, each *_FILE pointing at
// the local file of the secret mounted there.
func soakdEnv(t *testing.T, p *types.Project, s types.ServiceConfig) map[string]string {
	t.Helper()
	env := map[string]string{}
	for k, v := range s.Environment {
		if v == nil {
			t.Fatalf("%s: %s has no value", s.Name, k)
		}
		env[k] = *v
	}
	for k, v := range env {
		if !strings.HasSuffix(k, "_FILE") {
			continue
		}
		local := ""
		for _, ref := range s.Secrets {
			target := ref.Target
			if target == "" {
				target = ref.Source
			}
			if !strings.HasPrefix(target, "/") {
				target = "/run/secrets/" + target
			}
			if target == v {
				local = p.Secrets[ref.Source].File
			}
		}
		if local == "" {
			t.Errorf("%s: %s=%s is no secret mounted in the service", s.Name, k, v)
			continue
		}
		env[k] = local
	}
	return env
}

// checkSoakdEnv loads env as soakd's configuration: it must be valid and
// every SOAKD_* variable one of soakd's settings (its own list, the one
// soakd config prints).
func checkSoakdEnv(t *testing.T, where string, env map[string]string) {
	t.Helper()
	p := plugins.All()
	cfg, err := config.Load(env, p.Sources)
	if err := cfg.Check(p, err); err != nil {
		t.Errorf("%s: soakd rejects its configuration:\n%v", where, err)
	}
	if unk := settings.UnknownVars(env, cfg.Settings()); len(unk) > 0 {
		t.Errorf("%s: %v are no soakd settings", where, unk)
	}
	n := 0
	for k := range env {
		if strings.HasPrefix(k, config.EnvPrefix) {
			n++
		}
	}
	if n == 0 {
		t.Errorf("%s: no SOAKD_* variable", where)
	}
}

// The compose stack loads with compose-go, soakd's configuration in it is
// valid, Prometheus' config (with the files the stack mounts, where it
// mounts them) passes promtool, and Grafana is provisioned with a
// datasource on the stack's Prometheus and the repository's dashboards.
func TestComposeStack(t *testing.T) {
	t.Parallel()
	p := loadCompose(t)
	for _, name := range []string{"soakd", "timescaledb", "redis", "influxdb", "prometheus", "grafana"} {
		service(t, p, name)
	}
	sk := service(t, p, "soakd")
	env := soakdEnv(t, p, sk)
	checkSoakdEnv(t, "compose soakd", env)
	if sk.Build == nil || filepath.Clean(sk.Build.Context) != filepath.Clean(mustAbs(t, "..")) {
		t.Errorf("soakd builds from %v, want the repository's Dockerfile", sk.Build)
	}
	if !slices.ContainsFunc(sk.Ports, func(pc types.ServicePortConfig) bool { return pc.Target == 9480 }) {
		t.Errorf("soakd publishes %v, want 9480", sk.Ports)
	}
	for _, k := range []string{"SOAKD_IOT_TARGET", "SOAKD_KV_TARGET", "SOAKD_TRUCKS_TARGET"} {
		host := strings.SplitN(strings.SplitN(env[k], "://", 2)[1], ":", 2)[0]
		if _, err := p.GetService(strings.TrimPrefix(host, "postgres@")); err != nil {
			t.Errorf("%s=%s names no service of the stack", k, env[k])
		}
	}
	// soakd starts once each of its targets answers its health check, not
	// only once its container has started.
	for _, k := range []string{"SOAKD_IOT_TARGET", "SOAKD_KV_TARGET", "SOAKD_TRUCKS_TARGET"} {
		host := strings.SplitN(strings.SplitN(env[k], "://", 2)[1], ":", 2)[0]
		name := strings.TrimPrefix(host, "postgres@")
		if d, ok := sk.DependsOn[name]; !ok || d.Condition != types.ServiceConditionHealthy {
			t.Errorf("soakd depends on %s (%s) as %+v, want condition service_healthy", name, k, d)
		}
		db, err := p.GetService(name)
		if err != nil {
			continue
		}
		if hc := db.HealthCheck; hc == nil || hc.Disable || len(hc.Test) < 2 || hc.Test[0] != "CMD" {
			t.Errorf("%s has no health check (%+v): service_healthy would never hold", name, hc)
		} else if hc.Interval == nil || hc.Retries == nil {
			t.Errorf("%s health check %+v: want an interval and retries", name, hc)
		}
	}
	if !strings.HasPrefix(service(t, p, "timescaledb").Image, "timescale/timescaledb:") ||
		!strings.HasPrefix(service(t, p, "influxdb").Image, "influxdb:1.8") {
		t.Error("want TimescaleDB's image and InfluxDB 1.8")
	}

	// Prometheus: native histograms, and its mounted files where it reads them.
	prom := service(t, p, "prometheus")
	if !slices.Contains(prom.Command, "--enable-feature=native-histograms") {
		t.Errorf("prometheus command %v: native histograms are off", prom.Command)
	}
	root := mountAll(t, prom)
	run(t, root, promtool(t), "check", "config", filepath.Join(root, "etc/prometheus/prometheus.yml"))
	b, err := os.ReadFile(filepath.Join(root, "etc/prometheus/prometheus.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"soakd:9480"`) {
		t.Error("Prometheus does not scrape soakd:9480")
	}

	// Grafana: datasource and dashboards, through the stack's mounts.
	gr := mountAll(t, service(t, p, "grafana"))
	var ds struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name, Type, UID, Access, URL string
			IsDefault                    bool           `yaml:"isDefault"`
			JSONData                     map[string]any `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	strictYAML(t, filepath.Join(gr, "etc/grafana/provisioning/datasources/prometheus.yml"), &ds)
	if len(ds.Datasources) != 1 || ds.Datasources[0].Type != "prometheus" || ds.Datasources[0].URL != "http://prometheus:9090" {
		t.Errorf("Grafana datasources %+v: want the stack's Prometheus", ds.Datasources)
	}
	var dp struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name, Folder, Type string
			DisableDeletion    bool `yaml:"disableDeletion"`
			AllowUIUpdates     bool `yaml:"allowUiUpdates"`
			Options            struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	strictYAML(t, filepath.Join(gr, "etc/grafana/provisioning/dashboards/soakd.yml"), &dp)
	if len(dp.Providers) != 1 {
		t.Fatalf("Grafana dashboard providers %+v", dp.Providers)
	}
	for _, f := range []string{"soak.json", "capacity.json"} {
		if _, err := os.Stat(filepath.Join(gr, dp.Providers[0].Options.Path, f)); err != nil {
			t.Errorf("Grafana's provider path %s has no %s: %v", dp.Providers[0].Options.Path, f, err)
		}
	}
	home := service(t, p, "grafana").Environment["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
	if home == nil {
		t.Error("Grafana has no home dashboard")
	} else if _, err := os.Stat(filepath.Join(gr, *home)); err != nil {
		t.Errorf("Grafana's home dashboard: %v", err)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// mountAll lays out a service's bind mounts under a temp dir, each at its
// target path (symlinked to its source), and returns that root.
func mountAll(t *testing.T, s types.ServiceConfig) string {
	t.Helper()
	root := t.TempDir()
	for _, v := range s.Volumes {
		if v.Type != types.VolumeTypeBind {
			continue
		}
		if _, err := os.Stat(v.Source); err != nil {
			t.Errorf("%s mounts %s, which is missing: %v", s.Name, v.Source, err)
			continue
		}
		dst := filepath.Join(root, v.Target)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(v.Source, dst); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// strictYAML decodes file into v; unknown keys fail.
func strictYAML(t *testing.T, file string, v any) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Errorf("%s: %v", file, err)
	}
}

// The recipe stack's soakd reads its recipe as env_file: compose's
// loader gives it the environment soakd --env-file gives the same file
// under the same environment: (which wins over the file in both), and
// soakd's configuration in it is valid.
func TestComposeRecipe(t *testing.T) {
	t.Parallel()
	load := func(opts ...cli.ProjectOptionsFn) *types.Project {
		t.Helper()
		opts = append([]cli.ProjectOptionsFn{cli.WithWorkingDirectory("compose"), cli.WithEnv(nil), cli.WithResolvedPaths(true)}, opts...)
		o, err := cli.NewProjectOptions([]string{"compose/recipe.yaml"}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		p, err := o.LoadProject(context.Background())
		if err != nil {
			t.Fatalf("recipe.yaml: %v", err)
		}
		return p
	}
	p := load()
	sk := service(t, p, "soakd")
	if len(sk.Command) != 1 || sk.Command[0] != "sweep" {
		t.Errorf("soakd runs %v, want sweep", sk.Command)
	}
	// The files and the explicit environment, as the compose file says them.
	raw := service(t, load(cli.WithoutEnvironmentResolution), "soakd")
	if len(raw.EnvFiles) == 0 {
		t.Fatal("soakd has no env_file")
	}
	environ := map[string]string{}
	for k, v := range raw.Environment {
		environ[k] = *v
	}
	args := []string{"sweep"}
	for _, f := range raw.EnvFiles {
		if filepath.Dir(f.Path) != mustAbs(t, "../examples") {
			t.Errorf("env_file %s is no recipe of examples/", f.Path)
		}
		args = append(args, "--env-file", f.Path)
	}
	rest, ours, err := soakdcli.EnvFiles(args, environ, io.Discard)
	if err != nil || !slices.Equal(rest, []string{"sweep"}) {
		t.Fatalf("soakd --env-file: %v, args left %q", err, rest)
	}
	theirs := map[string]string{}
	for k, v := range sk.Environment {
		theirs[k] = *v
	}
	if !maps.Equal(ours, theirs) {
		t.Errorf("soakd --env-file reads\n%v\ncompose reads\n%v", ours, theirs)
	}
	if ours["SOAKD_CPU_TARGET"] != environ["SOAKD_CPU_TARGET"] || !strings.Contains(ours["SOAKD_CPU_TARGET"], "@timescaledb:") {
		t.Errorf("the target is %q, not environment:'s", ours["SOAKD_CPU_TARGET"])
	}
	if !slices.ContainsFunc(settings.Of(&config.Config{}, config.EnvPrefix), func(s settings.Setting) bool { return s.Key == "SOAKD_SWEEP_GRID" }) {
		t.Skip("soakd sweep has no SOAKD_SWEEP_GRID yet, which the recipe sets: its configuration cannot be checked")
	}
	checkSoakdEnv(t, "recipe soakd", soakdEnv(t, p, sk))
}

// exitMargin is how long soakd may take to exit after its SHUTDOWN_GRACE:
// writes still in flight are cancelled (a PostgreSQL cancel waits up to
// 1 s for the server), the sinks closed and the summary written.
const exitMargin = 5 * time.Second

// shutdownGrace is SOAKD_SHUTDOWN_GRACE as soakd reads it from env.
func shutdownGrace(t *testing.T, where string, env map[string]string) time.Duration {
	t.Helper()
	p := plugins.All()
	cfg, err := config.Load(env, p.Sources)
	if err = cfg.Check(p, err); err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	return cfg.ShutdownGrace
}

// docker compose stop (and down) give soakd the time its SHUTDOWN_GRACE
// gives writes in flight, and the time to write its summary after, before
// they kill it: compose's default is 10 s, soakd's grace 30 s, and a
// target that stalls holds soakd that long.
func TestComposeStopGraceCoversShutdownGrace(t *testing.T) {
	t.Parallel()
	p := loadCompose(t)
	sk := service(t, p, "soakd")
	grace := shutdownGrace(t, "compose soakd", soakdEnv(t, p, sk))
	stop := 10 * time.Second // docker's default
	if sk.StopGracePeriod != nil {
		stop = time.Duration(*sk.StopGracePeriod)
	}
	if stop < grace+exitMargin {
		t.Errorf("soakd: stop_grace_period %v, SOAKD_SHUTDOWN_GRACE %v: compose kills soakd before writes in flight finish "+
			"and its summary is written; want at least %v", stop, grace, grace+exitMargin)
	}
}
