// Package sweep runs one workload closed loop over a grid of settings
// (soakd sweep), each point through the engine as a run of its own, and
// reports each point's throughput, the best, and a Universal
// Scalability Law fit along WORKERS.
package sweep

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/daemon/pace"
	"github.com/soakd/soakd/internal/sysinfo"
	runreport "github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sources"
)

// Point is one WORKERS × BATCH_SIZE (PIPELINE) setting, over its runs.
type Point struct {
	Workers int       `json:"workers"`
	Batch   int       `json:"batch"`
	Rates   []float64 `json:"units_per_second"` // one per run
	Min     float64   `json:"min"`
	Median  float64   `json:"median"`
	Max     float64   `json:"max"`
	P99     float64   `json:"p99_seconds"` // median over runs of the response p99 (every op)
	Failed  int64     `json:"failed_units"`
	Best    bool      `json:"best,omitempty"`
	// Falls is set when the median is below the one with fewer workers
	// at the same batch size: more workers made it slower.
	Falls bool `json:"throughput_falls,omitempty"`
	// TargetMemoryBytes is the peak of the target's memory readings
	// taken during the point's runs, and TargetCPUCores the cores the
	// target used over them: the CPU seconds between the point's first
	// and last readings over the time between them. Either is left out
	// when the target watch is off or read too little (a point shorter
	// than WATCH_INTERVAL has one reading at most: no CPU figure).
	TargetMemoryBytes *float64 `json:"target_memory_bytes,omitempty"`
	TargetCPUCores    *float64 `json:"target_cpu_cores,omitempty"`
}

// USL is the Universal Scalability Law fitted to throughput against
// workers (at the best batch size): X(N) = λN / (1 + σ(N−1) + κN(N−1)).
type USL struct {
	Batch    int       `json:"batch"`
	Lambda   float64   `json:"lambda"`       // throughput of one worker without contention
	Sigma    float64   `json:"sigma"`        // contention
	Kappa    float64   `json:"kappa"`        // coherency (crosstalk)
	R2       float64   `json:"r_squared"`    // of the fitted throughputs
	PeakN    float64   `json:"peak_workers"` // where X(N) peaks; +Inf without coherency
	PeakX    float64   `json:"peak_units_per_second"`
	Poor     bool      `json:"poor_fit"`
	Note     string    `json:"note"`
	Workers  []int     `json:"workers"`
	Measured []float64 `json:"measured"`
}

// At is the fitted throughput with n workers.
func (u USL) At(n float64) float64 {
	return u.Lambda * n / (1 + u.Sigma*(n-1) + u.Kappa*n*(n-1))
}

// Result is a sweep's outcome.
type Result struct {
	Workload    string             `json:"workload"`
	Unit        string             `json:"unit"`       // rows or ops
	BatchName   string             `json:"batch_name"` // BATCH_SIZE or PIPELINE
	Environment sysinfo.Info       `json:"environment"`
	Settings    config.SweepConfig `json:"settings"`
	Run         []string           `json:"run_settings"`
	Points      []Point            `json:"points"`
	USL         *USL               `json:"usl,omitempty"`
	Outcome     string             `json:"outcome"`
}

// Sweep runs the workload SOAKD_SWEEP_WORKLOAD names, alone, closed loop
// (RATE=max), once per run for every WORKERS × BATCH_SIZE (PIPELINE)
// point, REPEATS times, and reports the throughput of each, the best, where
// more workers made it slower, and a Universal Scalability Law fit. It
// stops early, with what it has, when ctx ends.
func Run(ctx context.Context, cfg *config.Config, environ map[string]string, d daemon.Deps, o Options) (*Result, error) {
	if err := cfg.CheckSweep(); err != nil {
		return nil, err
	}
	sc := cfg.Sweep
	orig := sc.Swept(cfg)
	e := d.Plugins.Sources.Lookup(orig.Source)
	kv := e != nil && e.Kind != sources.Series // KV and queries: PIPELINE units per batch
	res := &Result{Workload: orig.Name, Unit: "rows", BatchName: "BATCH_SIZE", Environment: sysinfo.Collect(d.Version),
		Settings: sc, Run: config.SettingValues(cfg, environ)}
	if kv {
		res.Unit, res.BatchName = runreport.UnitName(e.Kind), "PIPELINE"
	}
	log := d.Logger.With(zap.String("workload", orig.Name))
	total := len(sc.Workers) * len(sc.Batch) * sc.Repeats
	n := 0
	for _, b := range sc.Batch {
		for _, w := range sc.Workers {
			pt := Point{Workers: w, Batch: b}
			var p99s []float64
			tw := watchPoint(o.Target, orig.Name)
			for r := 0; r < sc.Repeats && ctx.Err() == nil; r++ {
				n++
				one := *cfg
				wc := *orig
				wc.Workers, wc.Rate, wc.ResetFirst = w, pace.Rate{Max: true}, sc.Reset
				if kv {
					wc.Pipeline = b
				} else {
					wc.BatchSize = b
				}
				// Every point is bounded, whatever the source says of its
				// data set: a source can be Sized yet endless (seq's Total
				// is 0 then), and a finite set may take longer than the
				// user gave a point.
				wc.Duration = sc.Duration
				one.Workload, one.Listen, one.Duration = []*config.Workload{&wc}, config.ListenOff, 0
				dd := d
				dd.Logger = zap.NewNop()
				sum, err := daemon.Run(ctx, &one, dd)
				if err != nil {
					tw.stop()
					return res, err
				}
				ws := sum.Workload(wc.Name, "run")
				if ws == nil || ws.Seconds <= 0 || ws.Failure != nil {
					reason := "no run phase"
					if ws != nil && ws.Failure != nil {
						reason = ws.Failure.Reason
					}
					tw.stop()
					return res, fmt.Errorf("sweep point workers %d, %s %d: %s", w, res.BatchName, b, reason)
				}
				rate := ws.UnitRate
				pt.Rates = append(pt.Rates, rate)
				pt.Failed += ws.Failed
				var p99 float64
				for _, o := range ws.Ops {
					p99 = max(p99, o.Response.P99)
				}
				p99s = append(p99s, p99)
				log.Info(fmt.Sprintf("sweep %d/%d: workers %d, %s %d: %.0f %s/s, p99 %s",
					n, total, w, res.BatchName, b, rate, res.Unit, pace.FormatSeconds(p99)))
			}
			pt.TargetMemoryBytes, pt.TargetCPUCores = tw.stop()
			if len(pt.Rates) == 0 {
				break
			}
			pt.Min, pt.Median, pt.Max = minMedMax(pt.Rates)
			_, pt.P99, _ = minMedMax(p99s)
			res.Points = append(res.Points, pt)
		}
	}
	res.mark()
	res.USL = fitUSL(res.Points)
	res.Outcome = "done"
	if ctx.Err() != nil {
		res.Outcome = "stopped before every point ran"
	}
	return res, nil
}

