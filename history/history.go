// Package history keeps what the web console and the HTML report draw:
// every second, on the engine's clock, it samples each workload (rates,
// latency quantiles of that second, errors, drops, lag, concurrency, the
// target's own memory and storage) and soakd's own CPU and memory,
// through daemon.Handle, daemon.Phase and package readmodel (each
// workload's totals), and serves it at /history as JSON.
package history

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/readmodel"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sinks"
)

// History is what the web console and the HTML report draw: every second
// the engine's tick samples each workload (rates, latency quantiles of
// that second, errors, drops, lag, concurrency, and the target's own
// memory and storage when WatchTarget gave it where to read them) and
// soakd's own CPU and memory. It is read from the same counts as /metrics and the summary
// (readmodel.Totals, which sums every phase's counts).
//
// Its memory is bounded whatever the run's length. Each series keeps two
// tiers:
//
//   - recent: the last Recent (15 min) at full resolution (1 s), a
//     ring of recentPoints samples;
//   - whole: the whole run in at most wholePoints points, each the mean,
//     min and max of step seconds. When it fills, neighbouring points are
//     merged pairwise and step doubles, so it always holds between
//     wholePoints/2 and wholePoints points (plus the one being gathered):
//     an hour at 8 s per point, a week at 1024 s.
//
// A workload with F fields (26 for a series workload, 54 for KV) thus
// costs about F × (4·recentPoints + 12·wholePoints) bytes plus a few KiB
// (0.32 MB and 0.66 MB), for an hour as for a week; see
// BenchmarkHistoryHour.
//
// Latency quantiles of one second are read from the difference of the
// native histogram buckets between two ticks (report.Buckets), so the
// charts cost no extra histogram; the summary's quantiles still come
// from the HDR buckets (report.Recorder).
//
// A History is created before the run (New) and passed to it among
// daemon.Deps.Observers; it is read with Snapshot (or served as JSON,
// ServeHTTP) at any time, also after the run has ended. It is safe for
// concurrent use.
type History struct {
	mu      sync.Mutex
	started time.Time // the origin of the samples' times
	last    float64   // seconds since started of the last sample
	wls     []*wlHistory
	proc    *series
	procLag procSample
	target  TargetFigures // nil: the target's figures are not known
	done    bool
}

// TargetFigures are where the history reads each workload's target's own
// figures: the last reading of its memory, of the storage its data
// takes, and of a stat (sinks.Stats: its keys, its active series), ok
// false while there is none (targetwatch.Watcher has them).
// Declared here so the history depends on what it reads, not on the
// watch.
type TargetFigures interface {
	Memory(workload string) (v float64, at time.Time, ok bool)
	Storage(workload string) (v float64, at time.Time, ok bool)
	Stat(workload, name string) (v float64, at time.Time, ok bool)
}

// WatchTarget makes every sample from now on read each workload's
// target_memory_bytes, target_storage_bytes, target_keys and
// target_active_series from tf; without it (or
// with nil) they are NaN, as a figure tf does not know. Call it before
// the run starts.
func (h *History) WatchTarget(tf TargetFigures) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.target = tf
}

// Recent is how far back the recent tier keeps every second.
const Recent = 15 * time.Minute

const (
	recentPoints = int(Recent / time.Second)
	wholePoints  = 720
)

// Fields of every workload's series, in order; then the dispatch delay's
// quantiles and, for each op the workload reports, ops per second and
// the response and service quantiles (see workloadFields).
var baseFields = []string{
	"target_rate", "achieved_rate", "values_per_second", "bytes_per_second",
	"failed_per_second", "dropped_per_second", "lag_seconds", "inflight", "workers",
	"target_memory_bytes", "target_storage_bytes", "target_keys", "target_active_series",
}

// ProcessFields are the fields of soakd's own series.
var ProcessFields = []string{"cpu_cores", "rss_bytes", "heap_bytes", "goroutines"}

// quantile levels of every latency field: p50, p99, p99.9.
var histQs = [...]struct {
	q    float64
	name string
}{{0.5, "p50"}, {0.99, "p99"}, {0.999, "p99_9"}}

func workloadFields(ops []string) []string {
	f := append([]string(nil), baseFields...)
	for _, c := range sinks.Classes {
		f = append(f, "errors_"+string(c)+"_per_second")
	}
	for _, q := range histQs {
		f = append(f, "dispatch_"+q.name+"_seconds")
	}
	for _, op := range ops {
		f = append(f, op+"_per_second")
		for _, kind := range []string{"response", "service"} {
			for _, q := range histQs {
				f = append(f, op+"_"+kind+"_"+q.name+"_seconds")
			}
		}
	}
	return f
}

