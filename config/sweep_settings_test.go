package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/soakd/soakd/sources/seq"
)

// Worker and batch lists parse, sort and refuse what is not a list of
// positive numbers.
func TestIntList(t *testing.T) {
	var l IntList
	if err := l.UnmarshalText([]byte("8, 1,2,2")); err != nil || len(l) != 3 || l[0] != 1 || l[2] != 8 {
		t.Errorf("got %v, %v", l, err)
	}
	for _, bad := range []string{"", "0", "1,,2", "a", "-1", "1e9"} {
		if err := l.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The grid parses axes in order with their values as written, and
// refuses, naming the axis, what is not NAME=v1,v2 axes separated by
// spaces; a password in a refused value is not repeated.
func TestGridParse(t *testing.T) {
	var g Grid
	if err := g.UnmarshalText([]byte("  SCALE=100,1000\tTARGET=postgres://u:pw@h/db?sslmode=disable,redis://h  WORKERS=8,1 ")); err != nil {
		t.Fatal(err)
	}
	if len(g) != 3 || g[0].Name != "SCALE" || g[1].Name != "TARGET" || g[2].Name != "WORKERS" ||
		strings.Join(g[1].Values, " ") != "postgres://u:pw@h/db?sslmode=disable redis://h" || strings.Join(g[2].Values, " ") != "8 1" {
		t.Fatalf("parsed %+v", g)
	}
	if g.Points() != 8 || g.String() != "SCALE=100,1000 TARGET=postgres://u:pw@h/db?sslmode=disable,redis://h WORKERS=8,1" {
		t.Errorf("points %d, written back %q", g.Points(), g.String())
	}
	// The last axis varies fastest.
	var got []string
	for i := range g.Points() {
		got = append(got, fmt.Sprint(g.Index(i)))
	}
	if strings.Join(got, " ") != "[0 0 0] [0 0 1] [0 1 0] [0 1 1] [1 0 0] [1 0 1] [1 1 0] [1 1 1]" {
		t.Errorf("order %v", got)
	}
	// A list holding a | is separated by |, so that values may hold
	// commas (KV mixes, cluster targets); written back the same way.
	mix := "WORKLOAD=read=0.95,update=0.05|read=0.5,update=0.5 TARGET=redis-cluster://h1:1,h2:2|redis://h WORKERS=1|2"
	if err := g.UnmarshalText([]byte(mix)); err != nil {
		t.Fatal(err)
	}
	if len(g) != 3 || strings.Join(g[0].Values, " ") != "read=0.95,update=0.05 read=0.5,update=0.5" ||
		strings.Join(g[1].Values, " ") != "redis-cluster://h1:1,h2:2 redis://h" || strings.Join(g[2].Values, " ") != "1 2" || g.Points() != 8 {
		t.Fatalf("parsed %+v", g)
	}
	if g.String() != "WORKLOAD=read=0.95,update=0.05|read=0.5,update=0.5 TARGET=redis-cluster://h1:1,h2:2|redis://h WORKERS=1,2" {
		t.Errorf("written back %q", g.String())
	}
	if err := g.UnmarshalText([]byte(" ")); err != nil || g != nil || g.Points() != 0 {
		t.Errorf("empty grid: %v, %v", g, err)
	}
	for bad, want := range map[string]string{
		"SCALE":                              "want axes NAME=v1,v2",
		"SCALE=":                             "want axes NAME=v1,v2",
		"=1,2":                               "want axes NAME=v1,v2",
		"scale=1,2":                          `axis "scale": a setting's name in upper case`,
		"SOAKD_W_SCALE=1,2":                  "axis SOAKD_W_SCALE: name the setting without its SOAKD_<W>_ prefix",
		"SCALE=1,,2":                         "axis SCALE: an empty value",
		"SCALE=1,2,":                         "axis SCALE: an empty value",
		"SCALE=1,2 SCALE=3":                  "axis SCALE is given twice",
		"TARGET=redis://:pw@h,redis://:pw@h": "axis TARGET: value redis://:xxxxx@h is given twice",
		"A=1,2,3,4,5,6,7,8,9,10 B=1,2,3,4,5,6,7,8,9,10 C=1,2,3,4,5,6,7,8,9,10 D=1,2,3,4,5,6,7,8,9,10 E=1,2": "more than 10000 points",
		// A space where a comma was meant: the second URL is no axis,
		// and what precedes its = is never repeated.
		"TARGET=postgres://u:pw1@h/db postgres://u:SECRETPW@h2/db?sslmode=require": "axis 2 is not NAME=v1,v2",
		"SCALE=1 SOAKD_x:pw@h/db?a=1":            "axis 2 is not NAME=v1,v2",
		"WORKLOAD=read=0.5,update=0.5||a=1":      "axis WORKLOAD: an empty value (values are separated by single |",
		"WORKLOAD=read=0.5,update=0.5|":          "axis WORKLOAD: an empty value",
		"TARGET=redis://:pw@h,x|redis://:pw@h,x": "axis TARGET: value redis://:xxxxx@h,x is given twice",
	} {
		err := g.UnmarshalText([]byte(bad))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one saying %q", bad, err, want)
		}
		if err != nil && (strings.Contains(err.Error(), "pw") || strings.Contains(err.Error(), "SECRETPW")) {
			t.Errorf("%q: the error repeats the password: %v", bad, err)
		}
	}
}

// Whatever the grid text, parsing never panics, and what it accepts
// writes back to a text that parses to the same grid, within the points'
// bound.
func FuzzGrid(f *testing.F) {
	for _, s := range []string{"SCALE=100,1000 COLUMNS=1,100,400", "TARGET=postgres://u:p@h/db,redis://h", "A=1", "", " ", "A=,", "A==1", "A=1 A=2", "a=1", "A=1,1", "A=a,b|c", "A=a|b,c|", "A=|", "A=x,y|x,y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var g Grid
		if g.UnmarshalText([]byte(s)) != nil {
			return
		}
		if g.Points() > MaxGridPoints {
			t.Fatalf("%q: %d points", s, g.Points())
		}
		var back Grid
		if err := back.UnmarshalText([]byte(g.String())); err != nil || back.String() != g.String() {
			t.Fatalf("%q: written back as %q, which parses to %q (%v)", s, g.String(), back.String(), err)
		}
		for i := range g.Points() {
			for a, j := range g.Index(i) {
				if j < 0 || j >= len(g[a].Values) {
					t.Fatalf("%q: point %d has index %d on axis %s", s, i, j, g[a].Name)
				}
			}
		}
	})
}

