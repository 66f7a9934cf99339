package iot

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/sources"
)

// tenure is when a device held its slot: [from, to), to = 0 while it
// still does.
type tenure struct{ from, to int64 }

// churnSchedule works out CHURN's replacements one churn interval after
// the other, as the README states them (after e intervals floor(e ×
// scale × share) replacements, round robin from slot 0, slot s then
// held by s + k × scale), up to data time until: every device's tenure.
func churnSchedule(scale int, perMillion int64, every time.Duration, origin, until int64) map[uint32]tenure {
	ten := map[uint32]tenure{}
	holder := make([]uint32, scale)
	for s := range holder {
		holder[s] = uint32(s)
		ten[uint32(s)] = tenure{from: origin}
	}
	made := int64(0)
	for e := int64(1); origin+e*int64(every) <= until; e++ {
		at := origin + e*int64(every)
		for r := e * int64(scale) * perMillion / 1_000_000; made < r; made++ {
			s := made % int64(scale)
			old := holder[s]
			ten[old] = tenure{from: ten[old].from, to: at}
			holder[s] = old + uint32(scale)
			ten[holder[s]] = tenure{from: at}
		}
	}
	return ten
}

// With CHURN every device a query names, as a sink renders it over the
// data written so far, held its slot during the query's window and sent
// a reading in it; and churn shows (queries name replacement devices).
func TestChurnedQueriesNameLiveDevices(t *testing.T) {
	t.Parallel()
	const (
		scale    = 20
		interval = 10 * time.Second
	)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for _, tc := range []struct {
		name   string
		churn  string
		window Window
		span   time.Duration
	}{
		{"10%/10m random", "10%/10m", WindowRandom, 72 * time.Hour},
		{"10%/10m latest", "10%/10m", WindowLatest, 72 * time.Hour},
		{"100%/1m random", "100%/1m", WindowRandom, 24 * time.Hour},
		{"3%/7m over 30m", "3%/7m", WindowRandom, 30 * time.Minute},
	} {
		c := DefaultQueryConfig()
		c.Scale = scale
		c.Window = tc.window
		if err := c.Churn.UnmarshalText([]byte(tc.churn)); err != nil {
			t.Fatal(err)
		}
		if err := c.Queries.UnmarshalText([]byte("single-groupby-5-8-1,single-groupby-1-1-12,cpu-max-all-8,high-cpu-1,lastpoint")); err != nil {
			t.Fatal(err)
		}
		q, err := NewQueries("devops-queries", c, 3)
		if err != nil {
			t.Fatal(err)
		}
		// The newest reading is at a round's time, as the data set's.
		newest := start + int64(tc.span/interval)*int64(interval)
		rng := sources.DataRange{Oldest: start, Newest: newest, Known: true}
		ten := churnSchedule(scale, c.Churn.PerMillion, c.Churn.Every, start, newest)
		st, _ := q.Stream(0, 1)
		b := q.NewBatch()
		_ = st.Fill(b, 3000, 0)
		named, replacement := 0, 0
		for _, qq := range b.Queries {
			rq := qq.Resolved(rng)
			if qq.Type.Info().Devices == 0 {
				if rq.NDevices != 0 || qq.Churn != nil {
					t.Fatalf("%s names devices %v (churn %v)", qq.Type, rq.Devices[:rq.NDevices], qq.Churn)
				}
				continue
			}
			lo, hi := qq.Window(rng)
			devs := rq.Devices[:rq.NDevices]
			for i, d := range devs {
				named++
				if d >= scale {
					replacement++
				}
				tn, ok := ten[d]
				if !ok || slices.Contains(devs[:i], d) {
					t.Fatalf("%s over [%d, %d): devices %v: %d never held a slot by then, or is named twice", qq.Type, lo, hi, devs, d)
				}
				to := tn.to
				if to == 0 {
					to = newest + 1
				}
				// A reading of d in the window: a round's time in
				// [max(from, lo), min(to, hi)).
				from, until := max(tn.from, lo), min(to, hi)
				first := start + (from-start+int64(interval)-1)/int64(interval)*int64(interval)
				if first >= until {
					t.Fatalf("%s over [%s, %s): device %d held its slot over [%s, %s) and sent nothing in the window",
						qq.Type, ts(lo), ts(hi), d, ts(tn.from), ts(to))
				}
			}
		}
		if named == 0 || replacement == 0 {
			t.Errorf("%s: %d devices named, %d of them replacements: churn does not show", tc.name, named, replacement)
		}
	}
}

func ts(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339) }

