package iot

import (
	"math"
	"math/bits"

	"github.com/soakd/soakd/sources"
)

// A Stream generates the rows of a slice of the devices, round after
// round. In round r every device of the stream, in ascending order:
//
//  1. if it is offline at the round's time, emits nothing and counts the
//     reading as buffered;
//  2. else, if it was offline, first emits every buffered reading (a
//     burst, oldest first, timestamps spread evenly over the silence:
//     under the simulated clock exactly the missed rounds' times);
//  3. emits its reading for the round, unless OUT_OF_ORDER picks it as
//     late, in which case the reading waits until a round whose time is
//     at least its timestamp plus its lateness;
//  4. emits its late readings that are due (oldest first).
//
// A reading is one row per table (measurement). Under the simulated clock
// round r has time START + r*INTERVAL; a finite data set ends with one
// more round that flushes what is late or buffered, so every reading is
// emitted exactly once. Under the wall clock rows are stamped with the
// batch's intended time, strictly increasing per device.
//
// Which readings are late or buffered and every value depend only on
// (seed, device, timestamp), never on how devices are split into streams:
// a device's rows are the same in any stream, shard or process.
type Stream struct {
	src    *Source
	model  model
	nm     int // tables
	words  int // state words per device
	base   uint64
	stride uint64
	count  int // devices
	state  []int64

	round     int64
	roundTs   int64
	roundRows int // rows emitted in the current round
	drain     bool
	done      bool
	maxTs     int64 // largest timestamp emitted (wall clock)
	now       int64 // of the current Fill

	// cursor within the round
	k     int // device index in the stream
	phase uint8
	d     uint32
	dk    uint64
	t     int64 // the device's time in this round
	m     int   // next table of the reading being emitted

	burstN, burstJ    uint32
	burstT0, burstDur int64

	cur    []late // late readings, sorted by (k, ts), consumed this round
	curPos int
	next   []late // built in order for the next round
	newLt  late
	hasNew bool

	offStart []int64 // per device: time it went offline, noOff if online
	missed   []uint32

	// CHURN: the identity each slot holds (nil without churn); id is the
	// current device's, which its rows carry. nid is the identity that
	// replaces it this round; counted streams add their replacements to
	// the source's tally.
	ids     []uint32
	id, nid uint32
	counted bool

	j       int // rows of the current device emitted in this round (positions)
	values  int
	refs    *[]RowRef
	nullIdx []int
	r       rng // per row; a field so passing it to the model does not allocate
}

type late struct {
	k   int
	ts  int64
	due int64
}

const noOff = math.MinInt64

const (
	phNew uint8 = iota
	phRetire
	phCheck
	phBurst
	phOnTime
	phDue
)

var (
	_ sources.Stream     = (*Stream)(nil)
	_ sources.Positioner = (*Stream)(nil)
)

func (s *Stream) device(k int) uint32 { return uint32(s.base + uint64(k)*s.stride) }

// Fill appends up to max rows to b, continuing where the previous call
// stopped, and returns sources.ErrDone once a finite data set is
// exhausted (the rows appended by that call are valid). now is the
// batch's intended time in Unix ns (used by CLOCK=wall). In steady state
// Fill does not allocate.
func (s *Stream) Fill(b *sources.Batch, max int, now int64) error {
	if s.done || s.count == 0 {
		s.done = true
		return sources.ErrDone
	}
	s.now = now
	s.values = 0
	rows, started := 0, false
	for {
		if s.k >= s.count {
			if s.drain {
				s.done = true
				break
			}
			if started && s.src.wall && s.roundRows == 0 {
				// Every device is offline or late at this time: more rounds
				// with the same now would emit nothing either.
				break
			}
			s.startRound(now)
			started = true
			continue
		}
		if rows >= max {
			break
		}
		s.devices(b, &rows, max, math.MaxUint64)
	}
	s.finish(b)
	if s.done {
		return sources.ErrDone
	}
	return nil
}

// RowRef names row Row of table Table of a batch.
type RowRef struct{ Table, Row int32 }