// wlHistory is one workload's series and what the next sample needs.
type wlHistory struct {
	w      *daemon.Handle
	ops    []string // the ops the workload reports (Handle.ReportedOps)
	s      *series
	prev   totals
	prevAt float64
	phases []*daemon.Phase
	starts []float64 // seconds since started at which each phase began
	vals   []float32
}

// totals are what a sample keeps for the next: the workload's totals,
// the latency buckets of its ops only.
type totals struct {
	acked, values, bytes, failed, dropped int64
	errors                                [len(sinks.Classes)]int64
	ops                                   []opTotals // one per op of wlHistory.ops
	disp                                  report.Buckets
}

type opTotals struct {
	ok, failed        int64
	response, service report.Buckets
}

// New returns an empty history; the run attaches its workloads.
func New() *History {
	return &History{started: time.Now(), proc: newSeries(len(ProcessFields))}
}

// Opened does nothing: the history attaches the workloads once all are
// open (Started).
func (h *History) Opened(*daemon.Handle) error { return nil }

// Started starts sampling ws; the history's clock starts now.
func (h *History) Started(_ context.Context, ws []*daemon.Handle, _ func(error)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.started = time.Now()
	h.wls = nil
	for _, w := range ws {
		ops := w.ReportedOps()
		n := len(workloadFields(ops))
		h.wls = append(h.wls, &wlHistory{w: w, ops: ops, s: newSeries(n), vals: make([]float32, n),
			prev: totals{ops: make([]opTotals, len(ops))}})
	}
	h.procLag = readProc()
	h.procLag.at = 0
}

// PhaseBegun does nothing: a sample finds the phases begun since the
// last.
func (h *History) PhaseBegun(*daemon.Handle, *daemon.Phase) {}

// PhaseEnded does nothing (see PhaseBegun).
func (h *History) PhaseEnded(*daemon.Handle, *daemon.Phase, string) {}

// Tick records one point of every series.
func (h *History) Tick(at time.Time, _ bool) { h.sample(at) }

// Finished takes a last sample (after the workloads ended) and stops
// sampling, so a report written later shows the run's end.
func (h *History) Finished(bool) {
	h.sample(time.Now())
	h.mu.Lock()
	h.done = true
	h.mu.Unlock()
}

// sample records one point of every series at now.
func (h *History) sample(now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return
	}
	t := now.Sub(h.started).Seconds()
	h.last = t
	for _, wh := range h.wls {
		wh.sample(t, h.started, h.target)
	}
	p := readProc()
	p.at = t
	cores := float32(math.NaN())
	if dt := p.at - h.procLag.at; dt > 0 && !math.IsNaN(p.cpu) {
		cores = float32((p.cpu - h.procLag.cpu) / dt)
	}
	h.procLag = p
	h.proc.add(t, []float32{cores, float32(p.rss), float32(p.heap), float32(p.goroutines)})
}

