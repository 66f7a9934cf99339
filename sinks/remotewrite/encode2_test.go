package remotewrite

import (
	"slices"
	"testing"
	"time"

	writev2 "github.com/prometheus/prometheus/prompb/io/prometheus/write/v2"

	"github.com/soakd/soakd/sources"
)

// decodeV2 parses a 2.0 Request with Prometheus' own message types (what
// its receiver reads) and returns its series with their labels resolved
// through the symbol table, failing t where a receiver would refuse it.
func decodeV2(t *testing.T, b []byte) []decoded {
	t.Helper()
	var req writev2.Request
	if err := req.Unmarshal(b); err != nil {
		t.Fatalf("Request does not unmarshal: %v", err)
	}
	if len(req.Symbols) == 0 || req.Symbols[0] != "" {
		t.Fatalf("symbols %q: the first must be the empty string", req.Symbols)
	}
	seen := map[string]bool{}
	for _, s := range req.Symbols {
		if seen[s] {
			t.Fatalf("symbol %q is in the table twice", s)
		}
		seen[s] = true
	}
	var out []decoded
	for _, ts := range req.Timeseries {
		refs := ts.LabelsRefs
		if len(refs)%2 != 0 {
			t.Fatalf("labels_refs %v: odd length", refs)
		}
		var d decoded
		for i := 0; i < len(refs); i += 2 {
			if int(refs[i]) >= len(req.Symbols) || int(refs[i+1]) >= len(req.Symbols) {
				t.Fatalf("labels_refs %v: beyond the %d symbols", refs, len(req.Symbols))
			}
			d.labels = append(d.labels, [2]string{req.Symbols[refs[i]], req.Symbols[refs[i+1]]})
		}
		for _, s := range ts.Samples {
			d.samples = append(d.samples, [2]float64{float64(s.Timestamp), s.Value})
		}
		out = append(out, d)
	}
	return out
}

// A 2.0 request holds the samples a 1.0 one holds, series for series, in
// the same order (labels resolved through its symbols), over several
// tables and requests (the second round reads device labels from the
// caches, and a request's symbols never leak into the next).
func TestEncodeV2(t *testing.T) {
	t.Parallel()
	cpu, mem := cpuSchema("cpu-1"), cpuSchema("mem")
	cpu.TagKeys = []string{"hostname", "Zone"} // Zone sorts before __name__
	b := sources.NewSeriesBatch([]*sources.Schema{cpu, mem})
	labels := []Label{{"run", "r1"}}
	e1, e2 := Encoder{Labels: labels}, EncoderV2{Labels: labels}
	for round := range 3 {
		g := &gen{devices: 4 + 3*round, start: time.Date(2026, 1, 1, 0, 0, 0, 123456789, time.UTC).Add(time.Duration(round) * time.Hour), step: 1500 * time.Microsecond}
		g.fill(b, 12)
		var v1 []byte
		n1 := 0
		e2.Reset()
		n2 := 0
		for _, tb := range b.Tables {
			var n int
			v1, n = e1.AppendTable(v1, tb)
			n1 += n
			n2 += e2.AppendTable(tb)
		}
		want := decodeRequest(t, v1)
		got := decodeV2(t, e2.AppendRequest(nil))
		if n2 != n1 || n2 != b.NumValues || len(got) != n2 {
			t.Fatalf("round %d: %d samples said (1.0: %d), %d series entries, %d values", round, n2, n1, len(got), b.NumValues)
		}
		for i := range want {
			if !slices.Equal(got[i].labels, want[i].labels) || !slices.Equal(got[i].samples, want[i].samples) {
				t.Fatalf("round %d series %d: %q %v, 1.0 sends %q %v", round, i, got[i].labels, got[i].samples, want[i].labels, want[i].samples)
			}
		}
	}
}

// The symbol table holds each string once and finds it again past its
// growth.
func TestSymbols(t *testing.T) {
	t.Parallel()
	var s symtab
	s.reset()
	words := make([][]byte, 5000)
	for i := range words {
		words[i] = []byte(time.Duration(i).String())
	}
	for pass := range 2 {
		for i, w := range words {
			if r := s.ref(w); r != uint32(i+1) {
				t.Fatalf("pass %d: %q is symbol %d, want %d", pass, w, r, i+1)
			}
		}
	}
	if r := s.ref(nil); r != 0 {
		t.Errorf("the empty string is symbol %d", r)
	}
	var req writev2.Request
	if err := req.Unmarshal(s.buf); err != nil || len(req.Symbols) != len(words)+1 {
		t.Fatalf("%d symbols read back (%v)", len(req.Symbols), err)
	}
	for i, w := range words {
		if req.Symbols[i+1] != string(w) {
			t.Fatalf("symbol %d reads back %q, want %q", i+1, req.Symbols[i+1], w)
		}
	}
	s.reset()
	if r := s.ref(words[7]); r != 1 {
		t.Errorf("after reset %q is symbol %d, want 1", words[7], r)
	}
}

