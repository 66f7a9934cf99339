package daemon

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Summary is the end-of-run report (printed like TSBS and YCSB do, and
// written as JSON with --summary-json).
type Summary struct {
	Version   string            `json:"version"`
	Started   time.Time         `json:"started"`
	Seconds   float64           `json:"seconds"`
	Workloads []WorkloadSummary `json:"workloads"`
}

// WorkloadSummary is one workload's totals.
type WorkloadSummary struct {
	Name string `json:"name"`
	// Phase is run, or load for a KV load phase (LOAD=auto), which gets
	// its own entry before the run's, as YCSB reports load and run apart.
	Phase   string `json:"phase"`
	Source  string `json:"source"`
	Target  string `json:"target"` // password redacted
	Kind    string `json:"kind"`   // series or kv
	Rate    string `json:"rate"`
	Workers int    `json:"workers"`
	Batch   int    `json:"batch"`
	// Started is when the workload started (the origin of its schedule).
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	// Units are rows (series) or operations (kv) acknowledged.
	Units     int64            `json:"units"`
	UnitName  string           `json:"unit_name"`
	UnitRate  float64          `json:"units_per_second"`
	Values    int64            `json:"values,omitempty"`
	ValueRate float64          `json:"values_per_second,omitempty"`
	Bytes     int64            `json:"bytes"`
	Failed    int64            `json:"failed_units"`
	Dropped   int64            `json:"dropped_units"`
	Scheduled int64            `json:"scheduled_units"`
	Errors    map[string]int64 `json:"errors"` // failed attempts by class
	Ops       []OpSummary      `json:"ops"`
	// Prepared is false when the target never became ready (schema not
	// created, server unreachable) before the run ended.
	Prepared bool `json:"prepared"`
}

// OpSummary is the latency of one op (write, or a KV op) over the run.
type OpSummary struct {
	Op       string    `json:"op"`
	Count    int64     `json:"count"`
	PerSec   float64   `json:"per_second"`
	Response Quantiles `json:"response_seconds"`
	Service  Quantiles `json:"service_seconds"`
}

// Failed reports whether some workload had failures and not one success,
// which makes the run exit 1.
func (s *Summary) Failed() error {
	for _, w := range s.Workloads {
		if !w.Prepared {
			return fmt.Errorf("workload %s: the target never became ready", w.Name)
		}
		if w.Units == 0 && (w.Failed > 0 || errsTotal(w.Errors) > 0) {
			return fmt.Errorf("workload %s: %w (%d failed attempts)", w.Name, errNoProgress, errsTotal(w.Errors))
		}
	}
	return nil
}

func errsTotal(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func summarize(version string, started time.Time, wls []*workload) *Summary {
	s := &Summary{Version: version, Started: started, Seconds: time.Since(started).Seconds()}
	for _, w := range wls {
		w.ready.mu.Lock()
		prepared := w.ready.prepared
		w.ready.mu.Unlock()
		phases := w.allPhases()
		if len(phases) == 0 { // never started: report the workload with zeros
			phases = []*phaseStats{{name: "run", rate: w.cfg.Rate, begin: mono()}}
		}
		for _, ps := range phases {
			secs := ps.elapsed().Seconds()
			ws := WorkloadSummary{
				Name: w.name, Phase: ps.name, Source: w.cfg.Source, Target: w.target, Kind: w.kind.String(),
				Rate: ps.rate.String(), Workers: w.cfg.Workers, Batch: w.batchSize, Seconds: secs,
				Started: monoBase.Add(ps.begin), Prepared: prepared,
				Units: ps.acked.Load(), UnitName: unitName(w.kind), Values: ps.valuesN.Load(),
				Bytes: ps.bytesN.Load(), Failed: ps.failedU.Load(), Dropped: ps.dropped.Load(),
				Scheduled: ps.scheduled.Load(), Errors: map[string]int64{},
			}
			for i, c := range sinks.Classes {
				ws.Errors[string(c)] = ps.errCount[i].Load()
			}
			if secs > 0 {
				ws.UnitRate = float64(ws.Units) / secs
				ws.ValueRate = float64(ws.Values) / secs
			}
			for op := range ps.rec {
				resp := ps.rec[op].response.summary()
				if resp.Count == 0 {
					continue
				}
				o := OpSummary{Op: opName(op), Count: resp.Count, Response: resp, Service: ps.rec[op].service.summary()}
				if secs > 0 {
					o.PerSec = float64(resp.Count) / secs
				}
				ws.Ops = append(ws.Ops, o)
			}
			s.Workloads = append(s.Workloads, ws)
		}
	}
	return s
}

// WriteText prints the summary for people.
func (s *Summary) WriteText(out io.Writer) {
	for _, w := range s.Workloads {
		verb := "loaded"
		if w.Kind == sources.KV.String() {
			verb = "ran"
		}
		phase := ""
		if w.Phase != "run" {
			phase = " (" + w.Phase + " phase)"
		}
		fmt.Fprintf(out, "\n== workload %s%s: source %s -> %s, rate %s, %d workers, batch %d\n",
			w.Name, phase, w.Source, w.Target, w.Rate, w.Workers, w.Batch)
		fmt.Fprintf(out, "%s %d %s in %.1fsec with %d workers (mean rate %.2f %s/sec)\n",
			verb, w.Units, w.UnitName, w.Seconds, w.Workers, w.UnitRate, w.UnitName)
		if w.Values > 0 {
			fmt.Fprintf(out, "values: %d (mean rate %.2f values/sec)\n", w.Values, w.ValueRate)
		}
		fmt.Fprintf(out, "scheduled %d, failed %d, dropped %d (later than MAX_LAG), bytes sent %d\n",
			w.Scheduled, w.Failed, w.Dropped, w.Bytes)
		var errs []string
		for _, c := range sinks.Classes {
			if n := w.Errors[string(c)]; n > 0 {
				errs = append(errs, fmt.Sprintf("%s %d", c, n))
			}
		}
		if len(errs) == 0 {
			fmt.Fprintln(out, "errors: none")
		} else {
			fmt.Fprintf(out, "errors (failed attempts): %s\n", strings.Join(errs, ", "))
		}
		for _, o := range w.Ops {
			for _, l := range []struct {
				name string
				q    Quantiles
			}{{"response", o.Response}, {"service", o.Service}} {
				q := l.q
				fmt.Fprintf(out, "%-6s %-8s - Takes(s): %.1f, Count: %d, OPS: %.1f, Avg(us): %.0f, Min(us): %.0f, Max(us): %.0f, 50th(us): %.0f, 90th(us): %.0f, 99th(us): %.0f, 99.9th(us): %.0f\n",
					strings.ToUpper(o.Op), l.name, w.Seconds, q.Count, o.PerSec, q.Mean*1e6, q.Min*1e6, q.Max*1e6, q.P50*1e6, q.P90*1e6, q.P99*1e6, q.P999*1e6)
			}
		}
	}
}

// WriteJSONFile writes the summary as indented JSON.
func (s *Summary) WriteJSONFile(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("cannot write summary: %w", err)
	}
	return nil
}

// Workload returns the summary of workload name's phase (run or load), or
// nil.
func (s *Summary) Workload(name, phase string) *WorkloadSummary {
	for i := range s.Workloads {
		if w := &s.Workloads[i]; w.Name == name && w.Phase == phase {
			return w
		}
	}
	return nil
}