func (wh *wlHistory) sample(t float64, started time.Time, tf TargetFigures) {
	w := wh.w
	for _, p := range w.Phases()[len(wh.phases):] {
		wh.phases = append(wh.phases, p)
		wh.starts = append(wh.starts, max(0, p.Began().Sub(started).Seconds()))
	}
	c := readmodel.Totals(w)
	dt := t - wh.prevAt
	v := wh.vals
	for i := range v {
		v[i] = float32(math.NaN())
	}
	per := func(cur, prev int64) float32 {
		if dt <= 0 {
			return float32(math.NaN())
		}
		return float32(float64(cur-prev) / dt)
	}
	prev := &wh.prev
	// Before the first phase and after the last there is no target.
	target, lag := math.NaN(), 0.0
	inflight := 0
	if p := w.Phase(); p != nil && !w.Finished() {
		target, _ = w.TargetRate()
		lag = w.Lag().Seconds()
		inflight = p.Writing()
	}
	v[0], v[1], v[2], v[3] = float32(target), per(c.Acked, prev.acked), per(c.Values, prev.values), per(c.Bytes, prev.bytes)
	v[4], v[5], v[6], v[7], v[8] = per(c.Failed, prev.failed), per(c.Dropped, prev.dropped), float32(lag), float32(inflight), float32(w.Config().Workers)
	if tf != nil {
		// A figure not read yet (or no longer current) stays NaN: a gap,
		// not a zero.
		if m, _, ok := tf.Memory(w.Name()); ok {
			v[9] = float32(m)
		}
		if s, _, ok := tf.Storage(w.Name()); ok {
			v[10] = float32(s)
		}
		for i, name := range [...]string{sinks.StatKeys, sinks.StatActiveSeries} {
			if s, _, ok := tf.Stat(w.Name(), name); ok {
				v[11+i] = float32(s)
			}
		}
	}
	i := len(baseFields)
	for k := range sinks.Classes {
		v[i] = per(c.Errors[k], prev.errors[k])
		i++
	}
	disp := c.Dispatch()
	i = putQuantiles(v, i, &disp, &prev.disp)
	for j, op := range wh.ops {
		o := c.Op(op)
		v[i] = per(o.OK, prev.ops[j].ok)
		i++
		i = putQuantiles(v, i, &o.Response, &prev.ops[j].response)
		i = putQuantiles(v, i, &o.Service, &prev.ops[j].service)
		prev.ops[j] = opTotals{ok: o.OK, failed: o.Failed, response: o.Response, service: o.Service}
	}
	prev.acked, prev.values, prev.bytes, prev.failed, prev.dropped = c.Acked, c.Values, c.Bytes, c.Failed, c.Dropped
	prev.errors, prev.disp = c.Errors, disp
	wh.prevAt = t
	wh.s.add(t, v)
}

// putQuantiles writes the p50, p99 and p99.9 of what was recorded between
// prev and cur into v from index i, NaN when nothing was.
func putQuantiles(v []float32, i int, cur, prev *report.Buckets) int {
	d := cur.Since(prev)
	for _, q := range histQs {
		v[i] = float32(d.Quantile(q.q))
		i++
	}
	return i
}

// series is a set of fields sampled together, in two tiers. Both keep
// each point's fields next to each other, so a sample writes one short
// run of memory: the tiers' pages are touched as points fill them (a
// page holds about 19 points of a KV workload), not one page per field
// from the first sample on, which cost the first seconds of a run some
// 200 page faults and kept the whole 0.66 MB resident at once.
type series struct {
	nf int
	// recent: a ring of the last recentPoints samples.
	rt    []float64 // seconds since origin
	rv    []float32 // rv[i*nf+f]
	rHead int       // next slot
	rN    int
	// whole: closed points of step samples each, and the open one.
	step     int
	wt       []float64
	wm       []float32 // mean, wm[i*nf+f]
	wlo, whi []float32
	wN       int
	acc      accum
}

// accum gathers the samples of the whole tier's open point.
type accum struct {
	t0      float64
	samples int
	sum     []float64
	cnt     []int32
	lo, hi  []float32
}

func newSeries(nf int) *series {
	s := &series{nf: nf, step: 1,
		rt: make([]float64, recentPoints), rv: make([]float32, nf*recentPoints),
		wt: make([]float64, wholePoints), wm: make([]float32, nf*wholePoints),
		wlo: make([]float32, nf*wholePoints), whi: make([]float32, nf*wholePoints),
		acc: accum{sum: make([]float64, nf), cnt: make([]int32, nf), lo: make([]float32, nf), hi: make([]float32, nf)},
	}
	s.acc.reset()
	return s
}

func (a *accum) reset() {
	a.samples = 0
	for f := range a.sum {
		a.sum[f], a.cnt[f] = 0, 0
		a.lo[f], a.hi[f] = float32(math.Inf(1)), float32(math.Inf(-1))
	}
}

// point returns the open point's mean, min and max of field f (NaN when
// it has no finite value).
func (a *accum) point(f int) (mean, lo, hi float32) {
	if a.cnt[f] == 0 {
		nan := float32(math.NaN())
		return nan, nan, nan
	}
	return float32(a.sum[f] / float64(a.cnt[f])), a.lo[f], a.hi[f]
}

