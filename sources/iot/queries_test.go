package iot

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/soakd/soakd/sources"
)

func TestQueryMixParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, out, err string
	}{
		{in: "", out: "all"},
		{in: "ALL", out: "all"},
		{in: "lastpoint", out: "lastpoint"},
		{in: " lastpoint , double-groupby-5=2.5,high-cpu-1=1", out: "lastpoint,double-groupby-5=2.5,high-cpu-1"},
		{in: "lastpoint,lastpoint", err: "listed twice"},
		{in: "lastpoint=0", err: "want a number in (0, 1e+06]"},
		{in: "lastpoint=-1", err: "want a number"},
		{in: "lastpoint=NaN", err: "want a number"},
		{in: "lastpoint=x", err: "want a number"},
		{in: "cpu-max-all-32-24", err: `unknown query type "cpu-max-all-32-24"`},
		{in: "lastpoint,", err: `unknown query type ""`},
	} {
		var m QueryMix
		err := m.UnmarshalText([]byte(tc.in))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one containing %q", tc.in, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.err == "" && m.String() != tc.out:
			t.Errorf("%q parsed as %q, want %q", tc.in, m.String(), tc.out)
		}
	}
}

func FuzzQueryMix(f *testing.F) {
	for _, s := range []string{"all", "lastpoint", "lastpoint=2,high-cpu-all=0.5", "x=1", "=", ",,", "lastpoint=1e6", "lastpoint=1e7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var m QueryMix
		if err := m.UnmarshalText([]byte(s)); err != nil {
			return
		}
		var back QueryMix
		if err := back.UnmarshalText([]byte(m.String())); err != nil {
			t.Fatalf("%q parsed as %q, which does not parse: %v", s, m.String(), err)
		}
		if back.String() != m.String() {
			t.Fatalf("%q: %q reparsed as %q", s, m.String(), back.String())
		}
		for _, it := range m.Items {
			if !(it.Weight > 0 && it.Weight <= maxMixWeight) {
				t.Fatalf("%q: weight %v", s, it.Weight)
			}
		}
	})
}

func TestQueryConfigValidate(t *testing.T) {
	t.Parallel()
	mix := func(s string) QueryMix {
		var m QueryMix
		if err := m.UnmarshalText([]byte(s)); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, tc := range []struct {
		name, source string
		c            QueryConfig
		errs         []string
	}{
		{"defaults", "devops-queries", DefaultQueryConfig(), nil},
		{"iot defaults", "iot-queries", DefaultQueryConfig(), nil},
		{"unknown source", "cpu-queries", DefaultQueryConfig(), []string{"SOURCE: unknown query source"}},
		{"wrong use case", "devops-queries", QueryConfig{Scale: 10, Queries: mix("lastpoint,last-loc")},
			[]string{"QUERIES: last-loc is a iot query; devops-queries runs devops queries"}},
		{"too few hosts", "devops-queries", QueryConfig{Scale: 4, Queries: mix("all")},
			[]string{"QUERIES: single-groupby-1-8-1 picks 8 hosts but SCALE is 4", "QUERIES: cpu-max-all-8 picks 8 hosts"}},
		{"scale", "iot-queries", QueryConfig{Scale: 0, Queries: mix("all")}, []string{"SCALE: 0 is out of range"}},
	} {
		err := tc.c.Validate(tc.source)
		if len(tc.errs) == 0 && err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		for _, want := range tc.errs {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %v, want %q", tc.name, err, want)
			}
		}
		var se *sources.SettingError
		if err != nil && !errors.As(err, &se) {
			t.Errorf("%s: %T is not a SettingError", tc.name, err)
		}
	}
}

