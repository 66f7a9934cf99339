package daemon

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/settings"
)

func TestParseThresholds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []Threshold
	}{
		{"", nil},
		{"  ", nil},
		{"p99<50ms", []Threshold{{text: "p99<50ms", metric: metricQuantile, q: 99, cmp: cmpLT, kind: valueDuration, value: 0.05}}},
		// Spaces around the comparison, @ and ! are dropped from the label.
		{" p99.9 <= 200ms @ 1m ! ", []Threshold{{text: "p99.9<=200ms@1m!", metric: metricQuantile, q: 99.9, cmp: cmpLE,
			kind: valueDuration, value: 0.2, window: time.Minute, abort: true}}},
		{"errors<0.1%, dropped=0, failed<=10, achieved>99%, achieved>=2.5k/s", []Threshold{
			{text: "errors<0.1%", metric: metricErrors, cmp: cmpLT, kind: valuePercent, value: 0.001},
			{text: "dropped=0", metric: metricDropped, cmp: cmpEQ, kind: valueCount},
			{text: "failed<=10", metric: metricFailed, cmp: cmpLE, kind: valueCount, value: 10},
			{text: "achieved>99%", metric: metricAchieved, cmp: cmpGT, kind: valuePercent, value: 0.99},
			{text: "achieved>=2.5k/s", metric: metricAchieved, cmp: cmpGE, kind: valueRate, value: 2500},
		}},
		{"op:read.p99<5ms,service.p99<10ms,op:update.service.max<1s,response.mean<2ms", []Threshold{
			{text: "op:read.p99<5ms", op: "read", metric: metricQuantile, q: 99, kind: valueDuration, value: 0.005},
			{text: "service.p99<10ms", service: true, metric: metricQuantile, q: 99, kind: valueDuration, value: 0.01},
			{text: "op:update.service.max<1s", op: "update", service: true, metric: metricMax, kind: valueDuration, value: 1},
			{text: "response.mean<2ms", metric: metricMean, kind: valueDuration, value: 0.002},
		}},
		{"drift.p99<20%, drift.achieved>-2%@5m, drift.op:read.service.p50<1ms!, errors<5%!", []Threshold{
			{text: "drift.p99<20%", drift: true, metric: metricQuantile, q: 99, kind: valuePercent, value: 0.2},
			{text: "drift.achieved>-2%@5m", drift: true, metric: metricAchieved, cmp: cmpGT, kind: valuePercent, value: -0.02, window: 5 * time.Minute},
			{text: "drift.op:read.service.p50<1ms!", drift: true, op: "read", service: true, metric: metricQuantile, q: 50,
				kind: valueDuration, value: 0.001, abort: true},
			{text: "errors<5%!", metric: metricErrors, kind: valuePercent, value: 0.05, abort: true},
		}},
		{"p100<1s,p0.1<1µs,op:write.errors<1", []Threshold{
			{text: "p100<1s", metric: metricQuantile, q: 100, kind: valueDuration, value: 1},
			{text: "p0.1<1µs", metric: metricQuantile, q: 0.1, kind: valueDuration, value: 1e-6},
			{text: "op:write.errors<1", op: "write", metric: metricErrors, kind: valueCount, value: 1},
		}},
	} {
		got, err := ParseThresholds(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("%q: %d thresholds %+v, want %d", tc.in, len(got), got, len(tc.want))
			continue
		}
		for i := range got {
			g, w := got[i], tc.want[i]
			if g.value != w.value && (w.value == 0 || abs(g.value-w.value) > 1e-12*abs(w.value)) {
				t.Errorf("%q #%d: value %v, want %v", tc.in, i, g.value, w.value)
			}
			g.value = w.value
			if g != w {
				t.Errorf("%q #%d:\n got %+v\nwant %+v", tc.in, i, g, w)
			}
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// Every problem is reported with its column in the whole expression, and
// one bad check does not hide another.
func TestParseThresholdsErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string // one per problem, in order
	}{
		{"p99<5Oms", []string{`column 5 of "p99<5Oms": "5Oms" is not a value`}},
		{"p99<50ms, p99.9<2OOms", []string{`column 17 of "p99<50ms, p99.9<2OOms": "2OOms" is not a value`}},
		{"p99<5Oms, errors<x%", []string{`column 5 `, `column 18 `}},
		{"p99 50ms", []string{`column 5 `, `want a comparison`}},
		{"p99==50ms", []string{`column 4 `, `"==" is not a comparison`}},
		{"p99=50ms", []string{`= compares counts`}},
		{"p99<", []string{`column 5 `, `want a value after p99<`}},
		{"p99<50", []string{`p99 takes a duration`}},
		{"p99<-5ms", []string{`must not be negative`}},
		{"p101<1s", []string{`column 1 `, `"p101" is not a percentile`}},
		{"p0<1s", []string{`"p0" is not a percentile`}},
		{"p1e2<1s", []string{`"p1e2" is not a percentile`}},
		{"q99<1s", []string{`unknown metric "q99"`}},
		{"P99<1s", []string{`unknown metric "P99"`}},
		{"service.op:read.p99<1s", []string{`column 9 `, `prefixes come in the order`}},
		{"op:reed.p99<1s", []string{`column 4 `, `unknown op "reed"`}},
		{"op:read p99<1s", []string{`want op:NAME.`}},
		{"op:read.dropped=0", []string{`column 1 `, `op: applies to latency and errors`}},
		{"service.errors<1%", []string{`response. and service. apply to latency`}},
		{"drift.errors<1%", []string{`drift. applies to latency metrics and achieved`}},
		{"drift.achieved>-2ms", []string{`achieved takes a relative change`}},
		{"drift.p99<20", []string{`p99 takes a relative change (20%) or a difference (5ms)`}},
		{"drift.p99<-100%", []string{`above -100%`}},
		{"errors<101%", []string{`between 0% and 100%`}},
		{"errors<1ms", []string{`errors takes a percentage (0.1%) or a count (0)`}},
		{"dropped<0.5", []string{`whole number`}},
		{"achieved>99", []string{`achieved takes a percentage of the target rate (99%) or a rate (5000/s)`}},
		{"achieved>0/s", []string{`a rate must be above 0`}},
		{"errors<NaN%", []string{`"NaN%" is not a value`}},
		{"errors<0x1p-3%", []string{`is not a value`}},
		{"p99<50ms@", []string{`column 10 `, `"" is not a window length`}},
		{"p99<50ms@fast", []string{`"fast" is not a window length`}},
		{"p99<50ms@100ms", []string{`window 100ms is out of range`}},
		{"p99<50ms!@1m", []string{`column 10 `, `unexpected "@1m"`}},
		{"p99<50ms 1", []string{`unexpected "1"`}},
		{"p99<50ms,", []string{`column 10 `, `empty threshold`}},
		{",p99<50ms", []string{`column 1 `, `empty threshold`}},
		{"p99<50ms, p99 < 50ms", []string{`column 11 `, `p99<50ms is listed twice`}},
		{"µ<1s", []string{`column 1 `, `unknown metric "µ"`}},
		{"p99<5µ", []string{`column 5 `}},
	} {
		_, err := ParseThresholds(tc.in)
		if err == nil {
			t.Errorf("%q: no error, want %v", tc.in, tc.want)
			continue
		}
		problems := settings.Problems(err)
		for _, p := range problems {
			var te *ThresholdError
			if !errors.As(p, &te) || te.Expr != tc.in {
				t.Errorf("%q: %v is not a *ThresholdError of the expression", tc.in, p)
			}
		}
		msg := err.Error()
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%q: error %q lacks %q", tc.in, msg, w)
			}
		}
		if strings.HasPrefix(tc.want[0], "column") && len(tc.want) == 2 && strings.HasPrefix(tc.want[1], "column") && len(problems) != 2 {
			t.Errorf("%q: %d problems, want 2: %v", tc.in, len(problems), err)
		}
	}
}