// The query workload's schedule is the data set's: the device holding a
// slot at any time is the one the data source writes then.
func TestQueryChurnIsTheDataSets(t *testing.T) {
	t.Parallel()
	for _, churn := range []string{"10%/10m", "100%/1m", "0.5%/10s", "37%/3m"} {
		dc := DefaultConfig()
		dc.Scale = 30
		if err := dc.Churn.UnmarshalText([]byte(churn)); err != nil {
			t.Fatal(err)
		}
		if err := dc.Start.UnmarshalText([]byte("2026-01-01T00:00:00Z")); err != nil {
			t.Fatal(err)
		}
		src, err := Build("devops", dc, 1, sources.Shard{})
		if err != nil {
			t.Fatal(err)
		}
		qc := &sources.QueryChurn{Scale: 30, PerMillion: uint64(dc.Churn.PerMillion), Every: int64(dc.Churn.Every)}
		origin := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
		for i := range 5000 {
			at := origin - int64(time.Hour) + int64(i)*int64(37*time.Second)
			for slot := range uint32(30) {
				if got, want := qc.Identity(slot, origin, at), src.Identity(slot, at); got != want {
					t.Fatalf("%s: slot %d at %s: query workload names device %d, the data set has %d", churn, slot, ts(at), got, want)
				}
			}
		}
	}
}

func TestQueryChurnSetting(t *testing.T) {
	t.Parallel()
	c := DefaultQueryConfig()
	c.Churn = Churn{PerMillion: 2_000_000, Every: time.Minute}
	if err := c.Validate("devops-queries"); err == nil || !strings.Contains(err.Error(), "CHURN: ") {
		t.Errorf("share over 100%%: %v", err)
	}
	c.Churn = Churn{}
	q, err := NewQueries("devops-queries", c, 1)
	if err != nil || q.churn != nil {
		t.Fatalf("no churn: %v, %v", err, q.churn)
	}
}

// With CHURN, last-loc (the last location of every truck of a fleet, over
// the whole data set) names no device and is not resolved through the
// schedule: its answer holds every truck of its fleet that reported,
// replaced ones included, as TSBS's over its tags table. It expects rows
// only for a fleet one of them is in: with 3 trucks at a time, all
// replaced every minute, the fleets of the first 3 (which reported at
// START) and no other, so a fleet that only replacements joined is not
// an error when a target has not seen them yet.
func TestChurnedLastLoc(t *testing.T) {
	t.Parallel()
	const scale = 3
	c := DefaultQueryConfig()
	c.Scale = scale
	if err := c.Churn.UnmarshalText([]byte("100%/1m")); err != nil {
		t.Fatal(err)
	}
	if err := c.Queries.UnmarshalText([]byte("last-loc")); err != nil {
		t.Fatal(err)
	}
	q, err := NewQueries("iot-queries", c, 1)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	newest := start + int64(time.Hour)
	rng := sources.DataRange{Oldest: start, Newest: newest, Known: true}
	// The fleets of the trucks that reported: every device that held a
	// slot, from START on; and those of the first SCALE alone.
	var buf []byte
	fleetOf := func(d uint32) string {
		buf = truckTags{1}.AppendTag(buf[:0], d, 1)
		return string(buf)
	}
	reported, first := map[string]bool{}, map[string]bool{}
	for d := range churnSchedule(scale, c.Churn.PerMillion, c.Churn.Every, start, newest) {
		reported[fleetOf(d)] = true
		if d < scale {
			first[fleetOf(d)] = true
		}
	}
	st, _ := q.Stream(0, 1)
	b := q.NewBatch()
	_ = st.Fill(b, 500, 0)
	expected := map[string]bool{}
	for _, qq := range b.Queries {
		rq := qq.Resolved(rng)
		if qq.Type != sources.LastLoc || qq.NDevices != 0 || qq.Churn != nil || rq.NDevices != 0 || rq.Fleet != qq.Fleet || rq.Expect != qq.Expect {
			t.Fatalf("%s in fleet %q: devices %v, churn %v; resolved %+v", qq.Type, qq.Fleet, qq.Devices[:qq.NDevices], qq.Churn, rq)
		}
		if qq.Expect && !reported[qq.Fleet] {
			t.Fatalf("last-loc in fleet %q expects rows, but no truck of it reported (fleets that did: %v)", qq.Fleet, reported)
		}
		if qq.Expect != first[qq.Fleet] {
			t.Fatalf("last-loc in fleet %q expects rows: %t; the first %d trucks are in %v", qq.Fleet, qq.Expect, scale, first)
		}
		expected[qq.Fleet] = qq.Expect
	}
	if len(reported) <= len(first) || len(expected) != len(fleets) {
		t.Errorf("fleets of the trucks that reported %v, of the first %v; queries asked %v: churn does not show", reported, first, expected)
	}
}