// Options are what a sweep reads besides its configuration.
type Options struct {
	// Target, when set, reads the target's own figures (the target
	// watch, which must also be among the Deps' observers to read
	// anything): each point then says the target's memory and the
	// cores it used.
	Target TargetFigures
}

// TargetFigures is what the sweep reads of a workload's target: its
// memory, the latest reading, and its CPU time (user + system, seconds,
// a counter); ok is false while there is no reading. The target watch
// (targetwatch.Watcher) is one.
type TargetFigures interface {
	Memory(workload string) (v float64, at time.Time, ok bool)
	CPU(workload string) (seconds float64, at time.Time, ok bool)
}

// pointWatch follows the target's readings over one point. The watch
// reads on its own schedule (WATCH_INTERVAL) and keeps only the latest
// reading, so the point polls it more often than that to see each one;
// readings from before the point (the last of the point before stays
// visible until the next run opens) are not the point's.
type pointWatch struct {
	tf       TargetFigures
	name     string
	since    time.Time
	done     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	mem      float64
	memOK    bool
	cpu0     float64
	cpu0At   time.Time
	cpu1     float64
	cpu1At   time.Time
	cpuCount int
}

// pollEvery is how often a point looks for a new reading: well under
// the shortest WATCH_INTERVAL worth setting, and cheap (a map look-up).
const pollEvery = 200 * time.Millisecond

// watchPoint starts following the target's readings; nil without tf.
func watchPoint(tf TargetFigures, name string) *pointWatch {
	if tf == nil {
		return nil
	}
	pw := &pointWatch{tf: tf, name: name, since: time.Now(), done: make(chan struct{})}
	pw.wg.Add(1)
	go func() {
		defer pw.wg.Done()
		t := time.NewTicker(pollEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				pw.poll()
			case <-pw.done:
				return
			}
		}
	}()
	return pw
}

// poll takes in the watch's latest readings if they are the point's.
func (pw *pointWatch) poll() {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if v, at, ok := pw.tf.Memory(pw.name); ok && !at.Before(pw.since) && finite(v) && (!pw.memOK || v > pw.mem) {
		pw.mem, pw.memOK = v, true
	}
	v, at, ok := pw.tf.CPU(pw.name)
	if !ok || at.Before(pw.since) || !finite(v) {
		return
	}
	switch {
	case pw.cpuCount == 0:
		pw.cpu0, pw.cpu0At, pw.cpuCount = v, at, 1
	case at.After(pw.cpu1At) && at.After(pw.cpu0At):
		pw.cpu1, pw.cpu1At, pw.cpuCount = v, at, 2
	}
}

