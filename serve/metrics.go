package serve

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/readmodel"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Metrics exposes soakd's metric families. Names and labels are a contract
// with dashboards and alert rules (see README); do not change them.
//
// Every soakd_* value is read at scrape time from the same counts the
// summary, /status and the progress line read (readmodel.Metrics sums
// each phase's daemon.Snapshot, read in one go), so
// within one scrape, per workload,
//
//	soakd_scheduled_total = acknowledged + soakd_failed_total + soakd_dropped_total + soakd_inflight_units
//
// where acknowledged is soakd_rows_total for series workloads and the sum
// of soakd_ops_total{result="ok"} for KV and query workloads, and each
// latency histogram's count equals its op's soakd_ops_total{result="ok"}.
type Metrics struct {
	targetRate, rows, values, ops, errors, dropped, scheduled, failed,
	inflightUnits, bytes, response, service, dispatch, lag, inflight, workers, ready, controls, conns,
	thresholdOK, thresholdValue, queryRows *prometheus.Desc
	verifyChecked, verifyFailures, verifySkipped *prometheus.Desc

	created time.Time
	mu      sync.Mutex
	wls     []*daemon.Handle
	// changes counts the changes made through POST /control, per
	// workload, by action (controlActions).
	changes map[*daemon.Handle]*[len(controlActions)]atomic.Int64
}

