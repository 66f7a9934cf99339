//go:build linux

package clock

import (
	"runtime"
	"testing"
	"time"
)

// An alarm goes off once per setting, never before the time it was set
// to; a setting replaces the one before it, so an alarm set late and
// then early goes off early, and once; a time already past goes off at
// once. Close ends its goroutine.
func TestAlarm(t *testing.T) {
	g0 := runtime.NumGoroutine()
	a, err := NewAlarm()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{0, time.Millisecond, 20 * time.Millisecond} {
		at := Mono() + d
		a.Set(at)
		<-a.C
		if now := Mono(); now < at {
			t.Errorf("set %v ahead: went off %v early", d, at-now)
		}
	}
	a.Set(-time.Hour) // long past
	<-a.C

	// Replaced: set an hour ahead, then 5 ms ahead; it goes off once.
	a.Set(Mono() + time.Hour)
	at := Mono() + 5*time.Millisecond
	a.Set(at)
	<-a.C
	if now := Mono(); now < at {
		t.Errorf("replaced setting: went off %v early", at-now)
	}
	select {
	case <-a.C:
		t.Error("went off twice for one setting")
	case <-time.After(50 * time.Millisecond):
	}

	a.Close()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > g0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > g0 {
		t.Errorf("%d goroutines after Close, %d before NewAlarm", n, g0)
	}
}
