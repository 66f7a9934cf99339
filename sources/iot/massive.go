package iot

import (
	"strconv"

	"github.com/soakd/soakd/sources"
)

// massive is the vendor "massive IoT" shape: many devices, each a row of
// COLUMNS numbers per reading. It keeps no per-device state: a value is a
// pure function of (seed, device, time, column), a per-(device, column)
// level in [0, 8192) plus noise in [-100, 100] (int) or [-100.00, 100.00]
// (float, 2 decimals).
type massive struct {
	sch   *sources.Schema
	float bool
}

// massiveTags: device=device_N and group=N/1000 (groups of 1000
// consecutive devices).
type massiveTags struct{}

func (massiveTags) AppendTag(dst []byte, d uint32, tag int) []byte {
	if tag == 0 {
		dst = append(dst, "device_"...)
		return strconv.AppendUint(dst, uint64(d), 10)
	}
	return strconv.AppendUint(dst, uint64(d/1000), 10)
}

func newMassive(columns int, typ ColumnType) *massive {
	s := &sources.Schema{Measurement: "massive", TagKeys: []string{"device", "group"}, Tags: massiveTags{}}
	for c := range columns {
		f := sources.Field{Name: "c" + strconv.Itoa(c), Kind: sources.Int}
		if typ == ColumnFloat {
			f.Kind, f.Decimals = sources.Float, 2
		}
		s.Fields = append(s.Fields, f)
	}
	return &massive{sch: s, float: typ == ColumnFloat}
}

func (m *massive) schemas() []*sources.Schema { return []*sources.Schema{m.sch} }
func (m *massive) words() int                 { return 0 }
func (m *massive) init([]int64, uint64, *rng) {}

func (m *massive) row(t *sources.Table, _ int, _ []int64, r *rng, dk uint64, _ int64) {
	n := len(m.sch.Fields)
	var x uint64
	for c := range n {
		if c&3 == 0 {
			x = r.next()
		}
		// level: a multiplicative hash of (device, column), 13 bits
		level := int64((dk ^ uint64(c)*gamma) * 0xd6e8feb86659fd93 >> 51)
		u := x >> (16 * (c & 3)) & 0xffff
		if m.float {
			v := level*100 + int64(u*20001>>16) - 10000
			t.Floats[c] = append(t.Floats[c], float64(v)/100)
		} else {
			t.Ints[c] = append(t.Ints[c], level+int64(u*201>>16)-100)
		}
	}
}
