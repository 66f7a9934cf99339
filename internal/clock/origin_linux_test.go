//go:build linux

package clock

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The origin comes from the narrowest reading, at its late end: a reading
// widened by a descheduling between the clock reads (which would put the
// origin tens of microseconds off, and alarms early) is passed over, and
// the origin is never before the true one.
func TestOriginOf(t *testing.T) {
	const truth = 5 * time.Second // kernel clock at Mono() = 0
	var i int
	read := func() (before, mono, after time.Duration) {
		i++
		m := time.Duration(i) * time.Millisecond
		switch i {
		case 1: // descheduled for 150 µs after the first read
			return truth + m - 150*time.Microsecond, m, truth + m + 40
		case 7: // the narrowest
			return truth + m - 30, m, truth + m + 10
		default:
			return truth + m - 200, m, truth + m + 200
		}
	}
	if got, want := originOf(read), truth+10; got != want {
		t.Fatalf("origin %v, want %v (the narrowest reading's late end)", got, want)
	}
	if i != originReadings {
		t.Fatalf("read %d times, want %d", i, originReadings)
	}
}

// The process's origin is not before the kernel's clock at Mono() = 0 (an
// origin early by d sets every alarm d early): a kernel reading taken just
// before Mono() is a lower bound of it.
func TestMonoOriginNotEarly(t *testing.T) {
	for range 100 {
		var ts unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
		m := Mono()
		if low := time.Duration(ts.Nano()) - m; monoOrigin < low {
			t.Fatalf("origin %v is %v before the kernel's clock at Mono() = 0", monoOrigin, low-monoOrigin)
		}
	}
}
