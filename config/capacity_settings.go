package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/soakd/soakd/pace"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/thresholds"
)

// CapacityConfig holds the capacity search's settings (SOAKD_CAPACITY_*,
// flags --capacity-*), read by soakd capacity.
type CapacityConfig struct {
	Workload  string        `env:"WORKLOAD" help:"soakd capacity: the workload whose rate is searched (the others hold their RATE); default: the first of SOAKD_WORKLOADS"`
	Start     float64       `env:"START" envDefault:"1000" help:"soakd capacity: the first step's rate (units/s, the total over shards)"`
	Step      Growth        `env:"STEP" envDefault:"x1.5" help:"soakd capacity: how the rate grows per step: +N adds N units/s, xF multiplies by F"`
	Hold      time.Duration `env:"HOLD" envDefault:"30s" help:"soakd capacity: how long each step is judged"`
	Settle    time.Duration `env:"SETTLE" envDefault:"5s" help:"soakd capacity: time after each rate change that is not judged (the queue and the target adjust)"`
	Warmup    time.Duration `env:"WARMUP" envDefault:"10s" help:"soakd capacity: time at START before the first step (not judged)"`
	Max       float64       `env:"MAX" envDefault:"10000000" help:"soakd capacity: the highest rate tried (SOAKD_MAX_RATE caps it too)"`
	SLOP99    time.Duration `env:"SLO_P99" envDefault:"100ms" help:"soakd capacity: a step passes when its response p99 (from the intended start) is at most this"`
	SLOOp     string        `env:"SLO_OP" help:"soakd capacity: judge only this op's p99 (write, read, update, insert, scan, rmw); default: every op together"`
	SLOErrors Ratio         `env:"SLO_ERRORS" envDefault:"0.1%" help:"soakd capacity: the highest share of failed units a passing step may have"`
	Refine    int           `env:"REFINE" envDefault:"3" help:"soakd capacity: steps of bisection between the last passing and the first failing rate"`
	Out       string        `env:"OUT" envDefault:"capacity" help:"soakd capacity: report files are OUT.md, OUT.csv, OUT.json and the charts OUT-rate and OUT-latency, with the target watch OUT-target-memory and OUT-target-cpu (.svg, .png)"`
}

// Growth is how the capacity search raises the rate: by an amount (+N) or
// a factor (xF).
type Growth struct {
	Add, Factor float64
	text        string
}

// UnmarshalText parses +N or xF (also *F).
func (g *Growth) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	var err error
	switch {
	case strings.HasPrefix(s, "+"):
		g.Add, err = strconv.ParseFloat(s[1:], 64)
		if err != nil || !(g.Add > 0) || g.Add > pace.MaxRate {
			return fmt.Errorf("%q: want +N with 0 < N <= %g units/s, or xF with 1 < F <= 1000", s, pace.MaxRate)
		}
	case strings.HasPrefix(s, "x"), strings.HasPrefix(s, "*"):
		g.Factor, err = strconv.ParseFloat(s[1:], 64)
		if err != nil || !(g.Factor > 1) || g.Factor > 1000 {
			return fmt.Errorf("%q: want xF with 1 < F <= 1000, or +N with 0 < N <= %g", s, pace.MaxRate)
		}
	default:
		return fmt.Errorf("%q: want +N (add N units/s per step) or xF (multiply by F)", s)
	}
	g.text = s
	return nil
}

// MarshalText returns the setting as written.
func (g Growth) MarshalText() ([]byte, error) { return []byte(g.text), nil }

// Next is the rate after r.
func (g Growth) Next(r float64) float64 {
	if g.Factor > 0 {
		return r * g.Factor
	}
	return r + g.Add
}

// Ratio is a share written as 0.1% or 0.001.
type Ratio float64