// NextRound starts the next round for FillUntil. It returns
// sources.ErrDone after the last round of a finite data set.
func (s *Stream) NextRound() error {
	if s.k < s.count {
		return errRoundOpen
	}
	if s.drain || s.done {
		s.done = true
		return sources.ErrDone
	}
	s.startRound(s.now)
	return nil
}

// FillUntil appends to b every row that the stream's devices numbered
// below until emit in the current round (started by NextRound), device
// by device in ascending order, and appends to refs where each row went,
// in emission order. Data file writers use it to cut a data set into
// chunks of rounds and device ranges and to merge streams in a canonical
// order (devices ascending within each round), whatever the number of
// streams.
func (s *Stream) FillUntil(b *sources.Batch, until uint64, refs []RowRef) []RowRef {
	s.values = 0
	s.refs = &refs
	rows := 0
	s.devices(b, &rows, math.MaxInt, until)
	s.refs = nil
	s.finish(b)
	return refs
}

func (s *Stream) finish(b *sources.Batch) {
	b.NumValues += s.values
	if s.src.missThr != 0 {
		for _, t := range b.Tables {
			t.PadNulls()
		}
	}
}

func (s *Stream) startRound(now int64) {
	s.round++
	s.roundRows = 0
	s.cur, s.next = s.next, s.cur[:0]
	s.curPos = 0
	s.k = 0
	src := s.src
	if src.wall {
		// A device never repeats a time the target keeps (KeepApart).
		s.roundTs = max(now, s.maxTs+src.apart)
		s.drain = src.finite && now >= src.end
		return
	}
	if src.finite && s.round >= src.steps {
		s.drain = true
		s.roundTs = src.start + src.steps*src.interval
		return
	}
	s.roundTs = src.start + s.round*src.interval
}

// devices emits devices of the current round until the round ends, max
// rows are reached or the next device is numbered until or above.
func (s *Stream) devices(b *sources.Batch, rows *int, max int, until uint64) {
	for s.k < s.count {
		if s.phase == phNew && (*rows >= max || uint64(s.device(s.k)) >= until) {
			return
		}
		if !s.step(b, rows, max) {
			return
		}
		s.k++
	}
}