func (s *series) add(t float64, v []float32) {
	s.rt[s.rHead] = t
	copy(s.rv[s.rHead*s.nf:(s.rHead+1)*s.nf], v)
	s.rHead = (s.rHead + 1) % recentPoints
	s.rN = min(s.rN+1, recentPoints)

	a := &s.acc
	if a.samples == 0 {
		a.t0 = t
	}
	a.samples++
	for f, x := range v {
		if math.IsNaN(float64(x)) {
			continue
		}
		a.sum[f] += float64(x)
		a.cnt[f]++
		a.lo[f], a.hi[f] = min(a.lo[f], x), max(a.hi[f], x)
	}
	if a.samples < s.step {
		return
	}
	i := s.wN
	s.wt[i] = a.t0
	for f := 0; f < s.nf; f++ {
		s.wm[i*s.nf+f], s.wlo[i*s.nf+f], s.whi[i*s.nf+f] = a.point(f)
	}
	s.wN++
	a.reset()
	if s.wN == wholePoints {
		// Merge now, so every point gathered from here on spans the new
		// step and pairs always merge points of equal span.
		s.compact()
	}
}

// compact merges the whole tier's points pairwise and doubles its step.
func (s *series) compact() {
	half := s.wN / 2
	for i := 0; i < half; i++ {
		a, b := 2*i, 2*i+1
		s.wt[i] = s.wt[a]
		// Point i is written from points 2i and 2i+1, never before it:
		// in place, in order.
		for f := 0; f < s.nf; f++ {
			o, oa, ob := i*s.nf+f, a*s.nf+f, b*s.nf+f
			s.wm[o] = meanOf(s.wm[oa], s.wm[ob])
			s.wlo[o] = nanMin(s.wlo[oa], s.wlo[ob])
			s.whi[o] = nanMax(s.whi[oa], s.whi[ob])
		}
	}
	s.wN = half
	s.step *= 2
}

func isNaN32(x float32) bool { return x != x }

func meanOf(a, b float32) float32 {
	switch {
	case isNaN32(a):
		return b
	case isNaN32(b):
		return a
	}
	return (a + b) / 2
}

func nanMin(a, b float32) float32 {
	if isNaN32(a) {
		return b
	}
	if isNaN32(b) {
		return a
	}
	return min(a, b)
}

// nanMax is nanMin mirrored: -NaN is NaN, and -min(-a, -b) = max(a, b).
func nanMax(a, b float32) float32 { return -nanMin(-a, -b) }

// bytes is the memory the series holds.
func (s *series) bytes() int {
	return 8*(len(s.rt)+len(s.wt)) + 4*(len(s.rv)+len(s.wm)+len(s.wlo)+len(s.whi)) + s.nf*(8+4+4+4)
}

// Doc is a history's content, as /history serves it (JSON) and the
// console and the report draw it.
type Doc struct {
	Started time.Time `json:"started"`
	// Seconds is the time of the last sample, since Started.
	Seconds   float64    `json:"seconds"`
	Process   Series     `json:"process"`
	Workloads []Workload `json:"workloads"`
}

// Workload is one workload's series and phases.
type Workload struct {
	Name    string `json:"name"`
	Source  string `json:"source"`
	Target  string `json:"target"` // password redacted
	Kind    string `json:"kind"`
	Unit    string `json:"unit"`
	Workers int    `json:"workers"`
	Batch   int    `json:"batch"`
	State   string `json:"state"` // starting, running, paused, stopping, done
	// Waiting is what the workload waits for while starting, as in
	// /status.
	Waiting *report.StatusWaiting `json:"waiting,omitempty"`
	// Ops are the ops the workload has latency for so far.
	Ops    []string `json:"ops"`
	Phases []Phase  `json:"phases"`
	Series
}

// Phase is one phase: when it started and ended (seconds since
// Doc.Started; End 0 while it runs) and its counts now, from the
// same snapshot /status reads.
type Phase struct {
	Name      string  `json:"name"`
	Rate      string  `json:"rate"`
	Start     float64 `json:"start_seconds"`
	Seconds   float64 `json:"seconds"`
	StoppedBy string  `json:"stopped_by,omitempty"`
	report.StatusCounts
}

// Series are a set of fields over time, in the two tiers.
type Series struct {
	Fields []string `json:"fields"`
	// Recent is the last Recent, one point per sample.
	Recent Tier `json:"recent"`
	// Whole is the whole run, one point per Step seconds, with each
	// field's min and max over the point's span.
	Whole Tier `json:"whole"`
}

// Tier is one tier of a series: times and, per field, values (V[f][i]
// at T[i]; NaN, null in JSON, where nothing was measured).
type Tier struct {
	Step float64  `json:"step_seconds"`
	T    Values   `json:"t"`
	V    []Values `json:"v"`
	Lo   []Values `json:"lo,omitempty"`
	Hi   []Values `json:"hi,omitempty"`
}