// stop ends the following and gives the point's figures, nil those not
// known: never 0 for a figure the watch did not read.
func (pw *pointWatch) stop() (memory, cores *float64) {
	if pw == nil {
		return nil, nil
	}
	close(pw.done)
	pw.wg.Wait()
	pw.poll() // the reading the last run ended with
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.memOK {
		m := pw.mem
		memory = &m
	}
	if pw.cpuCount == 2 && pw.cpu1 >= pw.cpu0 {
		c := (pw.cpu1 - pw.cpu0) / pw.cpu1At.Sub(pw.cpu0At).Seconds()
		if finite(c) {
			cores = &c
		}
	}
	return memory, cores
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// mark flags the best point and those where more workers were slower.
func (r *Result) mark() {
	best := -1
	for i := range r.Points {
		p := &r.Points[i]
		if best < 0 || p.Median > r.Points[best].Median {
			best = i
		}
		for j := range r.Points {
			q := &r.Points[j]
			if q.Batch == p.Batch && q.Workers < p.Workers && p.Median < q.Median {
				p.Falls = true
			}
		}
	}
	if best >= 0 {
		r.Points[best].Best = true
	}
}

func minMedMax(v []float64) (lo, med, hi float64) {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0, 0, 0
	}
	med = s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[0], med, s[len(s)-1]
}

// fitUSL fits the USL to the medians against workers at the batch size
// of the best point. N/X(N) = (1 + σ(N−1) + κN(N−1))/λ is linear in 1,
// N−1 and N(N−1), so ordinary least squares gives 1/λ, σ/λ and κ/λ.
func fitUSL(points []Point) *USL {
	var batch int
	for _, p := range points {
		if p.Best {
			batch = p.Batch
		}
	}
	u := &USL{Batch: batch}
	for _, p := range points {
		if p.Batch == batch && p.Median > 0 {
			u.Workers = append(u.Workers, p.Workers)
			u.Measured = append(u.Measured, p.Median)
		}
	}
	if len(u.Workers) < 3 {
		u.Poor, u.Note = true, "fewer than 3 worker counts at this batch size: no fit"
		return u
	}
	// Normal equations of y = a + b(N−1) + c·N(N−1), y = N/X.
	var m [3][4]float64
	for i, n := range u.Workers {
		N := float64(n)
		row := [3]float64{1, N - 1, N * (N - 1)}
		y := N / u.Measured[i]
		for r := 0; r < 3; r++ {
			for c := 0; c < 3; c++ {
				m[r][c] += row[r] * row[c]
			}
			m[r][3] += row[r] * y
		}
	}
	coef, ok := solve3(m)
	if !ok || !(coef[0] > 0) {
		u.Poor, u.Note = true, "the measurements do not determine a fit"
		return u
	}
	u.Lambda, u.Sigma, u.Kappa = 1/coef[0], coef[1]/coef[0], coef[2]/coef[0]
	if u.Sigma < 0 || u.Kappa < 0 {
		u.Poor = true
		u.Note = fmt.Sprintf("a negative coefficient (σ %.3g, κ %.3g): throughput grew faster than linearly, the fit does not describe it", u.Sigma, u.Kappa)
	}
	var ssRes, ssTot, mean float64
	for _, x := range u.Measured {
		mean += x / float64(len(u.Measured))
	}
	for i, n := range u.Workers {
		d := u.Measured[i] - u.At(float64(n))
		ssRes += d * d
		ssTot += (u.Measured[i] - mean) * (u.Measured[i] - mean)
	}
	if ssTot > 0 {
		u.R2 = 1 - ssRes/ssTot
	}
	u.PeakN = math.Inf(1)
	if u.Kappa > 0 && u.Sigma < 1 {
		u.PeakN = math.Sqrt((1 - u.Sigma) / u.Kappa)
		u.PeakX = u.At(u.PeakN)
	}
	lo, hi := float64(u.Workers[0]), float64(u.Workers[len(u.Workers)-1])
	switch {
	case u.Poor:
	case len(u.Workers) == 3:
		u.Poor, u.Note = true, "three worker counts determine the three coefficients exactly, whatever they are: measure more to test the fit"
	case u.R2 < 0.9:
		u.Poor, u.Note = true, fmt.Sprintf("R² %.2f: the law describes these measurements poorly", u.R2)
	case math.IsInf(u.PeakN, 1):
		u.Poor, u.Note = true, "no coherency cost measured: the fit predicts no peak, measure more workers to find one"
	case u.PeakN < lo || u.PeakN > hi:
		u.Poor = true
		u.Note = fmt.Sprintf("the predicted peak (%.1f workers) is outside the measured range %g..%g: measure further to confirm it", u.PeakN, lo, hi)
	default:
		u.Note = fmt.Sprintf("throughput peaks at about %.1f workers (%.0f units/s)", u.PeakN, u.PeakX)
	}
	return u
}

// solve3 solves a 3×3 linear system given as an augmented matrix.
func solve3(m [3][4]float64) ([3]float64, bool) {
	for c := 0; c < 3; c++ {
		p := c
		for r := c + 1; r < 3; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[p][c]) {
				p = r
			}
		}
		if math.Abs(m[p][c]) < 1e-300 {
			return [3]float64{}, false
		}
		m[c], m[p] = m[p], m[c]
		for r := 0; r < 3; r++ {
			if r == c {
				continue
			}
			f := m[r][c] / m[c][c]
			for k := c; k < 4; k++ {
				m[r][k] -= f * m[c][k]
			}
		}
	}
	return [3]float64{m[0][3] / m[0][0], m[1][3] / m[1][1], m[2][3] / m[2][2]}, true
}