// UnmarshalText parses a percentage or a fraction in [0, 1].
func (r *Ratio) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	f, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if strings.HasSuffix(s, "%") {
		f /= 100
	}
	if err != nil || f < 0 || f > 1 || math.IsNaN(f) {
		return fmt.Errorf("%q: want a share like 0.1%% or 0.001", s)
	}
	*r = Ratio(f)
	return nil
}

// MarshalText writes the share as a fraction.
func (r Ratio) MarshalText() ([]byte, error) {
	return strconv.AppendFloat(nil, float64(r), 'g', -1, 64), nil
}

// maxClimb is how many steps from CAPACITY_START to CAPACITY_MAX a STEP
// under 0.1 % of START may take.
const maxClimb = 1000

// climbSteps counts the steps from START to MAX, up to maxClimb + 1.
func climbSteps(cc *CapacityConfig) int {
	n := 0
	for r := cc.Start; r < cc.Max && n <= maxClimb; n++ {
		next := cc.Step.Next(r)
		if next <= r {
			return maxClimb + 1 // below the rate's precision: no climb at all
		}
		r = next
	}
	return n
}

// CheckCapacity reports every problem of the capacity settings (soakd
// capacity), each naming its variable. With p, a first step that would
// hold less than one of the searched workload's batches is one too.
func (c *Config) CheckCapacity(p *Plugins) error {
	errs := c.Capacity.validate(c)
	if w := c.Capacity.Searched(c); w != nil && p != nil && len(errs) == 0 {
		if e := p.Sources.Lookup(w.Source); e != nil {
			errs = append(errs, c.Capacity.checkFirstStep(w, e.Kind))
		}
	}
	return errors.Join(errs...)
}

// checkFirstStep fails when the first step, START (this process's share)
// for HOLD, is due less than two batches of w: nothing would be
// acknowledged in its judged part, and the search would end there saying
// the target does not meet the SLO at all.
func (cc *CapacityConfig) checkFirstStep(w *Workload, k sources.Kind) error {
	units, name := w.BatchUnits(k)
	share, whose := cc.Start, ""
	if n := w.Shard.Count; n > 1 {
		share /= float64(n)
		whose = fmt.Sprintf(" (this shard's %s/s)", pace.FormatRate(share))
	}
	// Two batches: one alone may come due, or be acknowledged, just
	// outside the judged part.
	if due := share * cc.Hold.Seconds(); due < 2*float64(units) {
		return cfgErr(EnvPrefix+"CAPACITY_START", "%s/s%s for CAPACITY_HOLD %v is %s units, less than two batches of %s%s=%d: a step could acknowledge nothing; raise CAPACITY_START or CAPACITY_HOLD, or lower %s%s",
			pace.FormatRate(cc.Start), whose, cc.Hold, pace.FormatRate(due), Prefix(w.Name), name, units, Prefix(w.Name), name)
	}
	return nil
}

