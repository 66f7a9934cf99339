package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SweepConfig holds soakd sweep's settings (SOAKD_SWEEP_*).
type SweepConfig struct {
	Workload string        `env:"WORKLOAD" help:"soakd sweep: the workload swept; default: the first of SOAKD_WORKLOADS"`
	Workers  IntList       `env:"WORKERS" envDefault:"1,2,4,8" help:"soakd sweep: the WORKERS values tried"`
	Batch    IntList       `env:"BATCH" envDefault:"100,1000,10000" help:"soakd sweep: the BATCH_SIZE values tried (PIPELINE for KV and query workloads)"`
	Repeats  int           `env:"REPEATS" envDefault:"3" help:"soakd sweep: runs per point (min, median and max are reported)"`
	Duration time.Duration `env:"DURATION" envDefault:"10s" help:"soakd sweep: longest run of each point, whatever the source (a finite data set written whole ends it earlier)"`
	Reset    bool          `env:"RESET" envDefault:"false" help:"soakd sweep: empty what soakd wrote (its own tables, keys under KEY_PREFIX) before each run, so every point starts from the same state"`
	Out      string        `env:"OUT" envDefault:"sweep" help:"soakd sweep: report files are OUT.md, OUT.csv, OUT.json and the charts OUT-batch and OUT-usl (.svg, .png)"`
}

// IntList is a comma-separated list of positive integers.
type IntList []int

// UnmarshalText parses 1,2,4.
func (l *IntList) UnmarshalText(b []byte) error {
	*l = nil
	for _, f := range strings.Split(string(b), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 100000 {
			return fmt.Errorf("%q: want positive whole numbers separated by commas, e.g. 1,2,4,8", string(b))
		}
		*l = append(*l, n)
	}
	slices.Sort(*l)
	*l = slices.Compact(*l)
	return nil
}

// MarshalText writes the list back.
func (l IntList) MarshalText() ([]byte, error) {
	s := make([]string, len(l))
	for i, n := range l {
		s[i] = strconv.Itoa(n)
	}
	return []byte(strings.Join(s, ",")), nil
}

// CheckSweep reports every problem of the sweep settings, each naming its
// variable.
func (c *Config) CheckSweep() error {
	sc := &c.Sweep
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, cfgErr(EnvPrefix+"SWEEP_"+key, format, args...))
	}
	if sc.Swept(c) == nil {
		bad("WORKLOAD", "%q is not one of SOAKD_WORKLOADS (%s)", sc.Workload, strings.Join(c.Workloads, ", "))
	}
	if len(sc.Workers) == 0 || len(sc.Batch) == 0 {
		bad("WORKERS", "WORKERS and BATCH each need at least one value")
	}
	if sc.Repeats < 1 || sc.Repeats > 100 {
		bad("REPEATS", "%d is out of range [1, 100]", sc.Repeats)
	}
	if sc.Duration < time.Second {
		bad("DURATION", "%v: want at least 1s", sc.Duration)
	}
	if sc.Out == "" {
		bad("OUT", "must name where the report goes")
	}
	return errors.Join(errs...)
}

// Swept returns the swept workload's configuration, or nil.
func (sc *SweepConfig) Swept(c *Config) *Workload {
	for _, w := range c.Workload {
		if sc.Workload == "" || w.Name == sc.Workload {
			return w
		}
	}
	return nil
}
