package iot

import (
	"github.com/soakd/soakd/sources"
)

// A model generates the values of one source. The stream decides which
// device-steps (device, timestamp) are emitted when; the model appends the
// field values of one measurement of a device-step, advancing the device's
// state (random walks). Values depend only on the device's state and a
// key derived from (seed, device, timestamp, measurement).
type model interface {
	schemas() []*sources.Schema
	// words is the number of int64 state words per device.
	words() int
	// init sets a device's initial state; r is scratch (a field of the
	// caller's, so that passing it does not allocate).
	init(st []int64, dk uint64, r *rng)
	// row appends one value to every field column of table t (measurement
	// m). st is the device's state, r a generator keyed by the row, dk
	// the device key and ts the row's timestamp.
	row(t *sources.Table, m int, st []int64, r *rng, dk uint64, ts int64)
}

// measurement is one table of a multi-measurement model.
type measurement interface {
	schema() *sources.Schema
	words() int
	init(st []int64, r *rng, dk uint64)
	row(t *sources.Table, st []int64, r *rng, dk uint64, ts int64)
}

// multi is a model made of measurements, one table each.
type multi struct {
	ms  []measurement
	off []int // state offset of each measurement
	n   int
	sch []*sources.Schema
}

func newMulti(ms ...measurement) *multi {
	m := &multi{ms: ms}
	for _, x := range ms {
		m.off = append(m.off, m.n)
		m.n += x.words()
		m.sch = append(m.sch, x.schema())
	}
	return m
}

func (m *multi) schemas() []*sources.Schema { return m.sch }
func (m *multi) words() int                 { return m.n }

func (m *multi) init(st []int64, dk uint64, r *rng) {
	for i, x := range m.ms {
		*r = rng{s: key(dk, int64(i), saltInit)}
		x.init(st[m.off[i]:m.off[i]+x.words()], r, dk)
	}
}

func (m *multi) row(t *sources.Table, i int, st []int64, r *rng, dk uint64, ts int64) {
	x := m.ms[i]
	x.row(t, st[m.off[i]:m.off[i]+x.words()], r, dk, ts)
}

// gen says how a field's value evolves.
type gen uint8

const (
	// walk: clamped random walk in [lo, hi], steps uniform in
	// [stepLo, stepHi] per reading (TSBS CWD).
	walk gen = iota
	// counter: monotonic, increments uniform in step ± 10% (TSBS MWD).
	counter
	// jump: keeps its value, with probability jumpP per reading moves to a
	// uniform value in [lo, hi] (TSBS LazyDistribution).
	jump
	// constant: a per-device value uniform in [lo, hi].
	constant
	// uptime: seconds since the device booted (a per-device offset in
	// [lo, hi] seconds before the origin).
	uptime
)

// field describes how one column is generated. State is an integer in
// units of 10^-scale; Int output is state*mul/div (floored), Float output
// is round(state/div)/10^dec.
type field struct {
	name           string
	kind           sources.FieldKind
	dec            int
	gen            gen
	lo, hi         int64
	stepLo, stepHi int64
	init           int64 // walk/jump initial value; -1 = uniform in [initLo, initHi] (default [lo, hi])
	initLo, initHi int64
	mul, div       int64
	refill         bool   // walk: back to hi when it reaches lo (fuel tank)
	jumpP          uint64 // jump: threshold on 32 random bits
}

func (f *field) sourcesField() sources.Field {
	d := 0
	if f.kind == sources.Float {
		d = f.dec
	}
	return sources.Field{Name: f.name, Kind: f.kind, Decimals: d, Counter: f.gen == counter}
}

var pow10 = [...]float64{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// generic is a measurement whose every field is described by a field.
type generic struct {
	sch    *sources.Schema
	fields []field
	origin int64 // uptime origin (ns)
}

func newGeneric(measurement string, tagKeys []string, tags sources.Tagger, fields []field) *generic {
	g := &generic{fields: fields}
	s := &sources.Schema{Measurement: measurement, TagKeys: tagKeys, Tags: tags}
	for i := range fields {
		f := &fields[i]
		if f.mul == 0 {
			f.mul = 1
		}
		if f.div == 0 {
			f.div = 1
		}
		s.Fields = append(s.Fields, f.sourcesField())
	}
	g.sch = s
	return g
}

func (g *generic) schema() *sources.Schema { return g.sch }
func (g *generic) words() int              { return len(g.fields) }

func (g *generic) init(st []int64, r *rng, _ uint64) {
	for i := range g.fields {
		f := &g.fields[i]
		switch {
		case f.gen == counter:
			st[i] = int64(below(r.next(), 1000)) * f.stepHi
		case f.gen == constant || f.gen == uptime || f.init < 0:
			lo, hi := f.lo, f.hi
			if f.initHi > f.initLo {
				lo, hi = f.initLo, f.initHi
			}
			st[i] = lo + int64(below(r.next(), uint64(hi-lo+1)))
		default:
			st[i] = f.init
		}
	}
}

func (g *generic) row(t *sources.Table, st []int64, r *rng, _ uint64, ts int64) {
	var x uint64
	for i := range g.fields {
		f := &g.fields[i]
		if i&1 == 0 {
			x = r.next()
		} else {
			x >>= 32
		}
		v := st[i]
		switch f.gen {
		case walk:
			v += f.stepLo + int64(below32(x, uint64(f.stepHi-f.stepLo+1)))
			if v <= f.lo {
				v = f.lo
				if f.refill {
					v = f.hi
				}
			} else if v > f.hi {
				v = f.hi
			}
			st[i] = v
		case counter:
			v += f.stepLo + int64(below32(x, uint64(f.stepHi-f.stepLo+1)))
			st[i] = v
		case jump:
			if x&0xffffffff < f.jumpP {
				v = f.lo + int64(below(r.next(), uint64(f.hi-f.lo+1)))
				st[i] = v
			}
		case uptime:
			v = v + (ts-g.origin)/1e9
		}
		if f.kind == sources.Int {
			t.Ints[i] = append(t.Ints[i], v*f.mul/f.div)
		} else {
			t.Floats[i] = append(t.Floats[i], float64(roundDiv(v, f.div))/pow10[f.dec])
		}
	}
}

// roundDiv is v/d rounded half away from zero.
func roundDiv(v, d int64) int64 {
	if d == 1 {
		return v
	}
	if v >= 0 {
		return (v + d/2) / d
	}
	return -((-v + d/2) / d)
}

// gauge is a walk field with symmetric steps and a random start.
func gauge(name string, lo, hi, step int64) field {
	return field{name: name, kind: sources.Int, gen: walk, lo: lo, hi: hi, stepLo: -step, stepHi: step, init: -1}
}

// count is a counter field growing by about inc per reading.
func count(name string, inc int64) field {
	d := inc / 10
	return field{name: name, kind: sources.Int, gen: counter, stepLo: inc - d, stepHi: inc + d}
}