// Encoding a 2.0 request allocates nothing once the buffers, the symbol
// table and the caches are warm.
func TestEncodeV2Allocs(t *testing.T) {
	s := cpuSchema("cpu")
	b := sources.NewSeriesBatch([]*sources.Schema{s})
	(&gen{devices: 100, start: time.Now(), step: time.Second}).fill(b, 1000)
	var e EncoderV2
	var buf []byte
	enc := func() {
		e.Reset()
		e.AppendTable(b.Tables[0])
		buf = e.AppendRequest(buf[:0])
	}
	enc()
	if n := testing.AllocsPerRun(20, enc); n != 0 {
		t.Errorf("%v allocations per batch", n)
	}
}

func BenchmarkEncodeV2(b *testing.B) {
	s := cpuSchema("cpu")
	batch := sources.NewSeriesBatch([]*sources.Schema{s})
	(&gen{devices: 100, start: time.Now(), step: time.Second}).fill(batch, 1000)
	var e EncoderV2
	var buf, z []byte
	b.ReportAllocs()
	for b.Loop() {
		e.Reset()
		e.AppendTable(batch.Tables[0])
		buf = e.AppendRequest(buf[:0])
		z = Compress(z[:cap(z)], buf)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch.NumValues), "ns/sample")
	b.ReportMetric(float64(len(z))/float64(batch.NumValues), "bytes/sample")
}

// Every 2.0 series entry carries its metric's metadata, resolved through
// the request's own symbols: type gauge (counter for a field the source
// says only grows), the metric's help text, no unit. The second request
// holds the second schema only, so refs kept from the first request
// would point at other symbols.
func TestEncodeV2Metadata(t *testing.T) {
	t.Parallel()
	cpu, mem := cpuSchema("cpu"), cpuSchema("mem")
	cpu.Fields[2].Counter = true
	help := func(meas, field string) string {
		return "soakd series source: field " + field + " of " + meas + ", one series per device"
	}
	var e EncoderV2
	for round, schemas := range [][]*sources.Schema{{cpu, mem}, {mem}} {
		b := sources.NewSeriesBatch(schemas)
		(&gen{devices: 3, start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), step: time.Second}).fill(b, 9)
		e.Reset()
		for _, tb := range b.Tables {
			e.AppendTable(tb)
		}
		body := e.AppendRequest(nil)
		decodeV2(t, body) // symbols once each, refs within them
		var req writev2.Request
		if err := req.Unmarshal(body); err != nil {
			t.Fatal(err)
		}
		if len(req.Timeseries) != b.NumValues {
			t.Fatalf("round %d: %d series entries, %d values", round, len(req.Timeseries), b.NumValues)
		}
		byName := map[string]*sources.Schema{}
		for _, s := range schemas {
			for f, fd := range s.Fields {
				byName[MetricName(s.Measurement, fd.Name)] = &sources.Schema{Measurement: s.Measurement, Fields: s.Fields[f : f+1]}
			}
		}
		for i, ts := range req.Timeseries {
			name := ""
			for j := 0; j+1 < len(ts.LabelsRefs); j += 2 {
				if req.Symbols[ts.LabelsRefs[j]] == "__name__" {
					name = req.Symbols[ts.LabelsRefs[j+1]]
				}
			}
			s, ok := byName[name]
			if !ok {
				t.Fatalf("round %d series %d: metric %q", round, i, name)
			}
			fd := s.Fields[0]
			wantType := writev2.Metadata_METRIC_TYPE_GAUGE
			if s.Measurement == "cpu" && fd.Name == "procs" {
				wantType = writev2.Metadata_METRIC_TYPE_COUNTER
			}
			m := ts.Metadata
			if int(m.HelpRef) >= len(req.Symbols) || int(m.UnitRef) >= len(req.Symbols) {
				t.Fatalf("round %d series %d: metadata refs %d, %d beyond %d symbols", round, i, m.HelpRef, m.UnitRef, len(req.Symbols))
			}
			if m.Type != wantType || req.Symbols[m.HelpRef] != help(s.Measurement, fd.Name) || req.Symbols[m.UnitRef] != "" {
				t.Fatalf("round %d series %d (%s): type %s help %q unit %q", round, i, name, m.Type, req.Symbols[m.HelpRef], req.Symbols[m.UnitRef])
			}
		}
	}
}