// Bad thresholds are configuration errors naming SOAKD_<W>_THRESHOLDS,
// reported with every other problem; some depend on the workload.
func TestThresholdsConfig(t *testing.T) {
	t.Parallel()
	p := testPlugins()
	for _, tc := range []struct {
		env  map[string]string
		want []string
	}{
		{testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_THRESHOLDS", "p99<5Oms, op:read.p99<1ms", "SOAKD_SEQ_WORKERS", "0"),
			[]string{`SOAKD_SEQ_THRESHOLDS: column 5 of "p99<5Oms, op:read.p99<1ms": "5Oms" is not a value`,
				`SOAKD_SEQ_THRESHOLDS: op:read.p99<1ms: a series workload has no op "read" (its ops: write)`,
				`SOAKD_SEQ_WORKERS: 0 is out of range`}},
		{testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_THRESHOLDS", "achieved>99%", "SOAKD_SEQ_RATE", "max"),
			[]string{`SOAKD_SEQ_THRESHOLDS: achieved>99%: RATE=max has no target rate`}},
		{testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_THRESHOLDS", "drift.p99<20%", "SOAKD_SEQ_DURATION", "2m"),
			[]string{`SOAKD_SEQ_THRESHOLDS: drift.p99<20%: the run phase (at most 2m0s) is shorter than SOAKD_SEQ_DRIFT_WARMUP (1m0s) + 2 windows of 1m0s`}},
		{testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_THRESHOLDS", "drift.p99<20%@10s", "SOAKD_SEQ_RATE", "20s:100", "SOAKD_SEQ_DRIFT_WARMUP", "5s"),
			[]string{`the run phase (at most 20s) is shorter than SOAKD_SEQ_DRIFT_WARMUP (5s) + 2 windows of 10s`}},
		{testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_THRESHOLDS", "drift.p99<20%@10s", "SOAKD_DURATION", "15s", "SOAKD_SEQ_DRIFT_WARMUP", "-1s"),
			[]string{`SOAKD_SEQ_DRIFT_WARMUP: must not be negative`, `the run phase (at most 15s)`}},
	} {
		cfg, err := Load(tc.env, p.Sources)
		err = cfg.Check(p, err)
		if err == nil {
			t.Errorf("%v: no error", tc.env)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error lacks %q:\n%v", tc.env, w, err)
			}
		}
	}
	cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_THRESHOLDS", "p99<50ms, drift.p99<20%@10s",
		"SOAKD_SEQ_DURATION", "30s", "SOAKD_SEQ_DRIFT_WARMUP", "10s"), p)
	if got := cfg.Workload[0].Checks; len(got) != 2 || got[1].String() != "drift.p99<20%@10s" {
		t.Errorf("checks %+v", got)
	}
}