// step emits device s.k's rows for this round from where it stopped; it
// returns false when max rows were reached first.
func (s *Stream) step(b *sources.Batch, rows *int, max int) bool {
	src := s.src
	for {
		switch s.phase {
		case phNew:
			s.j = 0
			s.d = s.device(s.k)
			s.id = s.d
			s.t = s.roundTs
			if src.wall && s.now > s.t {
				s.t = s.now
			}
			s.hasNew = false
			if s.ids != nil {
				s.id = s.ids[s.k]
				if !s.drain {
					if nid := src.Identity(s.d, s.t); nid != s.id && src.wall && s.round == 0 {
						// The wall clock's first round may come churn
						// intervals after the source was built (a target
						// not up yet): the slot starts on the device that
						// holds it now. Those before it never reported, so
						// they are no replacements.
						s.adopt(nid)
					} else if nid != s.id {
						s.retire(nid)
						continue
					}
				}
			}
			s.dk = devKey(src.seed, s.id)
			s.phase = phCheck
		case phRetire:
			// The device is replaced this round: it sends what it still
			// holds (buffered while offline, late), as a finite data set's
			// last round does, before the new one reports.
			if !s.emitBurst(b, rows, max) {
				return false
			}
			for s.curPos < len(s.cur) && s.cur[s.curPos].k == s.k {
				if !s.emit(b, s.cur[s.curPos].ts, rows, max) {
					return false
				}
				s.curPos++
			}
			s.id = s.nid
			s.ids[s.k] = s.id
			s.dk = devKey(src.seed, s.id)
			if s.words > 0 {
				s.model.init(s.state[s.k*s.words:(s.k+1)*s.words], s.dk, &s.r)
			}
			if s.counted {
				src.replaced.Add(1)
			}
			s.phase = phCheck
		case phCheck:
			if src.offThr != 0 {
				if !s.drain && s.offline(s.t) {
					if s.offStart[s.k] == noOff {
						s.offStart[s.k] = s.t
					}
					s.missed[s.k]++
					for s.curPos < len(s.cur) && s.cur[s.curPos].k == s.k {
						s.next = append(s.next, s.cur[s.curPos])
						s.curPos++
					}
					s.phase = phNew
					return true
				}
				if n := s.missed[s.k]; n > 0 {
					s.burstN, s.burstJ = n, 0
					s.burstT0 = s.offStart[s.k]
					s.burstDur = s.t - s.burstT0
					s.missed[s.k], s.offStart[s.k] = 0, noOff
					s.phase = phBurst
					continue
				}
			}
			s.phase = phOnTime
		case phBurst:
			if !s.emitBurst(b, rows, max) {
				return false
			}
			s.phase = phOnTime
		case phOnTime:
			if !s.drain {
				if src.lateThr != 0 && key(s.dk, s.t, saltLate) < src.lateThr && !s.hasDue() {
					by := 1 + int64(below(key(s.dk, s.t, saltLateBy), uint64(src.lateMax)))
					s.newLt = late{k: s.k, ts: s.t, due: s.t + by}
					s.hasNew = true
				} else if !s.emit(b, s.t, rows, max) {
					return false
				}
			}
			s.phase = phDue
		case phDue:
			for s.curPos < len(s.cur) && s.cur[s.curPos].k == s.k {
				it := &s.cur[s.curPos]
				if s.drain || it.due <= s.t {
					if !s.emit(b, it.ts, rows, max) {
						return false
					}
				} else {
					s.next = append(s.next, *it)
				}
				s.curPos++
			}
			if s.hasNew {
				s.next = append(s.next, s.newLt)
				s.hasNew = false
			}
			s.phase = phNew
			return true
		}
	}
}

// hasDue reports whether the current device has late readings due in
// this round. Its reading for the round is then never made late: the due
// readings follow it and so arrive after a newer reading of their device,
// out of order by exactly their lateness.
func (s *Stream) hasDue() bool {
	for i := s.curPos; i < len(s.cur) && s.cur[i].k == s.k; i++ {
		if s.cur[i].due <= s.t {
			return true
		}
	}
	return false
}

// offline reports whether the current device is offline at t: time is
// cut into OFFLINE-long windows (shifted per device) and each window of
// each device is offline with probability OFFLINE's fraction.
func (s *Stream) offline(t int64) bool {
	src := s.src
	origin := src.start
	if src.wall {
		origin = 0
	}
	phase := int64(below(key(s.dk, 0, saltOfflinePhase), uint64(src.offDur)))
	w := floorDiv(t-origin+phase, src.offDur)
	return key(s.dk, w, saltOffline) < src.offThr
}

// emitBurst emits what is left of the current device's burst (readings
// it held back while offline, spread over the time it was off); false
// when max rows were reached first, to resume at the same reading.
func (s *Stream) emitBurst(b *sources.Batch, rows *int, max int) bool {
	for s.burstJ < s.burstN {
		ts := s.burstT0 + mulDiv(s.burstDur, uint64(s.burstJ), uint64(s.burstN))
		if !s.emit(b, ts, rows, max) {
			return false
		}
		s.burstJ++
	}
	return true
}

// emit appends the reading of the current device at ts (one row per
// table), resuming at table s.m; false when max rows were reached first.
func (s *Stream) emit(b *sources.Batch, ts int64, rows *int, max int) bool {
	for s.m < s.nm {
		if *rows >= max {
			return false
		}
		s.row(b.Tables[s.m], s.m, ts)
		s.m++
		*rows++
	}
	s.m = 0
	return true
}