// SweepPoints builds one configuration per point, each setting parsed by
// its own parser (the source's included), in the grid's order, and
// refuses before building any a name that is no setting of the workload,
// a value its setting refuses, a secret, or WORKERS and BATCH with a grid.
func TestSweepPoints(t *testing.T) {
	t.Parallel()
	p := testPlugins()
	env := map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_TARGET": "null://",
		"SOAKD_SWEEP_GRID": "DEVICES=5,50 WORKERS=1,3 TARGET=null://,null://?latency=1ms"}
	cfg := loadTest(t, env, p)
	pts, err := cfg.SweepPoints(env, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 8 {
		t.Fatalf("%d points, want 8", len(pts))
	}
	if pt := pts[3]; strings.Join(pt.Values, " ") != "5 3 null://?latency=1ms" || pt.Workload.Workers != 3 || pt.Workload.Target != "null://?latency=1ms" ||
		pt.Workload.SourceSettings.Fields().(*seq.Config).Devices != 5 || len(pt.Config.Workload) != 1 {
		t.Errorf("point 3: %v, workers %d, target %s, %+v", pt.Values, pt.Workload.Workers, pt.Workload.Target, pt.Workload.SourceSettings.Fields())
	}
	if pts[4].Workload.SourceSettings.Fields().(*seq.Config).Devices != 50 || cfg.Workload[0].SourceSettings.Fields().(*seq.Config).Devices != 10 {
		t.Errorf("point 4 has %+v, the base %+v", pts[4].Workload.SourceSettings.Fields(), cfg.Workload[0].SourceSettings.Fields())
	}
	for grid, want := range map[string]string{
		"DEVICS=1,2":        "SOAKD_SWEEP_GRID: axis DEVICS is not a setting of workload seq (source seq): did you mean DEVICES?",
		"QWERTY=1":          "SOAKD_SWEEP_GRID: axis QWERTY is not a setting of workload seq (source seq); its settings: BATCH_SIZE, DEVICES,",
		"DEVICES=5,0":       "SOAKD_SWEEP_GRID: DEVICES=0: ",
		"WORKERS=2,x":       "SOAKD_SWEEP_GRID: WORKERS=x: ",
		"TOKEN=a,b":         "SOAKD_SWEEP_GRID: axis TOKEN: a secret cannot be an axis",
		"TARGET=nope://a/b": "SOAKD_SWEEP_GRID: TARGET=nope://a/b: ",
	} {
		env := map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_TARGET": "null://", "SOAKD_SWEEP_GRID": grid}
		cfg := loadTest(t, env, p)
		pts, err := cfg.SweepPoints(env, p)
		if err == nil || pts != nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %d points, error %v; want %q", grid, len(pts), err, want)
		}
	}
	// Values that show the same once their passwords are redacted are
	// kept apart by their place on the axis.
	env = map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_TARGET": "null://",
		"SOAKD_SWEEP_GRID": "TARGET=null://u:pw1@h,null://u:pw2@h,null:// WORKERS=1,2"}
	pts, err = loadTest(t, env, p).SweepPoints(env, p)
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	for _, pt := range pts {
		shown = append(shown, fmt.Sprintf("%s %v", pt.Values[0], pt.At))
	}
	if got := strings.Join(shown, "; "); got != "null://u:xxxxx@h #1 [0 0]; null://u:xxxxx@h #1 [0 1]; null://u:xxxxx@h #2 [1 0]; null://u:xxxxx@h #2 [1 1]; null:// [2 0]; null:// [2 1]" ||
		pts[2].Workload.Target != "null://u:pw2@h" {
		t.Errorf("shown %s; point 2's target %s", got, pts[2].Workload.Target)
	}
	env["SOAKD_SWEEP_BATCH"] = "10"
	if _, err := loadTest(t, env, p).SweepPoints(env, p); err == nil || !strings.Contains(err.Error(), "SOAKD_SWEEP_GRID: set with SOAKD_SWEEP_BATCH") {
		t.Errorf("GRID with BATCH: %v", err)
	}
}

