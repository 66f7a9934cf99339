package procstat

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"testing"
)

// statmRSS reads the resident set size from a fresh open of
// /proc/self/statm, as Self did before it kept the file open.
func statmRSS(t *testing.T) float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	f := bytes.Fields(b)
	pages, err := strconv.ParseFloat(string(f[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * float64(os.Getpagesize())
}

// Self re-reads the file it keeps open: after 64 MB more is resident,
// its second reading shows them, as a fresh read of the file does; and
// it allocates nothing, the history calling it every second.
func TestSelfRereads(t *testing.T) {
	_, rss0 := Self()
	if want := statmRSS(t); rss0 <= 0 || rss0 > 2*want || rss0 < want/2 {
		t.Fatalf("rss %v, /proc/self/statm says %v", rss0, want)
	}
	// A fresh mapping, not the heap: memory the heap freed in an earlier
	// run of the test would be resident already.
	buf, err := syscall.Mmap(-1, 0, 64<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(buf)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	_, rss1 := Self()
	want := statmRSS(t)
	if rss1-rss0 < 48<<20 || rss1 > want+(8<<20) {
		t.Fatalf("after touching 64 MB: rss %v → %v, /proc/self/statm says %v", rss0, rss1, want)
	}
	if a := testing.AllocsPerRun(20, func() { Self() }); a != 0 {
		t.Fatalf("Self allocates %v times a call", a)
	}
}