// Whatever the input, the parser neither panics nor accepts what it
// cannot print back: an accepted check reparses, from its label, to
// itself, and every problem points into the expression.
func FuzzParseThresholds(f *testing.F) {
	for _, s := range []string{"p99<50ms, p99.9<200ms, errors<0.1%, achieved>99%, dropped=0, op:read.p99<5ms, service.p99<10ms",
		"p99<50ms@1m", "drift.p99<20%", "drift.achieved>-2%@5m!", "errors<5%!", "achieved>=2.5k/s", " p99 <= 1s @ 10s ! ",
		"p99<5Oms", ",", "op:read.service.max<1µs", "p1e2<1s", "drift.op:x.p9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseThresholds(in)
		for _, p := range settings.Problems(err) {
			var te *ThresholdError
			if !errors.As(p, &te) || te.Pos < 0 || te.Pos > len(in) || te.Expr != in {
				t.Fatalf("%q: problem %v does not point into the expression", in, p)
			}
			_ = p.Error()
		}
		if err != nil {
			return
		}
		for _, th := range got {
			if strings.ContainsAny(th.text, " \t,") {
				t.Fatalf("%q: label %q holds a space or comma", in, th.text)
			}
			again, err := ParseThresholds(th.String())
			if err != nil || len(again) != 1 || again[0] != th {
				t.Fatalf("%q: %q reparses to %+v, %v; want %+v", in, th.String(), again, err, th)
			}
		}
	})
}
