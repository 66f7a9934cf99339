package dashboards

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/prometheus/promql/parser"
	"go.uber.org/zap"
	"go.yaml.in/yaml/v3"

	"github.com/soakd/soakd/capacity"
	"github.com/soakd/soakd/cmd/soakd/plugins"
	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/readback"
	"github.com/soakd/soakd/serve"
	"github.com/soakd/soakd/targetwatch"
)

// promQL is one PromQL expression of a dashboard or a rule file.
type promQL struct {
	file, where string // e.g. soak.json, panel "Error ratio" target B
	panel       string // the panel's title (dashboards)
	expr        string // as written, with Grafana's variables
	variable    bool   // a template variable's label_values selector
	rule        bool
}

// ruleFiles are the rule files the tests read, relative to this package.
var ruleFiles = []string{"../deploy/prometheus/soakd.rules.yml"}

var labelValues = regexp.MustCompile(`^label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)

// allPromQL reads every PromQL expression in the committed dashboards
// (panel targets, rows' panels, annotations, variables) and rule files.
func allPromQL(t *testing.T) []promQL {
	t.Helper()
	var out []promQL
	files, err := filepath.Glob("*.json")
	if err != nil || len(files) < 2 {
		t.Fatalf("dashboards: %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			UID    string      `json:"uid"`
			Panels []jsonPanel `json:"panels"`
			Annot  struct {
				List []struct {
					Name string `json:"name"`
					Expr string `json:"expr"`
				} `json:"list"`
			} `json:"annotations"`
			Templating struct {
				List []struct {
					Type  string `json:"type"`
					Name  string `json:"name"`
					Query any    `json:"query"`
				} `json:"list"`
			} `json:"templating"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if d.UID == "" || len(d.Panels) == 0 {
			t.Fatalf("%s: no uid or panels", f)
		}
		var walk func(ps []jsonPanel)
		walk = func(ps []jsonPanel) {
			for _, p := range ps {
				walk(p.Panels)
				for _, tg := range p.Targets {
					out = append(out, promQL{file: f, where: "panel " + strconvQuote(p.Title) + " target " + tg.RefID,
						panel: p.Title, expr: tg.Expr})
				}
			}
		}
		walk(d.Panels)
		for _, a := range d.Annot.List {
			if a.Expr != "" {
				out = append(out, promQL{file: f, where: "annotation " + strconvQuote(a.Name), expr: a.Expr})
			}
		}
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			q, _ := v.Query.(string)
			m := labelValues.FindStringSubmatch(q)
			if m == nil {
				t.Fatalf("%s: variable %s: query %q is not label_values(selector, label)", f, v.Name, q)
			}
			out = append(out, promQL{file: f, where: "variable " + v.Name, expr: m[1], variable: true})
		}
	}
	for _, f := range ruleFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var rf struct {
			Groups []struct {
				Rules []struct {
					Alert string `yaml:"alert"`
					Expr  string `yaml:"expr"`
				} `yaml:"rules"`
			} `yaml:"groups"`
		}
		if err := yaml.Unmarshal(b, &rf); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, g := range rf.Groups {
			for _, r := range g.Rules {
				out = append(out, promQL{file: filepath.Base(f), where: "alert " + r.Alert, expr: r.Expr, rule: true})
			}
		}
	}
	return out
}

