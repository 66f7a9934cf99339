// Command wakefloor measures what this machine charges for waking a
// sleeping thread at a due time, the floor under any open-loop client's
// CPU per operation and dispatch delay: bench/cpu.sh prints it beside
// soakd's and go-ycsb's figures. It wakes -rate times a second for
// -duration, nothing else awake in the process between wake-ups, and
// prints one line of key=value figures: the wake-ups, the process's user +
// system CPU per wake-up in µs, and how late each wake-up was (from its
// due time to the first instruction after it) at p50, p99 and p99.9.
//
//	go run ./bench/wakefloor -rate 1000 -duration 20s
//
// It waits as soakd's scheduler does: on a timerfd alarm set to the due
// time, read through the Go runtime's network poller, so its CPU per
// wake-up is what one of the scheduler's wake-ups costs before it does
// any work, and its lateness what the scheduler's would be without any.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/soakd/soakd/internal/clock"
)

// maxWakeups bounds -rate × -duration (80 MB of latenesses).
const maxWakeups = 10_000_000

func main() {
	rate := flag.Int("rate", 1000, "wake-ups per second (1..100000)")
	dur := flag.Duration("duration", 20*time.Second, "how long to wake (1s..1h)")
	flag.Parse()
	if *rate < 1 || *rate > 100000 {
		fail("-rate %d: want 1..100000", *rate)
	}
	if *dur < time.Second || *dur > time.Hour {
		fail("-duration %v: want 1s..1h", *dur)
	}
	a, err := clock.NewAlarm()
	if err != nil {
		fail("%v", err)
	}
	defer a.Close()
	n := int(int64(*rate) * int64(*dur/time.Millisecond) / 1000)
	if n > maxWakeups {
		// Every lateness is kept for its percentiles: 8 bytes each.
		fail("-rate %d × -duration %v is %d wake-ups: want at most %d", *rate, *dur, n, maxWakeups)
	}
	interval := time.Second / time.Duration(*rate)
	late := make([]time.Duration, n)
	cpu0 := cpuTime()
	due := clock.Mono() + interval
	for i := range late {
		for clock.Mono() < due && a.Wait(due) {
		}
		late[i] = clock.Mono() - due
		due += interval
	}
	cpu := cpuTime() - cpu0
	slices.Sort(late)
	at := func(q float64) float64 { return float64(late[int(q*float64(n-1))]) / 1e3 }
	fmt.Printf("rate=%d wakeups=%d cpu_s=%.3f cpu_us_per_wakeup=%.1f late_p50_us=%.1f late_p99_us=%.1f late_p999_us=%.1f\n",
		*rate, n, cpu.Seconds(), float64(cpu)/1e3/float64(n), at(0.5), at(0.99), at(0.999))
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fail("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "wakefloor: "+format+"\n", a...)
	os.Exit(2)
}
