package daemon

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// latencyBuckets are the classic buckets exposed next to the native
// histogram, for Prometheus servers without native histogram support:
// 100 µs to 1 min.
var latencyBuckets = []float64{
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
}

// Metrics holds soakd's metric families. Names and labels are a contract
// with dashboards and alert rules (see DESIGN.md); do not change them.
type Metrics struct {
	targetRate *prometheus.GaugeVec
	rows       *prometheus.CounterVec
	values     *prometheus.CounterVec
	ops        *prometheus.CounterVec
	errors     *prometheus.CounterVec
	dropped    *prometheus.CounterVec
	bytes      *prometheus.CounterVec
	response   *prometheus.HistogramVec
	service    *prometheus.HistogramVec
	lag        *prometheus.GaugeVec
	inflight   *prometheus.GaugeVec
	workers    *prometheus.GaugeVec
}

// NewMetrics creates soakd's metrics and registers them, with the Go and
// process collectors and soakd_build_info, on reg.
func NewMetrics(reg prometheus.Registerer, version string) *Metrics {
	hist := func(name, help string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:                            name,
			Help:                            help,
			Buckets:                         latencyBuckets,
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  160,
			NativeHistogramMinResetDuration: 0,
		}, []string{"workload", "op"})
	}
	m := &Metrics{
		targetRate: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "soakd_target_rate",
			Help: "Current target rate in rows/s or ops/s (0 in max mode)."}, []string{"workload"}),
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soakd_rows_total",
			Help: "Rows acknowledged by the target."}, []string{"workload"}),
		values: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soakd_values_total",
			Help: "Field values acknowledged by the target."}, []string{"workload"}),
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soakd_ops_total",
			Help: "Batches (series) or key-value operations by outcome."}, []string{"workload", "op", "result"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soakd_errors_total",
			Help: "Failed write attempts by class (timeout, connection, rejected, server, other)."}, []string{"workload", "op", "class"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soakd_dropped_total",
			Help: "Scheduled units never sent because they were later than MAX_LAG."}, []string{"workload"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "soakd_bytes_total",
			Help: "Payload bytes sent to the target."}, []string{"workload"}),
		response: hist("soakd_response_seconds", "Intended start to done, in seconds: the latency users feel, including waiting for a worker."),
		service:  hist("soakd_service_seconds", "Actual send to done, in seconds: what the target took."),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "soakd_schedule_lag_seconds",
			Help: "How far behind its schedule the workload is now, in seconds."}, []string{"workload"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "soakd_inflight",
			Help: "Writes or pipelines in flight now."}, []string{"workload"}),
		workers: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "soakd_workers",
			Help: "Configured workers."}, []string{"workload"}),
	}
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "soakd_build_info",
		Help: "Always 1; labels say which build runs."}, []string{"version", "goversion"})
	build.WithLabelValues(version, runtime.Version()).Set(1)
	reg.MustRegister(m.targetRate, m.rows, m.values, m.ops, m.errors, m.dropped, m.bytes,
		m.response, m.service, m.lag, m.inflight, m.workers, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// opMetrics are one op's series, resolved once.
type opMetrics struct {
	ok, failed        prometheus.Counter
	errors            map[sinks.Class]prometheus.Counter // error path only
	response, service prometheus.Observer
}

// workloadMetrics are one workload's series, resolved once so the hot
// path does no label lookups.
type workloadMetrics struct {
	targetRate, lag, inflight prometheus.Gauge
	rows, values, dropped     prometheus.Counter
	bytes                     prometheus.Counter
	ops                       [sources.NumOps + 1]*opMetrics // index NumOps = "write"
}

// writeOp is the slot of the series op "write" in workloadMetrics.ops.
const writeOp = sources.NumOps

func opName(i int) string {
	if i == int(writeOp) {
		return "write"
	}
	return sources.Op(i).String()
}

func (m *Metrics) forWorkload(name string, kind sources.Kind, workers int) *workloadMetrics {
	w := &workloadMetrics{
		targetRate: m.targetRate.WithLabelValues(name),
		lag:        m.lag.WithLabelValues(name),
		inflight:   m.inflight.WithLabelValues(name),
		rows:       m.rows.WithLabelValues(name),
		values:     m.values.WithLabelValues(name),
		dropped:    m.dropped.WithLabelValues(name),
		bytes:      m.bytes.WithLabelValues(name),
	}
	m.workers.WithLabelValues(name).Set(float64(workers))
	resolve := func(i int) {
		op := opName(i)
		om := &opMetrics{
			ok:       m.ops.WithLabelValues(name, op, "ok"),
			failed:   m.ops.WithLabelValues(name, op, "error"),
			response: m.response.WithLabelValues(name, op),
			service:  m.service.WithLabelValues(name, op),
			errors:   map[sinks.Class]prometheus.Counter{},
		}
		for _, c := range sinks.Classes {
			om.errors[c] = m.errors.WithLabelValues(name, op, string(c))
		}
		w.ops[i] = om
	}
	if kind == sources.KV {
		for i := 0; i < int(sources.NumOps); i++ {
			resolve(i)
		}
	} else {
		resolve(int(writeOp))
	}
	return w
}
