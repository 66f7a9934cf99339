//go:build linux

package clock

import (
	"runtime"
	"testing"
	"time"
)

// An alarm goes off never before the time it was set to, and at once for
// a time already past; a Kick ends a wait in progress, and one made
// before a wait ends that wait at once, even though the wait sets the
// timerfd anew (which clears an expiry not yet read); Close ends a wait
// in progress. No goroutine is left behind.
func TestAlarm(t *testing.T) {
	g0 := runtime.NumGoroutine()
	a, err := NewAlarm()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{0, time.Millisecond, 20 * time.Millisecond} {
		at := Mono() + d
		if !a.Wait(at) {
			t.Fatal("Wait: false before Close")
		}
		if now := Mono(); now < at {
			t.Errorf("set %v ahead: went off %v early", d, at-now)
		}
	}
	if !a.Wait(-time.Hour) { // long past
		t.Fatal("Wait: false before Close")
	}

	// A Kick before the wait: the wait, set an hour ahead, returns.
	a.Kick()
	waited := make(chan bool, 1)
	go func() { waited <- a.Wait(Mono() + time.Hour) }()
	if !<-waited {
		t.Fatal("Wait after Kick: false before Close")
	}

	// A Kick during the wait.
	go func() { waited <- a.Wait(Mono() + time.Hour) }()
	time.Sleep(20 * time.Millisecond) // most likely waiting by now; a Kick before also ends it
	a.Kick()
	if !<-waited {
		t.Fatal("Wait kicked: false before Close")
	}

	// Close during the wait, which may first return early (for a Kick
	// served already) but waits again, until Close.
	go func() {
		for a.Wait(Mono() + time.Hour) {
		}
		waited <- false
	}()
	time.Sleep(20 * time.Millisecond)
	a.Close()
	<-waited
	a.Kick() // after Close: nothing happens

	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > g0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > g0 {
		t.Errorf("%d goroutines after Close, %d before NewAlarm", n, g0)
	}
}

// A Kick is served by one wait: the next wait waits for its time.
func TestAlarmKickServedOnce(t *testing.T) {
	a, err := NewAlarm()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.Kick()
	a.Wait(Mono() + time.Hour)
	at := Mono() + 5*time.Millisecond
	a.Wait(at)
	if now := Mono(); now < at {
		t.Errorf("the wait after a kicked one went off %v early", at-now)
	}
}

// The meter reads the thread's CPU time in one span of meterEvery and
// scales the total by the spans each read stands for; a span read with
// more CPU than wall time is left out, and stands for none.
func TestCPUMeterSamples(t *testing.T) {
	var reads int
	cpu := time.Duration(0)
	m := &CPUMeter{cpu: func() time.Duration { reads++; return cpu }}
	for range 3 * meterEvery {
		m.Start()
		cpu += time.Nanosecond // 1 ns of CPU per span, well under its wall time
		m.Pause()
	}
	if reads != 2*3 {
		t.Errorf("%d spans: %d reads of the thread's CPU, want 6 (2 in each of 3 read spans)", 3*meterEvery, reads)
	}
	// 3 spans read, 1 ns each, standing for 3 × meterEvery spans.
	if got := m.Total(); got != 3*meterEvery*time.Nanosecond {
		t.Errorf("Total = %v, want %v", got, 3*meterEvery*time.Nanosecond)
	}

	m = &CPUMeter{cpu: func() time.Duration { return cpu }}
	m.Start()
	cpu += time.Hour // more than the span's wall time: not one thread's
	m.Pause()
	if got := m.Total(); got != 0 {
		t.Errorf("only span impossible: Total = %v, want 0", got)
	}
}

// A bell wakes its waiter when rung, or the next wait when rung before
// it; rings between two waits count as one; Close ends a wait.
func TestBell(t *testing.T) {
	b, err := NewBell()
	if err != nil {
		t.Fatal(err)
	}
	b.Ring()
	b.Ring()
	if !b.Wait() {
		t.Fatal("Wait after Ring: false before Close")
	}
	waited := make(chan bool, 1)
	go func() { waited <- b.Wait() }()
	select {
	case <-waited:
		t.Fatal("two rings woke two waits")
	case <-time.After(20 * time.Millisecond):
	}
	b.Ring()
	if !<-waited {
		t.Fatal("Wait rung: false before Close")
	}
	go func() { waited <- b.Wait() }()
	time.Sleep(20 * time.Millisecond)
	b.Close()
	if <-waited {
		t.Error("Wait: true after Close")
	}
	b.Ring() // after Close: nothing happens
}

// Spans of two kinds in turn (the scheduler's wake to a full queue, then
// its send to the next wait) are both read: a meter that read one span in
// an even number would read only one kind, and its total would be that
// kind's cost times every span.
func TestCPUMeterAlternatingSpans(t *testing.T) {
	cpu := time.Duration(0)
	m := &CPUMeter{cpu: func() time.Duration { return cpu }}
	const n = 2 * meterEvery * 50
	var want time.Duration
	for i := range n {
		m.Start()
		d := time.Nanosecond // short spans and long ones in turn
		if i%2 == 1 {
			d = 9 * time.Nanosecond
		}
		cpu += d
		want += d
		m.Pause()
	}
	if got := m.Total(); got != want {
		t.Errorf("Total = %v over %d spans alternating 1 ns and 9 ns, want %v", got, n, want)
	}
}

// A ring and a kick allocate nothing: the scheduler rings an idle
// worker's bell for every ticket below 2,000 tickets/s, and the engine's
// hot path is allocation-free.
func TestRingAndKickAllocateNothing(t *testing.T) {
	b, err := NewBell()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if n := testing.AllocsPerRun(100, func() { b.Ring(); b.Wait() }); n != 0 {
		t.Errorf("Ring and Wait: %v allocations, want 0", n)
	}
	a, err := NewAlarm()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if n := testing.AllocsPerRun(100, func() { a.Kick(); a.Wait(Mono() + time.Hour) }); n != 0 {
		t.Errorf("Kick and Wait: %v allocations, want 0", n)
	}
}