// NewMetrics creates soakd's metrics and registers them, with the Go and
// process collectors and soakd_build_info, on reg.
func NewMetrics(reg prometheus.Registerer, version string) *Metrics {
	w := []string{"workload"}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, append(w, labels...), nil)
	}
	m := &Metrics{
		created:    time.Now(),
		changes:    map[*daemon.Handle]*[len(controlActions)]atomic.Int64{},
		targetRate: d("soakd_target_rate", "Current target rate in rows/s or ops/s (0 in max mode or paused)."),
		rows:       d("soakd_rows_total", "Rows acknowledged by the target."),
		values:     d("soakd_values_total", "Field values acknowledged by the target."),
		ops:        d("soakd_ops_total", "Batches (series) or key-value operations by outcome.", "op", "result"),
		errors:     d("soakd_errors_total", "Failed attempts (writes, queries) by class (timeout, connection, rejected, server, out_of_order, empty, other).", "op", "class"),
		dropped:    d("soakd_dropped_total", "Scheduled units never sent: later than MAX_LAG, or still queued when writes were cut at shutdown."),
		scheduled:  d("soakd_scheduled_total", "Units (rows or ops) the schedule released: acknowledged + failed + dropped + in flight."),
		failed:     d("soakd_failed_total", "Units (rows or ops) in batches that failed for good, after retries."),
		inflightUnits: d("soakd_inflight_units",
			"Units scheduled but not yet acknowledged, failed or dropped: queued for a worker or being written."),
		bytes:    d("soakd_bytes_total", "Payload bytes sent to the target."),
		response: d("soakd_response_seconds", "Intended start to done, in seconds: the latency users feel, including waiting for a worker.", "op"),
		service:  d("soakd_service_seconds", "Actual send to done, in seconds: what the target took.", "op"),
		dispatch: d("soakd_dispatch_delay_seconds",
			"Intended start to first send of each unit, in seconds: waiting for a free worker plus soakd's own lateness."),
		lag:      d("soakd_schedule_lag_seconds", "How far behind its schedule the workload is now, in seconds."),
		inflight: d("soakd_inflight", "Writes or pipelines in flight now."),
		workers:  d("soakd_workers", "Configured workers."),
		conns: d("soakd_target_connections",
			"Connections open to the workload's target now: one per worker when healthy; growth at a steady WORKERS is a leak."),
		ready:    d("soakd_ready", "1 when the workload's target is prepared and answers its ping (what /readyz says), else 0."),
		controls: d("soakd_control_total", "Changes made through POST /control: a new rate, pause or resume.", "action"),
		thresholdOK: d("soakd_threshold_ok",
			"1 while the threshold passes so far, 0 once it fails (a windowed one stays failed once a window failed).", "threshold"),
		thresholdValue: d("soakd_threshold_value",
			"The threshold's latest measurement: the run phase so far, the last window (@W) or the change since the early window (drift.); "+
				"in seconds, as a ratio (1 = 100 %), a count, units/s or bytes (target.).", "threshold"),
		queryRows: d("soakd_query_rows_total",
			"Rows returned by acknowledged queries (query workloads), by query type.", "op"),
		verifyChecked: d("soakd_verify_checked_total",
			"Acknowledged rows or records read back and compared with what the seed says they hold (VERIFY)."),
		verifyFailures: d("soakd_verify_failures_total",
			"Read-back checks that failed: kind missing (not stored), mismatch (other values), duplicate (stored more than once).", "kind"),
		verifySkipped: d("soakd_verify_skipped_total",
			"Rows or records picked for read-back but not checked: the checker was behind, a read failed, or the run ended first."),
	}
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "soakd_build_info",
		Help: "Always 1; labels say which build runs."}, []string{"version", "goversion"})
	build.WithLabelValues(version, runtime.Version()).Set(1)
	reg.MustRegister(m, build,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Add exposes w's metrics from now on.
func (m *Metrics) Add(w *daemon.Handle) {
	m.mu.Lock()
	m.wls = append(m.wls, w)
	m.changes[w] = new([len(controlActions)]atomic.Int64)
	m.mu.Unlock()
}

// controlled counts a change made to w through POST /control.
func (m *Metrics) controlled(w *daemon.Handle, action int) {
	m.mu.Lock()
	c := m.changes[w]
	m.mu.Unlock()
	if c != nil {
		c[action].Add(1)
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.targetRate, m.rows, m.values, m.ops, m.errors, m.dropped,
		m.scheduled, m.failed, m.inflightUnits, m.bytes, m.response, m.service, m.dispatch, m.lag, m.inflight, m.workers,
		m.ready, m.controls, m.conns, m.thresholdOK, m.thresholdValue, m.queryRows,
		m.verifyChecked, m.verifyFailures, m.verifySkipped} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	wls := append([]*daemon.Handle(nil), m.wls...)
	controls := make([]*[len(controlActions)]atomic.Int64, len(wls))
	for i, w := range wls {
		controls[i] = m.changes[w]
	}
	m.mu.Unlock()
	for i, w := range wls {
		m.collect(ch, w, controls[i])
	}
}

func (m *Metrics) collect(ch chan<- prometheus.Metric, w *daemon.Handle, controls *[len(controlActions)]atomic.Int64) {
	name := w.Name()
	kind := w.Kind()
	c := readmodel.Metrics(w)
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, name)
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{name}, labels...)...)
	}
	rows, values := c.Acked, c.Values
	if kind != sources.Series {
		rows, values = 0, 0
	}
	counter(m.rows, rows)
	counter(m.values, values)
	counter(m.scheduled, c.Scheduled)
	counter(m.failed, c.Failed)
	counter(m.dropped, c.Dropped)
	counter(m.bytes, c.Bytes)
	gauge(m.inflightUnits, float64(c.InFlight))
	for _, op := range w.ReportedOps() {
		o := c.Op(op)
		if kind == sources.Queries {
			counter(m.queryRows, c.QueryRows(op), op)
		}
		counter(m.ops, o.OK, op, "ok")
		counter(m.ops, o.Failed, op, "error")
		errs := c.OpErrors(op)
		for i, cl := range sinks.Classes {
			counter(m.errors, errs[i], op, string(cl))
		}
		ch <- HistogramMetric(m.response, &o.Response, m.created, name, op)
		ch <- HistogramMetric(m.service, &o.Service, m.created, name, op)
	}
	disp := c.Dispatch()
	ch <- HistogramMetric(m.dispatch, &disp, m.created, name)
	if w.Verifies() {
		v := &c.Verify
		counter(m.verifyChecked, v.Checked)
		for _, f := range [...]struct {
			kind sources.Verdict
			n    int64
		}{{sources.Missing, v.Missing}, {sources.Mismatch, v.Mismatch}, {sources.Duplicate, v.Duplicate}} {
			counter(m.verifyFailures, f.n, f.kind.String())
		}
		counter(m.verifySkipped, v.Skipped)
		o := c.Op(daemon.VerifyOp)
		ch <- HistogramMetric(m.response, &o.Response, m.created, name, daemon.VerifyOp)
		ch <- HistogramMetric(m.service, &o.Service, m.created, name, daemon.VerifyOp)
	}
	gauge(m.workers, float64(w.Config().Workers))
	ready := 0.0
	if w.Ready() {
		ready = 1
	}
	gauge(m.ready, ready)
	if n, ok := w.OpenConns(); ok {
		gauge(m.conns, float64(n))
	}
	for i, a := range controlActions {
		var n int64
		if controls != nil {
			n = controls[i].Load()
		}
		counter(m.controls, n, a)
	}
	var rate, lag float64
	inflight := 0
	if p := w.Phase(); p != nil {
		rate, _ = w.TargetRate()
		lag = w.Lag().Seconds()
		inflight = p.Writing()
	}
	gauge(m.targetRate, rate)
	gauge(m.lag, lag)
	gauge(m.inflight, float64(inflight))
	for _, t := range w.Verdicts() {
		ok := 0.0
		if t.OK {
			ok = 1
		}
		ch <- prometheus.MustNewConstMetric(m.thresholdOK, prometheus.GaugeValue, ok, name, t.Threshold)
		if t.Current != nil {
			ch <- prometheus.MustNewConstMetric(m.thresholdValue, prometheus.GaugeValue, *t.Current, name, t.Threshold)
		}
	}
}

// HistogramMetric is b as a histogram with both native (schema 3) and
// classic buckets, as a prometheus.Histogram with both configured exposes
// it: what soakd_response_seconds and its kin export.
func HistogramMetric(desc *prometheus.Desc, b *report.Buckets, created time.Time, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstNativeHistogram(desc, b.Count(), b.Sum(), b.Native(), nil, 0, report.NativeSchema, 0, created, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(desc, err)
	}
	upper, cum := b.Classic()
	buckets := make([]*dto.Bucket, len(upper))
	for i, ub := range upper {
		buckets[i] = &dto.Bucket{CumulativeCount: new(cum[i]), UpperBound: new(ub)}
	}
	return withClassic{m, buckets}
}

// withClassic adds classic buckets to a const native histogram.
type withClassic struct {
	prometheus.Metric
	buckets []*dto.Bucket
}

func (h withClassic) Write(out *dto.Metric) error {
	if err := h.Metric.Write(out); err != nil {
		return err
	}
	out.Histogram.Bucket = h.buckets
	return nil
}
