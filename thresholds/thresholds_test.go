package thresholds

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/settings"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []Check
	}{
		{"", nil},
		{"  ", nil},
		{"p99<50ms", []Check{{Text: "p99<50ms", Metric: Quantile, Q: 99, Cmp: LT, Kind: Duration, Value: 0.05}}},
		// Spaces around the comparison, @ and ! are dropped from the label.
		{" p99.9 <= 200ms @ 1m ! ", []Check{{Text: "p99.9<=200ms@1m!", Metric: Quantile, Q: 99.9, Cmp: LE,
			Kind: Duration, Value: 0.2, Window: time.Minute, Abort: true}}},
		{"errors<0.1%, dropped=0, failed<=10, achieved>99%, achieved>=2.5k/s", []Check{
			{Text: "errors<0.1%", Metric: Errors, Cmp: LT, Kind: Percent, Value: 0.001},
			{Text: "dropped=0", Metric: Dropped, Cmp: EQ, Kind: Count},
			{Text: "failed<=10", Metric: Failed, Cmp: LE, Kind: Count, Value: 10},
			{Text: "achieved>99%", Metric: Achieved, Cmp: GT, Kind: Percent, Value: 0.99},
			{Text: "achieved>=2.5k/s", Metric: Achieved, Cmp: GE, Kind: Rate, Value: 2500},
		}},
		{"op:read.p99<5ms,service.p99<10ms,op:update.service.max<1s,response.mean<2ms", []Check{
			{Text: "op:read.p99<5ms", Op: "read", Metric: Quantile, Q: 99, Kind: Duration, Value: 0.005},
			{Text: "service.p99<10ms", Service: true, Metric: Quantile, Q: 99, Kind: Duration, Value: 0.01},
			{Text: "op:update.service.max<1s", Op: "update", Service: true, Metric: Max, Kind: Duration, Value: 1},
			{Text: "response.mean<2ms", Metric: Mean, Kind: Duration, Value: 0.002},
		}},
		{"drift.p99<20%, drift.achieved>-2%@5m, drift.op:read.service.p50<1ms!, errors<5%!", []Check{
			{Text: "drift.p99<20%", Drift: true, Metric: Quantile, Q: 99, Kind: Percent, Value: 0.2},
			{Text: "drift.achieved>-2%@5m", Drift: true, Metric: Achieved, Cmp: GT, Kind: Percent, Value: -0.02, Window: 5 * time.Minute},
			{Text: "drift.op:read.service.p50<1ms!", Drift: true, Op: "read", Service: true, Metric: Quantile, Q: 50,
				Kind: Duration, Value: 0.001, Abort: true},
			{Text: "errors<5%!", Metric: Errors, Kind: Percent, Value: 0.05, Abort: true},
		}},
		{"p100<1s,p0.1<1µs,op:write.errors<1", []Check{
			{Text: "p100<1s", Metric: Quantile, Q: 100, Kind: Duration, Value: 1},
			{Text: "p0.1<1µs", Metric: Quantile, Q: 0.1, Kind: Duration, Value: 1e-6},
			{Text: "op:write.errors<1", Op: "write", Metric: Errors, Kind: Count, Value: 1},
		}},
		// The target's own figures, in bytes, decimal or binary as written.
		{"target.memory<8GiB, target.storage <= 100GB @ 1m !, target.storage_per_value<4B, drift.target.memory<5%, drift.target.storage<100MiB@30s", []Check{
			{Text: "target.memory<8GiB", Metric: TargetMemory, Kind: Bytes, Value: 8 << 30},
			{Text: "target.storage<=100GB@1m!", Metric: TargetStorage, Cmp: LE, Kind: Bytes, Value: 100e9, Window: time.Minute, Abort: true},
			{Text: "target.storage_per_value<4B", Metric: TargetStoragePerValue, Kind: Bytes, Value: 4},
			{Text: "drift.target.memory<5%", Drift: true, Metric: TargetMemory, Kind: Percent, Value: 0.05},
			{Text: "drift.target.storage<100MiB@30s", Drift: true, Metric: TargetStorage, Kind: Bytes, Value: 100 << 20, Window: 30 * time.Second},
		}},
		{"target.memory<1KB,target.memory<1KiB,target.memory<1.5MB,target.memory<2MiB,target.memory<1TB,target.memory<1TiB,target.memory>0B", []Check{
			{Text: "target.memory<1KB", Metric: TargetMemory, Kind: Bytes, Value: 1000},
			{Text: "target.memory<1KiB", Metric: TargetMemory, Kind: Bytes, Value: 1024},
			{Text: "target.memory<1.5MB", Metric: TargetMemory, Kind: Bytes, Value: 1.5e6},
			{Text: "target.memory<2MiB", Metric: TargetMemory, Kind: Bytes, Value: 2 << 20},
			{Text: "target.memory<1TB", Metric: TargetMemory, Kind: Bytes, Value: 1e12},
			{Text: "target.memory<1TiB", Metric: TargetMemory, Kind: Bytes, Value: 1 << 40},
			{Text: "target.memory>0B", Metric: TargetMemory, Cmp: GT, Kind: Bytes},
		}},
	} {
		got, err := Parse(tc.in)
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
			if g.Value != w.Value && (w.Value == 0 || abs(g.Value-w.Value) > 1e-12*abs(w.Value)) {
				t.Errorf("%q #%d: value %v, want %v", tc.in, i, g.Value, w.Value)
			}
			g.Value = w.Value
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
func TestParseErrors(t *testing.T) {
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
		{"achieved>1e308/s", []string{`a rate must be above 0 and at most 1e12/s`}},
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
		{"target.memory<8", []string{`target.memory takes a size in bytes (8GiB, 100GB, 4B)`}},
		{"target.memory<8G", []string{`"8G" is not a value`}},
		{"target.memory<8gib", []string{`"8gib" is not a value`}},
		{"target.memory<1e3B", []string{`"1e3B" is not a value`}},
		{"target.memory<GiB", []string{`"GiB" is not a value`}},
		{"target.memory<5%", []string{`target.memory takes a size in bytes`}},
		{"target.memory<-1B", []string{`must not be negative`}},
		{"target.memory=1GiB", []string{`= compares counts`}},
		{"target.cpu<1s", []string{`column 8 `, `unknown figure of the target "cpu"`}},
		{"target.op:read.memory<1B", []string{`unknown figure of the target "op:read.memory"`}},
		{"op:read.target.memory<1B", []string{`unknown metric "target.memory"`}},
		{"drift.target.storage_per_value<5%", []string{`column 1 `, `drift. applies to target.memory and target.storage`}},
		{"drift.target.memory<5ms", []string{`target.memory takes a relative change (5%) or a difference in bytes (100MiB)`}},
		{"p99<1GiB", []string{`p99 takes a duration`}},
		{"errors<1B", []string{`errors takes a percentage (0.1%) or a count (0)`}},
	} {
		_, err := Parse(tc.in)
		if err == nil {
			t.Errorf("%q: no error, want %v", tc.in, tc.want)
			continue
		}
		problems := settings.Problems(err)
		for _, p := range problems {
			var te *Error
			if !errors.As(p, &te) || te.Expr != tc.in {
				t.Errorf("%q: %v is not a *thresholds.Error of the expression", tc.in, p)
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

// Whatever the input, the parser neither panics nor accepts what it
// cannot print back: an accepted check reparses, from its label, to
// itself, and every problem points into the expression.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"p99<50ms, p99.9<200ms, errors<0.1%, achieved>99%, dropped=0, op:read.p99<5ms, service.p99<10ms",
		"p99<50ms@1m", "drift.p99<20%", "drift.achieved>-2%@5m!", "errors<5%!", "achieved>=2.5k/s", " p99 <= 1s @ 10s ! ",
		"p99<5Oms", ",", "op:read.service.max<1µs", "p1e2<1s", "drift.op:x.p9",
		"target.memory<8GiB", "target.storage<=100GB@1m!", "target.storage_per_value<4B", "drift.target.memory<5%",
		"drift.target.storage<-1.5MiB@10s", "target.memory<1e3KB", "target.x<1B", "drift.target.storage_per_value<1%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := Parse(in)
		for _, p := range settings.Problems(err) {
			var te *Error
			if !errors.As(p, &te) || te.Pos < 0 || te.Pos > len(in) || te.Expr != in {
				t.Fatalf("%q: problem %v does not point into the expression", in, p)
			}
			_ = p.Error()
		}
		if err != nil {
			return
		}
		for _, th := range got {
			if strings.ContainsAny(th.Text, " \t,") {
				t.Fatalf("%q: label %q holds a space or comma", in, th.Text)
			}
			again, err := Parse(th.String())
			if err != nil || len(again) != 1 || again[0] != th {
				t.Fatalf("%q: %q reparses to %+v, %v; want %+v", in, th.String(), again, err, th)
			}
		}
	})
}