type jsonPanel struct {
	Title   string      `json:"title"`
	Panels  []jsonPanel `json:"panels"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

func strconvQuote(s string) string { return `"` + s + `"` }

// grafanaVars replaces Grafana's variables with values Prometheus takes.
func grafanaVars(window string) *strings.Replacer {
	return strings.NewReplacer("$__rate_interval", window, "$__interval", window, "$__range", "5m",
		"$job", ".*", "$workload", ".*")
}

func parse(t *testing.T, q promQL) parser.Expr {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVars("1m").Replace(q.expr))
	if err != nil {
		t.Fatalf("%s: %s: %q does not parse: %v", q.file, q.where, q.expr, err)
	}
	return e
}

// Every expression parses as PromQL (Grafana's variables replaced).
func TestQueriesParse(t *testing.T) {
	t.Parallel()
	qs := allPromQL(t)
	for _, q := range qs {
		parse(t, q)
	}
	t.Logf("%d expressions", len(qs))
}

// metricNames returns the metric names an expression selects.
func metricNames(t *testing.T, e parser.Expr) []string {
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == "__name__" {
					name = m.Value
				}
			}
			if name == "" {
				t.Errorf("%s selects no metric name", vs)
			}
			names = append(names, name)
		}
		return nil
	})
	return names
}

// liveMetrics runs soakd (a series and a KV workload on built-in targets)
// and returns its families by name, as its registry gathers them once
// every workload has exported its labelled families.
func liveMetrics(t *testing.T) map[string]dto.MetricType {
	t.Helper()
	env := map[string]string{
		"SOAKD_WORKLOADS": "iot,kv", "SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0", "SOAKD_LOG_LEVEL": "error",
		"SOAKD_IOT_RATE": "1000", "SOAKD_IOT_BATCH_SIZE": "10", "SOAKD_KV_RATE": "1000", "SOAKD_KV_RECORDS": "100",
		"SOAKD_CONTROL_TOKEN": "t",
		// Read-back checks on the built-in KV target, so their counters are exported.
		"SOAKD_KV_VERIFY": "0.1",
		// A capacity search on iot, so its gauges are exported too.
		"SOAKD_CAPACITY_WORKLOAD": "iot", "SOAKD_CAPACITY_START": "1000", "SOAKD_CAPACITY_WARMUP": "0s", "SOAKD_CAPACITY_HOLD": "5m",
		// The built-in target's figures cannot be read, but a process's
		// can: this one's, so that the target's memory and CPU time are
		// exported.
		"SOAKD_IOT_WATCH_INTERVAL": "1s", "SOAKD_IOT_WATCH_PROCESS": strconv.Itoa(os.Getpid()),
	}
	reg := prometheus.NewRegistry()
	stop := runSoakd(t, env, reg, nil)
	defer stop()
	deadline := time.Now().Add(20 * time.Second)
	for {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		known := map[string]dto.MetricType{}
		workloads := map[string]bool{}
		for _, mf := range mfs {
			known[mf.GetName()] = mf.GetType()
			if mf.GetName() == "soakd_ops_total" {
				for _, m := range mf.GetMetric() {
					for _, l := range m.GetLabel() {
						if l.GetName() == "workload" {
							workloads[l.GetValue()] = true
						}
					}
				}
			}
		}
		_, verify := known["soakd_verify_checked_total"]
		_, watched := known["soakd_target_cpu_seconds_total"]
		if workloads["iot"] && workloads["kv"] && verify && watched {
			// Storage is read through a target's sink alone, which a
			// built-in target has not: those families are known by what
			// the watch describes (the real-Prometheus test reads them
			// from PostgreSQL).
			for _, name := range targetwatchDescribes(t) {
				if _, ok := known[name]; !ok {
					known[name] = dto.MetricType_GAUGE
				}
			}
			return known
		}
		if time.Now().After(deadline) {
			t.Fatalf("soakd exported no ops for both workloads in 20 s: %v", workloads)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// targetwatchDescribes are the names of the families a Watcher registers.
func targetwatchDescribes(t *testing.T) []string {
	t.Helper()
	d := &describing{Registerer: prometheus.NewRegistry()}
	targetwatch.New(zap.NewNop(), targetwatch.Options{Metrics: d})
	if len(d.names) == 0 {
		t.Fatal("the target watch describes no metric")
	}
	return d.names
}

// describing is a Registerer that notes the names of the families the
// collectors registered on it describe.
type describing struct {
	prometheus.Registerer
	names []string
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

func (d *describing) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	for desc := range ch {
		if m := fqName.FindStringSubmatch(desc.String()); m != nil {
			d.names = append(d.names, m[1])
		}
	}
	return d.Registerer.Register(c)
}

// runSoakd runs soakd in this process with environ until stop is called;
// l, if not nil, serves its HTTP endpoints.
func runSoakd(t *testing.T, environ map[string]string, reg *prometheus.Registry, l net.Listener) (stop func()) {
	t.Helper()
	p := plugins.All()
	cfg, err := config.Load(environ, p.Sources)
	if err = cfg.Check(p, err); err != nil {
		t.Fatalf("soakd config: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		api := serve.New(serve.Options{Config: cfg, Version: "test", Registry: reg, Listener: l})
		watch := targetwatch.New(zap.NewNop(), targetwatch.Options{Metrics: reg})
		deps := daemon.Deps{Logger: zap.NewNop(), Plugins: p, Version: "test",
			Observers: []daemon.Observer{readback.New(zap.NewNop()), watch, api}}
		// With SOAKD_CAPACITY_WORKLOAD set, soakd capacity searches that
		// workload (the capacity dashboard's search panels need one).
		if environ["SOAKD_CAPACITY_WORKLOAD"] != "" {
			_, _, err = capacity.Run(ctx, cfg, environ, deps, capacity.Options{Metrics: reg})
		} else {
			_, err = daemon.Run(ctx, cfg, deps)
		}
		done <- err
	}()
	return func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("soakd: %v", err)
		}
	}
}

// Every metric a dashboard or rule selects is one soakd exports, as a
// running soakd's registry says (histogram series by their _bucket, _sum
// and _count names too). up is Prometheus's own.
func TestQueriesUseExportedMetrics(t *testing.T) {
	t.Parallel()
	known := liveMetrics(t)
	used := map[string]bool{}
	for _, q := range allPromQL(t) {
		for _, name := range metricNames(t, parse(t, q)) {
			used[name] = true
			if !exported(known, name) {
				t.Errorf("%s: %s uses %s, which soakd does not export", q.file, q.where, name)
			}
		}
	}
	var names []string
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("metrics used: %s", strings.Join(names, " "))
}

func exported(known map[string]dto.MetricType, name string) bool {
	if name == "up" {
		return true
	}
	if _, ok := known[name]; ok {
		return true
	}
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suf); ok {
			typ, ok := known[base]
			if ok && (typ == dto.MetricType_HISTOGRAM || (suf != "_bucket" && typ == dto.MetricType_SUMMARY)) {
				return true
			}
		}
	}
	return false
}

// notSummed are the only selectors a panel may aggregate with something
// other than sum: a process's start time (min: the youngest process), the
// schedule lag (max: the furthest-behind process) and the count of
// processes whose readiness is summed; a capacity search's step and
// knee (max: every shard of a search shows the same, as its rates are
// totals over shards); and the target's own figures (max: every shard
// reads the same target).
var notSummed = map[string]parser.ItemType{
	"process_start_time_seconds": parser.MIN,
	"soakd_schedule_lag_seconds": parser.MAX,
	"soakd_ready":                parser.COUNT,
	"soakd_capacity_knee_rate":   parser.MAX,
	"soakd_capacity_step":        parser.MAX,
	// Every shard of a workload reads the same target: its figures are
	// taken once, not added up.
	"soakd_target_memory_bytes":               parser.MAX,
	"soakd_target_storage_bytes":              parser.MAX,
	"soakd_target_cpu_seconds_total":          parser.MAX,
	"soakd_target_keys":                       parser.MAX,
	"soakd_target_evictions_total":            parser.MAX,
	"soakd_target_memory_fragmentation_ratio": parser.MAX,
	"soakd_target_active_series":              parser.MAX,
	"soakd_target_discarded_total":            parser.MAX,
}

// Every selector of every panel and annotation is aggregated with an
// explicit by (so the result's labels are known and the processes of a
// sharded run add up), with sum unless notSummed says otherwise.
func TestPanelQueriesAggregate(t *testing.T) {
	t.Parallel()
	for _, q := range allPromQL(t) {
		if q.variable || q.rule {
			continue
		}
		parser.Inspect(parse(t, q), func(n parser.Node, path []parser.Node) error {
			vs, ok := n.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			var agg *parser.AggregateExpr
			for i := len(path) - 1; i >= 0; i-- {
				if a, ok := path[i].(*parser.AggregateExpr); ok {
					agg = a
					break
				}
			}
			switch {
			case agg == nil:
				t.Errorf("%s: %s: %s is not aggregated", q.file, q.where, vs)
			case agg.Without || len(agg.Grouping) == 0:
				t.Errorf("%s: %s: %s: want an aggregation by explicit labels", q.file, q.where, agg)
			case agg.Op != parser.SUM && notSummed[vs.Name] != agg.Op:
				t.Errorf("%s: %s: %s is aggregated with %s, want sum", q.file, q.where, vs, agg.Op)
			}
			return nil
		})
	}
}