// validate checks the capacity settings against the configuration.
func (cc *CapacityConfig) validate(c *Config) []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, cfgErr(EnvPrefix+"CAPACITY_"+key, format, args...))
	}
	w := cc.Searched(c)
	if w == nil {
		bad("WORKLOAD", "%q is not one of SOAKD_WORKLOADS (%s)", cc.Workload, strings.Join(c.Workloads, ", "))
	}
	if !(cc.Start > 0) || cc.Start > pace.MaxRate {
		bad("START", "%g: want a rate above 0 and at most %g units/s", cc.Start, pace.MaxRate)
	}
	switch {
	case !(cc.Max > 0) || cc.Max > pace.MaxRate:
		// NaN passed the comparison below and searched "at NaN/s".
		bad("MAX", "%g: want a rate above 0 and at most %g units/s", cc.Max, pace.MaxRate)
	case cc.Max < cc.Start:
		bad("MAX", "%g is below CAPACITY_START %g", cc.Max, cc.Start)
	}
	if c.MaxRate > 0 && cc.Start > c.MaxRate {
		bad("START", "%g is above SOAKD_MAX_RATE %g", cc.Start, c.MaxRate)
	}
	if cc.Start > 0 && cc.Max >= cc.Start && (cc.Step.Add > 0 || cc.Step.Factor > 1) && cc.Step.Next(cc.Start) < cc.Start*1.001 &&
		climbSteps(cc) > maxClimb {
		// +0.000001 at 1,000/s, or x1.0000001, would climb for days (or,
		// below the rate's precision, not at all) before the target
		// felt a difference. A small step to a MAX close by is a choice.
		bad("STEP", "%s adds less than 0.1%% to CAPACITY_START %s/s, and the climb to CAPACITY_MAX %s/s would take more than %d steps; want at least x1.001 or +%s, or a lower MAX",
			cc.Step.text, pace.FormatRate(cc.Start), pace.FormatRate(cc.Max), maxClimb, pace.FormatRate(cc.Start*0.001))
	}
	if cc.Hold < time.Second {
		bad("HOLD", "%v: want at least 1s", cc.Hold)
	}
	if cc.Settle < 0 {
		bad("SETTLE", "%s must not be negative", cc.Settle)
	}
	if cc.Warmup < 0 {
		bad("WARMUP", "%s must not be negative", cc.Warmup)
	}
	if cc.SLOP99 <= 0 {
		bad("SLO_P99", "must be positive (e.g. 50ms)")
	}
	if cc.Refine < 0 || cc.Refine > 20 {
		bad("REFINE", "%d is out of range [0, 20]", cc.Refine)
	}
	if cc.SLOOp != "" && w != nil {
		if !slices.Contains(thresholds.OpNames, cc.SLOOp) {
			bad("SLO_OP", "%q is not an op (write, read, update, insert, scan, rmw)", cc.SLOOp)
		}
	}
	if err := reportPrefix(cc.Out); err != nil {
		bad("OUT", "%w", err)
	}
	return errs
}

// reportPrefix checks OUT, the prefix of a report's files (OUT.md,
// OUT.csv, OUT-rate.svg, ...): a file name in a directory that exists.
// "reports/" named hidden files reports/.md, reports/-batch.svg.
func reportPrefix(out string) error {
	switch {
	case out == "":
		return errors.New("must name where the report goes")
	case strings.HasSuffix(out, "/") || filepath.Base(out) == "." || filepath.Base(out) == "..":
		return fmt.Errorf("%s is a directory: give the report's file name too, e.g. %s", out, filepath.Join(out, "report"))
	}
	if dir, ok := outDir(out); !ok {
		return fmt.Errorf("cannot write the report %s.md: its directory %s does not exist", out, dir)
	}
	return nil
}

// outDir is the directory a file written at the end (a summary, or a
// report's OUT.md, OUT.csv, ...) goes to, and whether it exists: checked
// before a run, a search or a sweep goes on for hours, not when the file
// is written at its end.
func outDir(out string) (string, bool) {
	dir := filepath.Dir(out)
	return dir, isDir(dir)
}

// isDir says whether p names a directory that exists.
func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// Searched returns the searched workload's configuration, or nil.
func (cc *CapacityConfig) Searched(c *Config) *Workload {
	for _, w := range c.Workload {
		if cc.Workload == "" || w.Name == cc.Workload {
			return w
		}
	}
	return nil
}

// SettingValues lists the settings environ sets, as VAR=value with
// secrets hidden: what a report says the run was given.
func SettingValues(c *Config, environ map[string]string) []string { return settingValues(c, environ) }

// BuiltinBatchFor is the batch size a series workload on the built-in
// target would get for rate r, and whether w's BATCH_SIZE is that default
// rather than a setting (a capacity search sizes it for its highest
// rate).
func (w *Workload) BuiltinBatchFor(r pace.Rate) (int, bool) {
	return builtinBatch(r, w.Shard), w.builtinBatch
}

// String returns the setting as written.
func (g Growth) String() string { return g.text }