// Two values of an axis written differently but read as one setting
// (100 and 1e2, 1m and 60s, 1000 and 1k) are refused, naming the axis and
// both values: each of their points would otherwise run twice, reported
// as two settings. Values that only show the same (URLs differing in
// their password) and values that differ stay points of their own.
func TestSweepPointsSameValueTwice(t *testing.T) {
	t.Parallel()
	p := testPlugins()
	for grid, want := range map[string][]string{
		"WORKERS=100,1e2":                   {"SOAKD_SWEEP_GRID: axis WORKERS: 100 and 1e2 are the same value once read"},
		"DEVICES=5,50 WORKERS=1,2,01":       {"axis WORKERS: 1 and 01 are the same value once read"},
		"DURATION=1m,2m,60s DEVICES=10,1e1": {"axis DURATION: 1m and 60s are the same", "axis DEVICES: 10 and 1e1 are the same"},
		"RATE=1000,max,1k,MAX":              {"axis RATE: 1000 and 1k are the same", "axis RATE: max and MAX are the same"},
		"WORKERS=2|2.0e0":                   {"axis WORKERS: 2 and 2.0e0 are the same"},
	} {
		env := map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_TARGET": "null://", "SOAKD_SWEEP_GRID": grid}
		pts, err := loadTest(t, env, p).SweepPoints(env, p)
		for _, w := range want {
			if err == nil || pts != nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %d points, error %v; want %q", grid, len(pts), err, w)
			}
		}
		if err != nil && strings.Count(err.Error(), "\n")+1 != len(want) {
			t.Errorf("%s: %v; want %d errors", grid, err, len(want))
		}
	}
	for _, grid := range []string{"TARGET=null://u:pw1@h,null://u:pw2@h", "RATE=1000,1001,max DURATION=1m,61s", "DEVICES=1,10,100"} {
		env := map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_TARGET": "null://", "SOAKD_SWEEP_GRID": grid}
		if pts, err := loadTest(t, env, p).SweepPoints(env, p); err != nil || len(pts) == 0 {
			t.Errorf("%s: %d points, %v", grid, len(pts), err)
		}
	}
}

