// Package devcache remembers bytes encoded once per device (a device's
// tag set, escaped for a format) so encoders do not rebuild them for every
// row. The bytes of all devices sit back to back in one arena; the memory
// of a group of caches is bounded by a shared Budget.
//
//	var budget = devcache.Budget{Limit: 2 << 20}
//	var c devcache.Cache
//	if out, ok := c.Append(dst, dev); ok { return out }
//	dst = encodeTags(dst, dev)
//	c.Put(dev, dst[start:], &budget)
package devcache

// MaxDevice bounds the index of a cache (devices at or above it are never
// cached, so huge scales do not grow the index without bound).
const MaxDevice = 1 << 18

// Budget bounds the bytes held by the caches that share it.
type Budget struct {
	Used, Limit int
}

// Cache maps a device to its bytes. Not safe for concurrent use.
type Cache struct {
	off   []uint32 // 1 + offset of the device's bytes in arena; 0 = not cached
	size  []uint16
	arena []byte
}

// Append appends device dev's cached bytes to dst; ok is false when they
// are not cached.
func (c *Cache) Append(dst []byte, dev uint32) (out []byte, ok bool) {
	if int(dev) >= len(c.off) {
		return dst, false
	}
	o := c.off[dev]
	if o == 0 {
		return dst, false
	}
	return append(dst, c.arena[o-1:o-1+uint32(c.size[dev])]...), true
}

// Put caches b as device dev's bytes when the budget allows; it copies b.
func (c *Cache) Put(dev uint32, b []byte, budget *Budget) {
	n := len(b)
	grow := max(0, int(dev)+1-len(c.off)) // index slots to add, 6 bytes each
	if dev >= MaxDevice || n > 0xffff || budget.Used+n+grow*6 > budget.Limit {
		return
	}
	if grow > 0 {
		budget.Used += grow * 6
		c.off = append(c.off, make([]uint32, grow)...)
		c.size = append(c.size, make([]uint16, grow)...)
	}
	c.off[dev] = uint32(len(c.arena)) + 1
	c.size[dev] = uint16(n)
	c.arena = append(c.arena, b...)
	budget.Used += n
}