func TestQueries(t *testing.T) {
	t.Parallel()
	c := DefaultQueryConfig()
	c.Scale = 20
	if err := c.Queries.UnmarshalText([]byte("lastpoint=3,single-groupby-5-8-1,high-cpu-1")); err != nil {
		t.Fatal(err)
	}
	q, err := NewQueries("devops-queries", c, 7)
	if err != nil {
		t.Fatal(err)
	}
	if q.Kind() != sources.Queries || len(q.Schemas()) != 1 || q.Schemas()[0].Measurement != "cpu" {
		t.Fatalf("kind %v schemas %v", q.Kind(), q.Schemas())
	}
	if got := q.QueryTypes(); !slices.Equal(got, []sources.QueryType{sources.Lastpoint, sources.SingleGroupby581, sources.HighCPU1}) {
		t.Errorf("QueryTypes = %v", got)
	}
	st, _ := q.Stream(0, 2)
	st2, _ := q.Stream(0, 2)
	other, _ := q.Stream(1, 2)
	b, b2, b3 := q.NewBatch(), q.NewBatch(), q.NewBatch()
	const n = 20000
	_ = st.Fill(b, n, 0)
	_ = st2.Fill(b2, n, 0)
	_ = other.Fill(b3, n, 0)
	if !reflect.DeepEqual(b.Queries, b2.Queries) {
		t.Error("the same stream of the same source gave other queries")
	}
	if reflect.DeepEqual(b.Queries[:100], b3.Queries[:100]) {
		t.Error("two streams gave the same queries")
	}
	count := map[sources.QueryType]int{}
	for _, qq := range b.Queries {
		count[qq.Type]++
		info := qq.Type.Info()
		if int(qq.NDevices) != info.Devices {
			t.Fatalf("%s with %d devices, want %d", qq.Type, qq.NDevices, info.Devices)
		}
		devs := qq.Devices[:qq.NDevices]
		for i, d := range devs {
			if d >= 20 || slices.Contains(devs[:i], d) {
				t.Fatalf("%s: devices %v: want distinct, below SCALE", qq.Type, devs)
			}
		}
		if !(qq.Pos >= 0 && qq.Pos < 1) || qq.Latest || qq.Expect != info.MustFind || qq.Fleet != "" {
			t.Fatalf("query %+v", qq)
		}
	}
	for typ, want := range map[sources.QueryType]float64{sources.Lastpoint: 0.6, sources.SingleGroupby581: 0.2, sources.HighCPU1: 0.2} {
		if got := float64(count[typ]) / n; math.Abs(got-want) > 0.02 {
			t.Errorf("%s is %.3f of the queries, want %.2f", typ, got, want)
		}
	}
}

func TestIoTQueries(t *testing.T) {
	t.Parallel()
	c := DefaultQueryConfig()
	c.Scale = 3
	c.Window = WindowLatest
	q, err := NewQueries("iot-queries", c, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Schemas()) != 2 {
		t.Fatalf("schemas %v", q.Schemas())
	}
	// With 3 trucks at most 3 fleets have one: last-loc expects rows only
	// for those.
	var tagBuf []byte
	inFleet := map[string]bool{}
	for d := range uint32(3) {
		tagBuf = truckTags{1}.AppendTag(tagBuf[:0], d, 1)
		inFleet[string(tagBuf)] = true
	}
	st, _ := q.Stream(0, 1)
	b := q.NewBatch()
	_ = st.Fill(b, 5000, 0)
	seen := map[sources.QueryType]bool{}
	for _, qq := range b.Queries {
		seen[qq.Type] = true
		if qq.Type.Info().UseCase != sources.UseIoT || !qq.Latest {
			t.Fatalf("query %+v", qq)
		}
		if qq.Type.Info().Fleet != (qq.Fleet != "") {
			t.Fatalf("%s with fleet %q", qq.Type, qq.Fleet)
		}
		if qq.Type == sources.LastLoc && qq.Expect != inFleet[qq.Fleet] {
			t.Fatalf("last-loc in fleet %q expects rows: %v; trucks in fleets %v", qq.Fleet, qq.Expect, inFleet)
		}
		if (qq.Type == sources.HighLoad) != (len(qq.LoadCapacities) == 3) {
			t.Fatalf("%s with load capacities %v", qq.Type, qq.LoadCapacities)
		}
	}
	if len(seen) != 9 {
		t.Errorf("%d of the 9 iot query types issued", len(seen))
	}
}

func BenchmarkQueryFill(b *testing.B) {
	q, err := NewQueries("devops-queries", DefaultQueryConfig(), 1)
	if err != nil {
		b.Fatal(err)
	}
	st, _ := q.Stream(0, 1)
	batch := q.NewBatch()
	b.ReportAllocs()
	for b.Loop() {
		batch.Reset()
		_ = st.Fill(batch, 16, 0)
	}
}
