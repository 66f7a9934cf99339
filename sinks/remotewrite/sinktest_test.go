package remotewrite

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/sinktest"
	"github.com/soakd/soakd/sources"
)

// TestConformance runs the sink suite against Prometheus 2.42 (with an
// out-of-order window: the suite's trucks send late readings),
// VictoriaMetrics and Prometheus v3 (the same window; Remote-Write 2.0). Each sink writes under a label of its own
// (label=sinktest:N); a row is stored when any of its fields' samples
// is: the rows are the distinct (measurement, labels, time) read back.
func TestConformance(t *testing.T) {
	for _, mk := range []func(*testing.T) target{
		func(t *testing.T) target { return prometheusTarget(t, time.Hour) },
		victoriaTarget,
		func(t *testing.T) target { return prometheus3Target(t, time.Hour) },
	} {
		tg := mk(t)
		t.Run(tg.name, func(t *testing.T) {
			n := 0
			base := strings.TrimPrefix(tg.write, "prom+http://")
			base = base[:strings.IndexByte(base, '/')]
			sinktest.Run(t, sinktest.Harness{
				Kinds:  []sources.Kind{sources.Series},
				Server: base,
				Open: func(t *testing.T, addr string, o sinks.Options) sinktest.Target {
					n++
					run := fmt.Sprintf("s%d", n)
					if addr == "" {
						addr = base
					}
					s, err := Open(context.Background(), mustParse(t, "prom+http://"+addr+"/api/v1/write?label=sinktest:"+run), o)
					if err != nil {
						t.Fatal(err)
					}
					return sinktest.Target{Sink: s, Count: func(t *testing.T) int {
						tg.flush(t)
						return countRows(t, tg.base, o.Schemas, run)
					}}
				},
			})
		})
	}
}

// countRows reads back every sample of schemas' metrics under
// sinktest=run and counts the distinct (measurement, labels, time).
func countRows(t *testing.T, base string, schemas []*sources.Schema, run string) int {
	t.Helper()
	metric := map[string]string{} // metric name → measurement
	for _, sc := range schemas {
		for _, f := range sc.Fields {
			metric[MetricName(sc.Measurement, f.Name)] = sc.Measurement
		}
	}
	rows := map[string]bool{}
	for _, sc := range schemas {
		q := fmt.Sprintf(`{__name__=~"%s.*",sinktest=%q}[1000d]`, MetricName(sc.Measurement, ""), run)
		for _, ser := range promQuery(t, base, q, time.Now()) {
			meas, ok := metric[ser.Metric["__name__"]]
			if !ok {
				continue
			}
			delete(ser.Metric, "__name__")
			for _, v := range ser.Values {
				rows[fmt.Sprint(meas, ser.Metric, int64(math.Round(v[0]*1000)))] = true
			}
		}
	}
	return len(rows)
}
