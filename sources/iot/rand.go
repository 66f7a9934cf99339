package iot

import (
	"math/bits"

	"github.com/soakd/soakd/sources"
)

// Everything random in this package is a counter-based hash of (seed,
// device, time, purpose), never a shared sequential generator: the data of
// a device does not depend on which stream, worker, shard or machine made
// it, which is what makes shards disjoint and output reproducible.

const (
	gamma = 0x9e3779b97f4a7c15 // golden ratio, the splitmix64 increment
	kTime = 0xc2b2ae3d27d4eb4f
	kSalt = 0x165667b19e3779f9
)

// Salts separate the purposes hashes are used for.
const (
	saltTags uint64 = iota + 1
	saltInit
	saltValues
	saltLate
	saltLateBy
	saltOffline
	saltOfflinePhase
	saltMissing
	saltExtraTags
	saltQueries // a query stream's random choices
)

// mix is the splitmix64 finalizer (sources.Mix64).
func mix(x uint64) uint64 { return sources.Mix64(x) }

// devKey is the hash key of device d.
func devKey(seed uint64, d uint32) uint64 {
	return mix(seed ^ (uint64(d)+1)*gamma)
}

// key derives the key for one purpose at one time from a device key.
func key(dk uint64, ts int64, salt uint64) uint64 {
	return mix(dk ^ uint64(ts)*kTime ^ salt*kSalt)
}

// rng is a splitmix64 sequence started from a key.
type rng struct{ s uint64 }

func (r *rng) next() uint64 {
	r.s += gamma
	return mix(r.s)
}

// below maps 64 random bits to [0, n).
func below(u uint64, n uint64) uint64 {
	hi, _ := bits.Mul64(u, n)
	return hi
}

// below32 maps the low 32 bits of u to [0, n); n must be below 2^32.
func below32(u uint64, n uint64) uint64 { return (u & 0xffffffff) * n >> 32 }

// threshold turns a probability into a 64-bit comparison bound: an event
// happens when a hash is below it.
func threshold(p float64) uint64 {
	switch {
	case p <= 0:
		return 0
	case p >= 1:
		return ^uint64(0)
	}
	return uint64(p * (1 << 63) * 2)
}
