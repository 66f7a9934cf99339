package sweep

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/config"
)

// gridReport is a 2 × 2 grid sweep's result, built by hand.
func gridReport() *Result {
	pt := func(scale, cols string, rates ...float64) Point {
		n := map[string]float64{"2": 2, "5": 5}[cols]
		p := Point{AxisValues: []string{scale, cols}, Workers: 2, Batch: 100, Rates: rates}
		p.Min, p.Median, p.Max = minMedMax(rates)
		for _, r := range rates {
			p.ValueRates = append(p.ValueRates, r*n)
			p.Runs = append(p.Runs, RunCounts{Seconds: 1, Units: int64(r), Values: int64(r * n), Scheduled: int64(r) + 1, Dropped: 1, P99: 0.004})
		}
		p.ValueMin, p.ValueMedian, p.ValueMax = minMedMax(p.ValueRates)
		p.P99 = 0.004
		return p
	}
	r := &Result{Workload: "w", Unit: "rows", BatchName: "BATCH_SIZE", Values: true,
		Settings: config.SweepConfig{Repeats: 2, Duration: 3 * time.Second, Reset: true},
		Run:      []string{"SOAKD_W_SOURCE=massive"},
		Axes:     []Axis{{Name: "SCALE", Values: []string{"10", "40"}, Numeric: true}, {Name: "COLUMNS", Values: []string{"2", "5"}, Numeric: true}},
		Points:   []Point{pt("10", "2", 100, 120), pt("10", "5", 90, 110), pt("40", "2", 300, 340), pt("40", "5", 200, 220)},
		Outcome:  "done"}
	r.mark()
	r.USL = r.fitUSL()
	return r
}

// A two-axis grid's report: the best point (by values/s: COLUMNS
// changes the values a row holds, and rows/s would favour the narrowest), the order, the grid as two
// tables (first axis rows, second columns) of the median rows/s and
// values/s, each with its highest cell in bold, and the long table; the
// CSV has a row per run with the axes' values and the run's counts.
func TestGridReportShapes(t *testing.T) {
	t.Parallel()
	r := gridReport()
	r.Points[3].P99 = 0.009
	gib := func(n float64) *float64 { v := n * (1 << 30); return &v }
	r.Points[0].TargetMemoryBytes, r.Points[2].TargetMemoryBytes, r.Points[3].TargetMemoryBytes = gib(1), gib(1), gib(3)
	if r.USL != nil {
		t.Errorf("a USL fit without WORKERS as an axis: %+v", r.USL)
	}
	var md, c bytes.Buffer
	r.WriteMarkdown(&md)
	if err := r.WriteCSV(&c); err != nil {
		t.Fatal(err)
	}
	s := md.String()
	for _, want := range []string{
		"# Sweep of workload w: SCALE × COLUMNS, closed loop\n\n**Best by values/s: SCALE=40 COLUMNS=5: 210 rows/s, 1050 values/s** (median of 2 runs, min 200, max 220).\n",
		"\nOrder: SCALE (2) × COLUMNS (2), the first varying slowest, the last fastest. Each point: 2 runs, the target emptied of soakd's data before each (its tables dropped when made for another shape); runs without a finite data set last 3s.\n",
		"\n## rows/s (median)\n\n| SCALE \\ COLUMNS | 2 | 5 |\n|---|---:|---:|\n| 10 | 110 | 100 |\n| 40 | **320** | 210 |\n",
		"\n## values/s (median)\n\n| SCALE \\ COLUMNS | 2 | 5 |\n|---|---:|---:|\n| 10 | 220 | 500 |\n| 40 | 640 | **1050** |\n",
		// Latency and the target's memory per cell, none in bold: the
		// highest is no best. A cell whose memory was not read says so.
		"\n## p99 latency (median over runs)\n\n| SCALE \\ COLUMNS | 2 | 5 |\n|---|---:|---:|\n| 10 | 4.00ms | 4.00ms |\n| 40 | 4.00ms | 9.00ms |\n",
		"\n## target memory (peak)\n\n| SCALE \\ COLUMNS | 2 | 5 |\n|---|---:|---:|\n| 10 | 1.0 GiB | – |\n| 40 | 1.0 GiB | 3.0 GiB |\n",
		"\n## Points\n\n| SCALE | COLUMNS | rows/s median | min | max | values/s median | min | max | p99 | failed | | target memory |\n" +
			"|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n" +
			"| 10 | 2 | 110 | 100 | 120 | 220 | 200 | 240 | 4.00ms | 0 |  | 1.0 GiB |\n" +
			"| 10 | 5 | 100 | 90 | 110 | 500 | 450 | 550 | 4.00ms | 0 |  | – |\n" +
			"| 40 | 2 | 320 | 300 | 340 | 640 | 600 | 680 | 4.00ms | 0 |  | 1.0 GiB |\n" +
			"| 40 | 5 | 210 | 200 | 220 | 1050 | 1000 | 1100 | 9.00ms | 0 | best | 3.0 GiB |\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("markdown without\n%s\n---- got:\n%s", want, s)
		}
	}
	if strings.Contains(s, "Universal") {
		t.Errorf("a USL section without WORKERS as an axis:\n%s", s)
	}
	lines := strings.Split(strings.TrimSpace(c.String()), "\n")
	if len(lines) != 9 {
		t.Fatalf("%d CSV lines, want a header and one per run:\n%s", len(lines), c.String())
	}
	if lines[0] != "SCALE,COLUMNS,workers,batch_size,run,units_per_second,values_per_second,seconds,units,values,scheduled_units,failed_units,dropped_units,in_flight_units,p99_seconds,median,min,max,values_median,values_min,values_max,point_p99_seconds,best,throughput_falls,target_memory_bytes" ||
		lines[6] != "40,2,2,100,2,340,680,1,340,680,341,0,1,0,0.004,320,300,340,640,600,680,0.004,false,false,1073741824" ||
		lines[8] != "40,5,2,100,2,220,1100,1,220,1100,221,0,1,0,0.004,210,200,220,1050,1000,1100,0.009,true,false,3221225472" {
		t.Errorf("CSV:\n%s", c.String())
	}
}

