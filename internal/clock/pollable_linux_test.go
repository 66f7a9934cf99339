//go:build linux

package clock

import (
	"os"
	"testing"
)

// A regular file is never polled: an alarm on such a file would never go
// off, so NewAlarm must see it and refuse. A pipe is polled.
func TestPollable(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "regular")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if pollable(f) == nil {
		t.Error("a regular file taken as pollable")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := pollable(r); err != nil {
		t.Errorf("a pipe refused: %v", err)
	}
	a, err := NewAlarm()
	if err != nil {
		t.Fatalf("a timerfd refused: %v", err)
	}
	a.Close()
}