func (s *Stream) row(t *sources.Table, m int, ts int64) {
	i := len(t.Time)
	t.Device = append(t.Device, s.id)
	t.Time = append(t.Time, ts)
	s.r = rng{s: key(s.dk, ts, saltValues+uint64(m)<<8)}
	s.model.row(t, m, s.state[s.k*s.words:(s.k+1)*s.words], &s.r, s.dk, ts)
	n := len(t.Schema.Fields)
	if s.src.missThr != 0 {
		n -= s.nulls(t, i, ts, m)
	}
	s.values += n
	s.roundRows++
	s.j++
	if s.refs != nil {
		*s.refs = append(*s.refs, RowRef{Table: int32(m), Row: int32(i)})
	}
	if ts > s.maxTs {
		s.maxTs = ts
	}
}

// nulls blanks each field of row i with MISSING's probability, never all
// of them, and returns how many it blanked.
func (s *Stream) nulls(t *sources.Table, i int, ts int64, m int) int {
	s.nullIdx = markNulls(t, i, s.dk, ts, m, s.src.missThr, s.nullIdx[:0])
	return len(s.nullIdx)
}

// markNulls blanks each field of row i of t (measurement m of the device
// with key dk, at ts) with probability missThr/2^32, never all of them,
// and returns the blanked fields appended to idx.
func markNulls(t *sources.Table, i int, dk uint64, ts int64, m int, missThr uint64, idx []int) []int {
	r := rng{s: key(dk, ts, saltMissing+uint64(m)<<8)}
	fields := t.Schema.Fields
	var x uint64
	for f := range fields {
		if f&1 == 0 {
			x = r.next()
		} else {
			x >>= 32
		}
		if x&0xffffffff < missThr {
			idx = append(idx, f)
		}
	}
	if len(idx) == len(fields) {
		keep := below(r.next(), uint64(len(fields)))
		idx = append(idx[:keep], idx[keep+1:]...)
	}
	for _, f := range idx {
		t.SetNull(f, i)
		if fields[f].Kind == sources.Int {
			t.Ints[f][i] = 0
		} else {
			t.Floats[f][i] = 0
		}
	}
	return idx
}

// Position is the stream's place in its sequence of rows (see
// sources.Position): the position after the last row Fill appended.
func (s *Stream) Position() sources.Position {
	switch {
	case s.k >= s.count:
		return sources.Position{Round: s.round, Device: sources.EndOfRound}
	case s.phase == phNew:
		return sources.Position{Round: s.round, Device: int64(s.device(s.k))}
	}
	return sources.Position{Round: s.round, Device: int64(s.d), Unit: int64(s.j)}
}

// mulDiv returns a*j/n for 0 <= j < n without overflow.
func mulDiv(a int64, j, n uint64) int64 {
	hi, lo := bits.Mul64(uint64(a), j)
	q, _ := bits.Div64(hi, lo, n)
	return int64(q)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// retire starts replacing the current device (its identity s.id) by nid
// in this round.
// adopt makes nid the device of slot s.k before it has sent anything:
// its identity, key and state, as if it had held the slot from the start.
func (s *Stream) adopt(nid uint32) {
	s.ids[s.k], s.id = nid, nid
	if s.words > 0 {
		s.model.init(s.state[s.k*s.words:(s.k+1)*s.words], devKey(s.src.seed, nid), &s.r)
	}
}

func (s *Stream) retire(nid uint32) {
	s.nid = nid
	s.dk = devKey(s.src.seed, s.id)
	s.burstN, s.burstJ = 0, 0
	if s.src.offThr != 0 {
		if n := s.missed[s.k]; n > 0 {
			s.burstN = n
			s.burstT0 = s.offStart[s.k]
			s.burstDur = s.t - s.burstT0
			if s.src.wall {
				// Spread over the device's own time, which ended when it
				// was replaced, maybe intervals before this round if the
				// stream lags (simulated bursts are the missed rounds'
				// times, all within it).
				if end := s.src.tenureEnd(s.d, s.burstT0, s.t); end > s.burstT0 {
					s.burstDur = end - s.burstT0
				}
			}
			s.missed[s.k], s.offStart[s.k] = 0, noOff
		}
	}
	s.phase = phRetire
}
