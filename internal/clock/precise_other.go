//go:build !linux

package clock

import (
	"errors"
	"time"
)

// LockPrecise does nothing where soakd has no precise sleep: the runtime's
// timers serve (see precise_linux.go); the scheduler's CPU time is not
// measured.
func LockPrecise() (unlock func(), cpu func() time.Duration) {
	return func() {}, func() time.Duration { return 0 }
}

// SleepUntil sleeps until Mono() reaches t.
func SleepUntil(t time.Duration) { time.Sleep(t - Mono()) }

// Alarm is not available where soakd has no precise sleep: NewAlarm fails
// and the scheduler waits on runtime timers.
type Alarm struct{}

// NewAlarm fails: no alarm here.
func NewAlarm() (*Alarm, error) { return nil, errors.New("no precise alarm on this system") }

// Wait returns false: no alarm here.
func (a *Alarm) Wait(t time.Duration) bool { return false }

// Kick does nothing.
func (a *Alarm) Kick() {}

// Close does nothing.
func (a *Alarm) Close() {}

// Bell is not available either: NewBell fails.
type Bell struct{}

// NewBell fails: no bell here.
func NewBell() (*Bell, error) { return nil, errors.New("no bell on this system") }

// Wait returns false: no bell here.
func (b *Bell) Wait() bool { return false }

// Ring does nothing.
func (b *Bell) Ring() {}

// Close does nothing.
func (b *Bell) Close() {}

// A CPUMeter measures nothing here (see precise_linux.go).
type CPUMeter struct{}

// Start does nothing.
func (m *CPUMeter) Start() {}

// Pause does nothing.
func (m *CPUMeter) Pause() {}

// Total is 0.
func (m *CPUMeter) Total() time.Duration { return 0 }