// A report's directory that does not exist is a configuration error of
// the sweep and the capacity search, found before they run (as it is for
// SOAKD_SUMMARY_JSON and SOAKD_REPORT), not once every point has run.
func TestReportOutDirChecked(t *testing.T) {
	t.Parallel()
	p := testPlugins()
	missing := t.TempDir() + "/missing/rep"
	for _, c := range []struct {
		key   string
		check func(*Config) error
	}{{"SOAKD_SWEEP_OUT", (*Config).CheckSweep}, {"SOAKD_CAPACITY_OUT", func(c *Config) error { return c.CheckCapacity(p) }}} {
		env := map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_TARGET": "null://", c.key: missing}
		err := c.check(loadTest(t, env, p))
		if err == nil || !strings.Contains(err.Error(), c.key+": cannot write the report "+missing+".md: its directory") {
			t.Errorf("%s=%s: error %v, want one naming the directory", c.key, missing, err)
		}
		env[c.key] = t.TempDir() + "/rep"
		if err := c.check(loadTest(t, env, p)); err != nil {
			t.Errorf("%s in an existing directory: %v", c.key, err)
		}
		// A directory alone named hidden files in it: dir/.md, dir/-batch.svg.
		dir := t.TempDir()
		for _, out := range []string{dir + "/", dir + "/."} {
			env[c.key] = out
			if err := c.check(loadTest(t, env, p)); err == nil || !strings.Contains(err.Error(), c.key+": "+out+" is a directory: give the report's file name too") {
				t.Errorf("%s=%s: %v, want it refused as a directory", c.key, out, err)
			}
		}
	}
}

// A negative CAPACITY_WARMUP is named as itself, not as SETTLE.
func TestCapacityWarmupNegative(t *testing.T) {
	p := testPlugins()
	cfg := loadTest(t, map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_TARGET": "null://", "SOAKD_CAPACITY_WARMUP": "-1s"}, p)
	err := cfg.CheckCapacity(p)
	if err == nil || !strings.Contains(err.Error(), "SOAKD_CAPACITY_WARMUP: -1s must not be negative") || strings.Contains(err.Error(), "SETTLE") {
		t.Errorf("WARMUP=-1s: %v", err)
	}
}

// A grid whose value holds a space (an unencoded password) splits there:
// the word after it is refused by its place, never quoted. It was
// `"horse": want axes ...` out of postgres://bench:correct horse battery@db1.
func TestGridSplitPasswordNotQuoted(t *testing.T) {
	var g Grid
	err := g.UnmarshalText([]byte("TARGET=postgres://bench:correct horse battery@db1:5432/bench,postgres://bench:x@db2/bench"))
	if err == nil || !strings.Contains(err.Error(), "axis 2 is not NAME=v1,v2") {
		t.Fatalf("error %v, want axis 2 named by its place", err)
	}
	for _, secret := range []string{"correct", "horse", "battery"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error %q shows %q", err, secret)
		}
	}
	if len(g) != 0 {
		t.Errorf("a grid that does not parse kept %d axes, which were then checked as points", len(g))
	}
}

// SOAKD_MAX_RATE caps every rate, and a sweep without a RATE axis runs
// each point closed loop: refused, naming SOAKD_MAX_RATE, as a run's
// RATE=max is. It ran 186,113 rows/s under a cap of 1,000. With a RATE
// axis the points' rates are checked against the cap as a run's are.
func TestSweepUnderMaxRate(t *testing.T) {
	cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_MAX_RATE", "1000", "SOAKD_SEQ_RATE", "500", "SOAKD_SWEEP_WORKERS", "2"), testPlugins())
	if err := cfg.CheckSweep(); err == nil || !strings.Contains(err.Error(), "SOAKD_MAX_RATE: 1000 caps every rate, and a sweep runs each point closed loop") {
		t.Errorf("closed-loop sweep under SOAKD_MAX_RATE: %v", err)
	}
	cfg = loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_MAX_RATE", "1000", "SOAKD_SEQ_RATE", "500", "SOAKD_SWEEP_GRID", "RATE=500,900"), testPlugins())
	if err := cfg.CheckSweep(); err != nil {
		t.Errorf("a RATE axis under SOAKD_MAX_RATE: %v", err)
	}
}