// Three axes have no 2-D table, only the long one; with WORKERS an axis
// of three values the USL is fitted along it at the best point's values
// of the others, and a point slower than with fewer workers at the same
// other values is marked. The JSON carries the axes and each point's.
func TestGridReportWorkersAxis(t *testing.T) {
	t.Parallel()
	r := &Result{Workload: "w", Unit: "ops", BatchName: "PIPELINE", Settings: config.SweepConfig{Repeats: 1, Duration: time.Second},
		Axes: []Axis{{Name: "DATA_TYPE", Values: []string{"string", "hash"}}, {Name: "FIELD_LENGTH", Values: []string{"128"}, Numeric: true},
			{Name: "WORKERS", Values: []string{"1", "2", "4"}, Numeric: true}}}
	for _, dt := range []struct {
		name string
		x    []float64
	}{{"string", []float64{100, 190, 350}}, {"hash", []float64{80, 150, 120}}} {
		for i, w := range []int{1, 2, 4} {
			x := dt.x[i]
			r.Points = append(r.Points, Point{AxisValues: []string{dt.name, "128", []string{"1", "2", "4"}[i]}, Workers: w, Batch: 1,
				Rates: []float64{x}, Min: x, Median: x, Max: x})
		}
	}
	r.mark()
	r.USL = r.fitUSL()
	for i, p := range r.Points {
		if p.Best != (i == 2) || p.Falls != (i == 5) {
			t.Errorf("point %v: best %v, falls %v", p.AxisValues, p.Best, p.Falls)
		}
	}
	if u := r.USL; u == nil || strings.Join(u.Where, " ") != "DATA_TYPE=string FIELD_LENGTH=128" || len(u.Workers) != 3 || u.Measured[2] != 350 {
		t.Fatalf("USL %+v, want it along WORKERS at DATA_TYPE=string FIELD_LENGTH=128", r.USL)
	}
	var md, js bytes.Buffer
	r.WriteMarkdown(&md)
	s := md.String()
	if strings.Contains(s, "(median)") || !strings.Contains(s, "| DATA_TYPE | FIELD_LENGTH | WORKERS | ops/s median | min | max | p99 | failed | |\n") ||
		!strings.Contains(s, "| hash | 128 | 4 | 120 | 120 | 120 | - | 0 | slower than with fewer workers |\n") ||
		!strings.Contains(s, "\n## Universal Scalability Law (WORKERS at DATA_TYPE=string FIELD_LENGTH=128)\n") {
		t.Errorf("markdown:\n%s", s)
	}
	// Operations hold no values: no column of zeros for them.
	var c bytes.Buffer
	if err := r.WriteCSV(&c); err != nil {
		t.Fatal(err)
	}
	if head, _, _ := strings.Cut(c.String(), "\n"); head != "DATA_TYPE,FIELD_LENGTH,WORKERS,workers,pipeline,run,units_per_second,seconds,units,scheduled_units,failed_units,dropped_units,in_flight_units,p99_seconds,median,min,max,point_p99_seconds,best,throughput_falls" {
		t.Errorf("CSV header %s", head)
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Axes   []Axis  `json:"axes"`
		Points []Point `json:"points"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Axes) != 3 || back.Axes[0].Numeric || !back.Axes[2].Numeric || strings.Join(back.Points[4].AxisValues, " ") != "hash 128 2" {
		t.Errorf("JSON read back: axes %+v, point 4 %v", back.Axes, back.Points[4].AxisValues)
	}
}
