package devcache

import (
	"strconv"
	"testing"
)

func TestCache(t *testing.T) {
	t.Parallel()
	b := Budget{Limit: 1 << 10}
	var c Cache
	if _, ok := c.Append(nil, 5); ok {
		t.Fatal("empty cache hit")
	}
	for d := uint32(0); d < 20; d++ {
		c.Put(d, []byte("tags-"+strconv.Itoa(int(d))), &b)
	}
	for d := uint32(0); d < 20; d++ {
		out, ok := c.Append([]byte("x"), d)
		if !ok || string(out) != "xtags-"+strconv.Itoa(int(d)) {
			t.Fatalf("device %d: %q %v", d, out, ok)
		}
	}
	used := b.Used
	c.Put(MaxDevice, []byte("no"), &b)
	if _, ok := c.Append(nil, MaxDevice); ok || b.Used != used {
		t.Error("a device beyond MaxDevice was cached")
	}
	big := make([]byte, 2<<10)
	c.Put(30, big, &b)
	if _, ok := c.Append(nil, 30); ok || b.Used > b.Limit {
		t.Errorf("over budget: cached, used %d of %d", b.Used, b.Limit)
	}
}

// The index counts against the budget too: two caches sharing one budget
// cannot grow past it with sparse, high device numbers.
func TestBudgetCountsIndex(t *testing.T) {
	t.Parallel()
	b := Budget{Limit: 2 << 20}
	var c1, c2 Cache
	c1.Put(MaxDevice-1, []byte("x"), &b)
	c2.Put(MaxDevice-1, []byte("y"), &b)
	if b.Used > b.Limit {
		t.Fatalf("used %d of a %d budget", b.Used, b.Limit)
	}
	if _, ok := c2.Append(nil, MaxDevice-1); ok {
		t.Error("the second cache should not fit in the budget")
	}
}

func BenchmarkAppend(b *testing.B) {
	bud := Budget{Limit: 1 << 20}
	var c Cache
	c.Put(7, []byte(",hostname=host_7,region=eu-west-1,datacenter=eu-west-1c"), &bud)
	dst := make([]byte, 0, 128)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		dst, _ = c.Append(dst[:0], 7)
	}
}
