package config

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/soakd/soakd/settings"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// SweepConfig holds soakd sweep's settings (SOAKD_SWEEP_*).
type SweepConfig struct {
	Workload string        `env:"WORKLOAD" help:"soakd sweep: the workload swept; default: the first of SOAKD_WORKLOADS"`
	Grid     Grid          `env:"GRID" secret:"urls" help:"soakd sweep: the grid over any of the workload's settings, NAME=v1,v2 NAME2=a,b, or NAME=v1|v2 for values with commas (its SOAKD_<W>_ settings without the prefix, e.g. SCALE=1000,10000 COLUMNS=10,100 or TARGET=postgres://a/db,postgres://b/db); the first axis varies slowest, the last fastest; empty = WORKERS x BATCH"`
	Workers  IntList       `env:"WORKERS" envDefault:"1,2,4,8" help:"soakd sweep: the WORKERS values tried (without GRID)"`
	Batch    IntList       `env:"BATCH" envDefault:"100,1000,10000" help:"soakd sweep: the BATCH_SIZE values tried, PIPELINE for KV and query workloads (without GRID)"`
	Repeats  int           `env:"REPEATS" envDefault:"3" help:"soakd sweep: runs per point (min, median and max are reported)"`
	Duration time.Duration `env:"DURATION" envDefault:"10s" help:"soakd sweep: longest run of each point, whatever the source (a finite data set written whole ends it earlier)"`
	Reset    bool          `env:"RESET" envDefault:"false" help:"soakd sweep: empty what soakd wrote (its own tables, keys under KEY_PREFIX) before each run, so every point starts from the same state; a grid's point drops soakd's tables made for another shape (COLUMNS, COLUMN_TYPE)"`
	Out      string        `env:"OUT" envDefault:"sweep" help:"soakd sweep: report files are OUT.md, OUT.csv, OUT.json and the charts OUT-batch (a grid: OUT-NAME per axis, e.g. OUT-scale) and OUT-usl, with the target watch OUT-target-memory and OUT-target-cpu (a grid: OUT-NAME-target-memory, OUT-NAME-target-cpu per axis) (.svg, .png)"`
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
	if c.MaxRate > 0 && !sc.Grid.Has("RATE") {
		// Each point runs closed loop (RATE=max), which a cap cannot
		// bound, as a run's RATE=max is refused under it.
		errs = append(errs, cfgErr(EnvPrefix+"MAX_RATE", "%g caps every rate, and a sweep runs each point closed loop; sweep rates instead (SOAKD_SWEEP_GRID=RATE=1000,5000 ...), or unset SOAKD_MAX_RATE", c.MaxRate))
	}
	if err := reportPrefix(sc.Out); err != nil {
		bad("OUT", "%w", err)
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

// GridAxis is one axis of SOAKD_SWEEP_GRID: a workload setting (its name
// without the SOAKD_<W>_ prefix) and the values it takes, as written.
type GridAxis struct {
	Name   string   `json:"name"`
	Values []string `json:"values"`
}

// Grid is SOAKD_SWEEP_GRID: axes separated by spaces, each NAME=v1,v2,...;
// the first axis varies slowest, the last fastest.
type Grid []GridAxis

// MaxGridPoints bounds the points of a grid: each is at least one run of
// SOAKD_SWEEP_DURATION, and more than this is a typo, not a plan.
const MaxGridPoints = 10000

var (
	gridName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	// wordName is what may be repeated of a refused name: letters, digits
	// and _ (scale, a typo). Anything else may be a piece of a URL split
	// at a space, its password included, and is never shown.
	wordName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)
)

// UnmarshalText parses SCALE=1000,10000 COLUMNS=10,100. An axis whose
// list holds a | has its values separated by | instead, so that values
// with commas can be swept: WORKLOAD=read=0.95,update=0.05|read=0.5,update=0.5.
// It knows no workload: whether each name is one of its settings, and
// each value a value of it, is checked when the points are built
// (SweepPoints).
func (g *Grid) UnmarshalText(b []byte) error {
	// A grid that does not parse is left empty: its first axes alone
	// would be checked as points and refused again.
	*g = nil
	var axes Grid
	points := 1
	for n, f := range strings.Fields(string(b)) {
		name, list, ok := strings.Cut(f, "=")
		if !ok || name == "" || list == "" {
			// By its place, not its text: a word split off a value at a
			// space may be part of a password.
			return fmt.Errorf("axis %d is not NAME=v1,v2: want axes NAME=v1,v2 separated by spaces, e.g. SCALE=1000,10000 COLUMNS=10,100 (a value holds no space)", n+1)
		}
		if !wordName.MatchString(name) {
			return fmt.Errorf("axis %d is not NAME=v1,v2: what comes before its = is no setting's name (axes are separated by spaces, a value holds none)", n+1)
		}
		if strings.HasPrefix(name, EnvPrefix) {
			return fmt.Errorf("axis %s: name the setting without its %s<W>_ prefix, e.g. BATCH_SIZE", name, EnvPrefix)
		}
		if !gridName.MatchString(name) {
			return fmt.Errorf("axis %q: a setting's name in upper case, letters, digits and _, e.g. BATCH_SIZE", name)
		}
		if axes.Has(name) {
			return fmt.Errorf("axis %s is given twice", name)
		}
		ax := GridAxis{Name: name}
		sep, seps := ",", "single commas"
		if strings.Contains(list, "|") {
			sep, seps = "|", "single |, as a | is in the list"
		}
		for _, v := range strings.Split(list, sep) {
			if v == "" {
				return fmt.Errorf("axis %s: an empty value (values are separated by %s)", name, seps)
			}
			if slices.Contains(ax.Values, v) {
				return fmt.Errorf("axis %s: value %s is given twice", name, sinks.Redact(v))
			}
			ax.Values = append(ax.Values, v)
		}
		points *= len(ax.Values)
		if points > MaxGridPoints {
			return fmt.Errorf("more than %d points: each is a run of SOAKD_SWEEP_DURATION at least", MaxGridPoints)
		}
		axes = append(axes, ax)
	}
	*g = axes
	return nil
}

// MarshalText writes the grid back as it is parsed.
func (g Grid) MarshalText() ([]byte, error) {
	return []byte(g.String()), nil
}

// String is the grid as written, secrets included: use Shown to show it.
func (g Grid) String() string {
	s := make([]string, len(g))
	for i, a := range g {
		sep := ","
		if slices.ContainsFunc(a.Values, func(v string) bool { return strings.Contains(v, ",") }) {
			sep = "|"
		}
		s[i] = a.Name + "=" + strings.Join(a.Values, sep)
	}
	return strings.Join(s, " ")
}

// Has reports whether the grid has an axis named name (RATE).
func (g Grid) Has(name string) bool {
	return slices.ContainsFunc(g, func(a GridAxis) bool { return a.Name == name })
}

// Points is the number of points of the grid.
func (g Grid) Points() int {
	if len(g) == 0 {
		return 0
	}
	n := 1
	for _, a := range g {
		n *= len(a.Values)
	}
	return n
}

// Index is the grid's i-th point, as one value index per axis: the last
// axis varies fastest.
func (g Grid) Index(i int) []int {
	at := make([]int, len(g))
	for a := len(g) - 1; a >= 0; a-- {
		n := len(g[a].Values)
		at[a], i = i%n, i/n
	}
	return at
}

// SweepPoint is one point of a grid sweep.
type SweepPoint struct {
	// Values are the point's value of each axis, in the grid's order, as
	// they may be shown (a URL's password redacted; values that would
	// then show the same end in their place on the axis, #1, #2, ...);
	// At are their indexes in the axes' values.
	Values []string
	At     []int
	// Config is the whole configuration with the point's settings
	// applied, loaded and validated as a run's is; Workload is the swept
	// workload's.
	Config   *Config
	Workload *Workload
}

// gridKey names SOAKD_SWEEP_GRID in errors.
const gridKey = EnvPrefix + "SWEEP_GRID"

// SweepPoints builds and validates every point of SOAKD_SWEEP_GRID
// before any runs: environ with SOAKD_<W>_NAME=value set for each axis,
// loaded and checked as soakd run loads and checks it, so that every
// setting, the source's own included, goes through its own parser. The
// errors name SOAKD_SWEEP_GRID and the axis and value at fault; a name
// that is not a setting of the workload is refused with the closest one.
func (c *Config) SweepPoints(environ map[string]string, p *Plugins) ([]SweepPoint, error) {
	sc := &c.Sweep
	if len(sc.Grid) == 0 {
		return nil, nil
	}
	var errs []error
	for _, k := range []string{"WORKERS", "BATCH"} {
		if _, set := environ[EnvPrefix+"SWEEP_"+k]; set {
			errs = append(errs, cfgErr(gridKey, "set with %sSWEEP_%s: with a grid, only its axes vary; make WORKERS, BATCH_SIZE or PIPELINE an axis of the grid instead, or unset %sSWEEP_GRID",
				EnvPrefix, k, EnvPrefix))
		}
	}
	base := sc.Swept(c)
	if base == nil {
		return nil, cfgErr(EnvPrefix+"SWEEP_WORKLOAD", "%q is not one of SOAKD_WORKLOADS (%s)", sc.Workload, strings.Join(c.Workloads, ", "))
	}
	known := settings.Of(&Workload{}, "")
	workloadKeys := map[string]bool{}
	for _, s := range known {
		workloadKeys[s.Key] = true
	}
	if base.SourceSettings != nil {
		known = append(known, settings.Of(base.SourceSettings.Fields(), "")...)
	}
	byName := map[string]settings.Setting{}
	for _, s := range known {
		byName[s.Key] = s
	}
	for _, a := range sc.Grid {
		s, ok := byName[a.Name]
		switch {
		case !ok:
			errs = append(errs, cfgErr(gridKey, "axis %s is not a setting of workload %s (source %s)%s", a.Name, base.Name, base.Source, closest(a.Name, known)))
		case s.Secret || s.File:
			errs = append(errs, cfgErr(gridKey, "axis %s: a secret cannot be an axis (its values would be shown in the report)", a.Name))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	// Two values may show the same (URLs differing only in their
	// password): each such value is shown with its place on the axis,
	// #1, #2, ..., so that the report keeps them apart.
	shownAxes := make([][]string, len(sc.Grid))
	for a, ax := range sc.Grid {
		count := map[string]int{}
		for _, v := range ax.Values {
			d := byName[ax.Name].Shown(v)
			shownAxes[a] = append(shownAxes[a], d)
			count[d]++
		}
		for j, d := range shownAxes[a] {
			if count[d] > 1 {
				shownAxes[a][j] = fmt.Sprintf("%s #%d", d, j+1)
			}
		}
	}
	prefix := Prefix(base.Name)
	var kind sources.Kind
	if e := p.Sources.Lookup(base.Source); e != nil {
		kind = e.Kind
	}
	seen := map[string]bool{}
	report := func(e error) {
		if !seen[e.Error()] {
			seen[e.Error()] = true
			errs = append(errs, e)
		}
	}
	points := make([]SweepPoint, 0, sc.Grid.Points())
	for i := range sc.Grid.Points() {
		at := sc.Grid.Index(i)
		env := maps.Clone(environ)
		pt := SweepPoint{Values: make([]string, len(at)), At: at}
		label := make([]string, len(at))
		for a, j := range at {
			v := sc.Grid[a].Values[j]
			env[prefix+sc.Grid[a].Name] = v
			pt.Values[a] = shownAxes[a][j]
			label[a] = sc.Grid[a].Name + "=" + pt.Values[a]
		}
		cfg, perr := Load(env, p.Sources)
		err := cfg.Check(p, perr)
		for _, e := range settings.Problems(err) {
			var ce *settings.Error
			a := -1
			if errors.As(e, &ce) {
				a = slices.IndexFunc(sc.Grid, func(g GridAxis) bool { return prefix+g.Name == ce.Key })
			}
			if a >= 0 {
				report(cfgErr(gridKey, "%s=%s: %v", sc.Grid[a].Name, pt.Values[a], ce.Err))
			} else {
				report(cfgErr(gridKey, "at %s: %v", strings.Join(label, " "), e))
			}
		}
		if err != nil {
			continue
		}
		pt.Config, pt.Workload = cfg, cfg.Sweep.Swept(cfg)
		if e := p.Sources.Lookup(pt.Workload.Source); e == nil || e.Kind != kind {
			report(cfgErr(gridKey, "at %s: the source %s does not make what %s makes: the points must count the same units", strings.Join(label, " "), pt.Workload.Source, base.Source))
			continue
		}
		points = append(points, pt)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := sameValues(sc.Grid, points, shownAxes, byName, workloadKeys); err != nil {
		return nil, err
	}
	return points, nil
}

// sameValues refuses an axis two of whose values, written differently,
// are the same setting once parsed (WORKERS=100,1e2, DURATION=1m,60s,
// RATE=1000,1k): each would be a point of its own, run and reported
// twice as if the grid had compared two settings. Values as written are
// compared by Grid.UnmarshalText; this compares them as their setting
// reads them, in the points where the other axes take their first value.
// keys says which names are the engine's settings (fields of Workload);
// the others are the source's.
func sameValues(g Grid, points []SweepPoint, shown [][]string, byName map[string]settings.Setting, keys map[string]bool) error {
	var errs []error
	stride := 1
	for a := len(g) - 1; a >= 0; a-- {
		var parsed []reflect.Value
		for j := range g[a].Values {
			w := points[j*stride].Workload
			var v reflect.Value
			if keys[g[a].Name] {
				v = reflect.ValueOf(w).Elem()
			} else if w.SourceSettings != nil {
				v = reflect.Indirect(reflect.ValueOf(w.SourceSettings.Fields()))
			}
			if v.Kind() == reflect.Struct {
				v = v.FieldByName(byName[g[a].Name].Field)
			}
			parsed = append(parsed, v)
		}
		for j := range parsed {
			for k := range j {
				if parsed[j].IsValid() && parsed[k].IsValid() && sameSetting(parsed[k], parsed[j]) {
					errs = append(errs, cfgErr(gridKey, "axis %s: %s and %s are the same value once read: each of their points would run twice; give it once",
						g[a].Name, shown[a][k], shown[a][j]))
				}
			}
		}
		stride *= len(g[a].Values)
	}
	slices.Reverse(errs) // in the grid's order
	return errors.Join(errs...)
}

// sameSetting compares two parsed values of one setting by what they
// mean: the exported fields of a struct only, so that the text a value
// keeps to be shown as written (pace.Rate's: 1k and 1000) does not
// count; a struct with no exported field is compared whole.
func sameSetting(a, b reflect.Value) bool {
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameSetting(a.Elem(), b.Elem())
	case reflect.Struct:
		t, exported := a.Type(), false
		for i := range t.NumField() {
			if !t.Field(i).IsExported() {
				continue
			}
			exported = true
			if !sameSetting(a.Field(i), b.Field(i)) {
				return false
			}
		}
		if exported {
			return true
		}
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !sameSetting(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	}
	if !a.CanInterface() || !b.CanInterface() {
		return false // reached through an unexported field: cannot tell
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}

// closest names the setting nearest name, or lists them all when none is
// near.
func closest(name string, known []settings.Setting) string {
	best, bestD := "", -1
	var all []string
	for _, s := range known {
		if s.Secret || s.File {
			continue
		}
		all = append(all, s.Key)
		if d := settings.EditDistance(name, s.Key); bestD < 0 || d < bestD {
			best, bestD = s.Key, d
		}
	}
	if best != "" && bestD <= settings.MaxTypo(name) {
		return ": did you mean " + best + "?"
	}
	slices.Sort(all)
	return "; its settings: " + strings.Join(all, ", ")
}