// Field returns field name's values in t, or nil.
func (s *Series) Field(t *Tier, name string) []float64 {
	for i, f := range s.Fields {
		if f == name && i < len(t.V) {
			return t.V[i]
		}
	}
	return nil
}

// Band returns field name's min and max in t (the whole tier), or nils.
func (s *Series) Band(t *Tier, name string) (lo, hi []float64) {
	for i, f := range s.Fields {
		if f == name && i < len(t.Lo) && i < len(t.Hi) {
			return t.Lo[i], t.Hi[i]
		}
	}
	return nil, nil
}

// Values are numbers that encode NaN as JSON null.
type Values []float64

// MarshalJSON writes NaN as null, other values in their shortest form.
func (v Values) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 2+8*len(v))
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			b = append(b, "null"...)
			continue
		}
		b = strconv.AppendFloat(b, x, 'g', 7, 64)
	}
	return append(b, ']'), nil
}

func (s *series) snapshot(fields []string) Series {
	out := Series{Fields: fields}
	r := &out.Recent
	r.Step = 1
	r.T = make(Values, s.rN)
	start := (s.rHead - s.rN + recentPoints) % recentPoints
	for i := 0; i < s.rN; i++ {
		r.T[i] = s.rt[(start+i)%recentPoints]
	}
	r.V = make([]Values, s.nf)
	for f := 0; f < s.nf; f++ {
		r.V[f] = make(Values, s.rN)
		for i := 0; i < s.rN; i++ {
			r.V[f][i] = float64(s.rv[(start+i)%recentPoints*s.nf+f])
		}
	}
	w := &out.Whole
	w.Step = float64(s.step)
	n := s.wN
	open := s.acc.samples > 0
	if open {
		n++
	}
	w.T = make(Values, n)
	copy(w.T, s.wt[:s.wN])
	if open {
		w.T[s.wN] = s.acc.t0
	}
	w.V, w.Lo, w.Hi = make([]Values, s.nf), make([]Values, s.nf), make([]Values, s.nf)
	for f := 0; f < s.nf; f++ {
		m, lo, hi := make(Values, n), make(Values, n), make(Values, n)
		for i := 0; i < s.wN; i++ {
			o := i*s.nf + f
			m[i], lo[i], hi[i] = float64(s.wm[o]), float64(s.wlo[o]), float64(s.whi[o])
		}
		if open {
			a, l, h := s.acc.point(f)
			m[s.wN], lo[s.wN], hi[s.wN] = float64(a), float64(l), float64(h)
		}
		w.V[f], w.Lo[f], w.Hi[f] = m, lo, hi
	}
	return out
}

// Snapshot returns the history so far.
func (h *History) Snapshot() Doc {
	h.mu.Lock()
	defer h.mu.Unlock()
	doc := Doc{Started: h.started, Seconds: h.last, Process: h.proc.snapshot(ProcessFields)}
	for _, wh := range h.wls {
		w := wh.w
		cfg := w.Config()
		wd := Workload{
			Name: w.Name(), Source: cfg.Source, Target: cfg.Sink.Redacted, Kind: w.Kind().String(),
			Unit: report.UnitName(w.Kind()), Workers: cfg.Workers, Batch: w.BatchSize(), State: w.State(),
			Series: wh.s.snapshot(workloadFields(wh.ops)),
		}
		if wd.State == "starting" {
			wd.Waiting = w.Waiting()
		}
		for i, p := range wh.phases {
			wd.Phases = append(wd.Phases, Phase{Name: p.Name(), Rate: p.Rate(), Start: wh.starts[i],
				Seconds: p.Elapsed().Seconds(), StoppedBy: p.StoppedBy(), StatusCounts: readmodel.Status(p)})
		}
		for j, op := range wh.ops {
			if wh.prev.ops[j].ok > 0 || wh.prev.ops[j].failed > 0 {
				wd.Ops = append(wd.Ops, op)
			}
		}
		doc.Workloads = append(doc.Workloads, wd)
	}
	return doc
}

// ServeHTTP serves the history so far as JSON: GET /history.
func (h *History) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_ = json.NewEncoder(w).Encode(h.Snapshot())
}

// Bytes is the memory the history's series hold, with what each
// workload keeps of its previous sample.
func (h *History) Bytes() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.proc.bytes()
	for _, wh := range h.wls {
		n += wh.s.bytes() + 4*len(wh.vals) + int(unsafe.Sizeof(wh.prev)) + len(wh.prev.ops)*int(unsafe.Sizeof(opTotals{}))
	}
	return n
}
