package daemon

import (
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Metrics exposes soakd's metric families. Names and labels are a contract
// with dashboards and alert rules (see README); do not change them.
//
// Every soakd_* value is read at scrape time from the same counts the
// summary, /status and the progress line read (phaseStats.snapshot), so
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
	wls     []*workload
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
		targetRate: d("soakd_target_rate", "Current target rate in rows/s or ops/s (0 in max mode or paused)."),
		rows:       d("soakd_rows_total", "Rows acknowledged by the target."),
		values:     d("soakd_values_total", "Field values acknowledged by the target."),
		ops:        d("soakd_ops_total", "Batches (series) or key-value operations by outcome.", "op", "result"),
		errors:     d("soakd_errors_total", "Failed attempts (writes, queries) by class (timeout, connection, rejected, server, empty, other).", "op", "class"),
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
				"in seconds, as a ratio (1 = 100 %), a count or units/s.", "threshold"),
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

// add exposes w's metrics from now on.
func (m *Metrics) add(w *workload) {
	m.mu.Lock()
	m.wls = append(m.wls, w)
	m.mu.Unlock()
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
	wls := append([]*workload(nil), m.wls...)
	m.mu.Unlock()
	for _, w := range wls {
		m.collect(ch, w)
	}
}

func (m *Metrics) collect(ch chan<- prometheus.Metric, w *workload) {
	name := w.name
	c, lat, disp := w.totals()
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, name)
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{name}, labels...)...)
	}
	rows, values := c.acked, c.values
	if w.kind != sources.Series {
		rows, values = 0, 0
	}
	counter(m.rows, rows)
	counter(m.values, values)
	counter(m.scheduled, c.scheduled)
	counter(m.failed, c.failed)
	counter(m.dropped, c.dropped)
	counter(m.bytes, c.bytes)
	gauge(m.inflightUnits, float64(c.inflight()))
	for _, op := range w.ops {
		o := &c.ops[op]
		if w.kind == sources.Queries {
			counter(m.queryRows, o.rows, opName(op))
		}
		counter(m.ops, o.ok, opName(op), "ok")
		counter(m.ops, o.failed, opName(op), "error")
		for i, cl := range sinks.Classes {
			counter(m.errors, o.errors[i], opName(op), string(cl))
		}
		ch <- histMetric(m.response, &lat[op].response, m.created, name, opName(op))
		ch <- histMetric(m.service, &lat[op].service, m.created, name, opName(op))
	}
	ch <- histMetric(m.dispatch, disp, m.created, name)
	if w.cfg.Verify > 0 {
		v := &c.verify
		counter(m.verifyChecked, v.checked)
		for k, kind := range verifyKinds {
			counter(m.verifyFailures, v.failures[k], kind.String())
		}
		counter(m.verifySkipped, v.skipped)
		ch <- histMetric(m.response, &lat[verifyOp].response, m.created, name, opName(verifyOp))
		ch <- histMetric(m.service, &lat[verifyOp].service, m.created, name, opName(verifyOp))
	}
	gauge(m.workers, float64(w.cfg.Workers))
	ready := 0.0
	if ok, _ := w.ready.get(); ok {
		ready = 1
	}
	gauge(m.ready, ready)
	// Not w.sink: closeSinks clears it while scrapes may run.
	if w.conns != nil {
		gauge(m.conns, float64(w.conns.OpenConns()))
	}
	for i, a := range controlActions {
		counter(m.controls, w.controls[i].Load(), a)
	}
	var rate, lag float64
	inflight := 0
	if ps := w.cur.Load(); ps != nil {
		rate = w.sched.Load().rateAt(w.since())
		lag = w.lagNow().Seconds()
		inflight = ps.writing()
	}
	gauge(m.targetRate, rate)
	gauge(m.lag, lag)
	gauge(m.inflight, float64(inflight))
	for _, t := range verdictsOf(w.observers, name, false) {
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

// opsFor lists the op slots a workload of kind k reports: write for
// series, every KV op, and for queries the types src issues (every type
// when it does not say).
func opsFor(k sources.Kind, src sources.Source) []int {
	switch k {
	case sources.Series:
		return []int{writeOp}
	case sources.Queries:
		var out []int
		if qs, ok := src.(interface{ QueryTypes() []sources.QueryType }); ok {
			for _, t := range qs.QueryTypes() {
				if t < sources.NumQueryTypes {
					out = append(out, queryOp0+int(t))
				}
			}
		}
		if len(out) == 0 {
			for t := range int(sources.NumQueryTypes) {
				out = append(out, queryOp0+t)
			}
		}
		return out
	}
	out := make([]int, sources.NumOps)
	for i := range out {
		out[i] = i
	}
	return out
}

// latTotals are one op's latency buckets summed over phases.
type latTotals struct{ response, service promBuckets }

// totals sums every phase's counts and latency buckets, each phase read
// in one snapshot so histogram counts agree with the op counts.
func (w *workload) totals() (counts, *[opSlots]latTotals, *promBuckets) {
	var c counts
	lat := new([opSlots]latTotals)
	disp := new(promBuckets)
	for _, ps := range w.allPhases() {
		pc := ps.snapshotThen(func(h *phaseHist) {
			for op, oh := range h.ops {
				if oh != nil {
					lat[op].response.add(&oh.response.prom)
					lat[op].service.add(&oh.service.prom)
				}
			}
			if h.dispatch != nil {
				disp.add(&h.dispatch.prom)
			}
		})
		c.add(&pc)
	}
	return c, lat, disp
}

// histMetric is a histogram with both a native (schema 3) and classic
// buckets, as a prometheus.Histogram with both configured exposes.
func histMetric(desc *prometheus.Desc, p *promBuckets, created time.Time, labels ...string) prometheus.Metric {
	native := map[int]int64{}
	for i, n := range p.native {
		if n != 0 {
			native[i+nativeMin] = n
		}
	}
	m, err := prometheus.NewConstNativeHistogram(desc, p.count, p.sum, native, nil, 0, nativeSchema, 0, created, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(desc, err)
	}
	buckets := make([]*dto.Bucket, len(latencyBuckets))
	var cum uint64
	for i, ub := range latencyBuckets {
		cum += p.classic[i]
		buckets[i] = &dto.Bucket{CumulativeCount: new(cum), UpperBound: new(ub)}
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
