package iot

import (
	"errors"
	"fmt"
	"time"

	"github.com/soakd/soakd/sources"
)

// Verification (see sources.Replayer): a device's rows depend only on
// (seed, device, timestamp) and on its own state, so a stream over that
// one device emits them exactly as the device's stream in the run did,
// and each row's position in that stream is (round, device, i). Under the
// wall clock timestamps come from the send times, which are not known
// afterwards: such rows cannot be replayed. Massive rows keep no state:
// each is a pure function of (seed, device, timestamp), recomputed on its
// own (sources.RowSource).

var (
	_ sources.Replayer  = (*Source)(nil)
	_ sources.RowSource = (*Source)(nil)
	_ sources.Resolved  = (*Source)(nil)
)

// errWallReplay is Replay's error under CLOCK=wall.
var errWallReplay = errors.New("CLOCK=wall stamps rows with the time they were sent, which cannot be recomputed: replaying needs CLOCK=simulated")

// AllDevices is SCALE: the data set's devices, all shards together.
func (s *Source) AllDevices() uint32 { return uint32(s.cfg.Scale) }

// Replay returns device d's rows as its stream emits them. d must belong
// to the source's shard. With CHURN, d names a slot (any identity that
// held it, see Slot) and the replay holds the rows of every device that
// held the slot, one after the other, each row carrying its own device.
func (s *Source) Replay(d uint32) (sources.DeviceReplay, error) {
	if s.wall {
		return nil, errWallReplay
	}
	d = s.Slot(d)
	if int64(d) >= int64(s.cfg.Scale) || !s.shard.Owns(uint64(d)) {
		return nil, fmt.Errorf("device %d is not in shard %s of %d devices", d, s.shard, s.cfg.Scale)
	}
	return &replay{st: s.newStream(uint64(d), 1, 1), lens: make([]int, len(s.sch))}, nil
}

// replay is one device's rows, one at a time.
type replay struct {
	st   *Stream
	lens []int
}

// Next appends the device's next row to b.
func (r *replay) Next(b *sources.Batch) (int, sources.Position, error) {
	for m, t := range b.Tables {
		r.lens[m] = t.Len()
	}
	// A device that is offline emits nothing for a while; Fill goes on
	// with the following rounds until it emits a row (or the data set
	// ends), so this loop turns once but for a data set's end.
	for {
		err := r.st.Fill(b, 1, 0)
		for m, t := range b.Tables {
			if t.Len() > r.lens[m] {
				st := r.st
				round := st.round
				if st.k < st.count && st.phase == phNew {
					// The row ended the device's round and Fill has started
					// the next one.
					round--
				}
				return m, sources.Position{Round: round, Device: int64(st.d), Unit: int64(st.j - 1)}, nil
			}
		}
		if err != nil {
			return 0, sources.Position{}, err
		}
	}
}

// PureRows reports whether AppendRow recomputes rows: for massive, whose
// rows keep no state.
func (s *Source) PureRows() bool {
	_, ok := s.model.(*massive)
	return ok
}

// AppendRow appends the massive row of device d at ts to t; false for
// other sources, for a device outside the shard, or for a timestamp the
// simulated clock never gives.
func (s *Source) AppendRow(t *sources.Table, table int, d uint32, ts int64) bool {
	slot := s.Slot(d)
	if !s.PureRows() || table != 0 || int64(slot) >= int64(s.cfg.Scale) || !s.shard.Owns(uint64(slot)) {
		return false
	}
	if s.churnEvery > 0 && !s.held(d, slot, ts) {
		return false
	}
	if !s.wall {
		if ts < s.start || (ts-s.start)%s.interval != 0 {
			return false
		}
		if s.finite && ts >= s.start+s.steps*s.interval {
			return false
		}
	}
	dk := devKey(s.seed, d)
	i := t.Len()
	t.Device = append(t.Device, d)
	t.Time = append(t.Time, ts)
	r := rng{s: key(dk, ts, saltValues)}
	s.model.row(t, 0, nil, &r, dk, ts)
	if s.missThr != 0 {
		var idx [8]int
		markNulls(t, i, dk, ts, 0, s.missThr, idx[:0])
		t.PadNulls()
	}
	return true
}

// Resolved returns START as the time the source resolved START=now to,
// so that a verifier rebuilds the same data set; nothing when START was
// given (or under the wall clock).
func (s *Source) Resolved() map[string]string {
	if !s.cfg.Start.Now || s.wall {
		return nil
	}
	return map[string]string{"START": time.Unix(0, s.start).UTC().Format(time.RFC3339Nano)}
}

// held reports whether device d held slot at ts: a row of d at ts
// exists only then (the rows a replaced device flushes in the round that
// replaces it keep their own, older, timestamps).
func (s *Source) held(d, slot uint32, ts int64) bool {
	return s.Identity(slot, ts) == d
}

var _ sources.Churner = (*Source)(nil)
