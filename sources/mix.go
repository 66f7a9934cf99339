package sources

// Mix64 is the splitmix64 finalizer: a fast bijective 64-bit hash. The
// sources derive every value from the seed through it, and the read-back
// checker picks the units it reads back with it, so both sides of a
// check hash alike.
func Mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
