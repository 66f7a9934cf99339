package targetwatch

import (
	"testing"
	"time"

	"go.uber.org/zap"
)

// The CPU time a capacity search reads per step: the last reading, none
// before any, for a workload whose watch is off or unknown, or once the
// CPU time is no longer read. Bugs caught: the first reading returned
// instead of the last, a stale reading given as current.
func TestCPU(t *testing.T) {
	t.Parallel()
	at := time.Now()
	w := &watch{}
	tw := New(zap.NewNop(), Options{})
	tw.byName = map[string]*watch{"w": w, "off": nil}
	for _, name := range []string{"w", "off", "unknown"} {
		if _, _, ok := tw.CPU(name); ok {
			t.Errorf("%s: CPU time before any reading", name)
		}
	}
	w.st.cpu = w.st.cpu.add(1.5, at)
	w.st.cpu = w.st.cpu.add(2.25, at.Add(time.Second))
	if v, got, ok := tw.CPU("w"); !ok || v != 2.25 || !got.Equal(at.Add(time.Second)) {
		t.Errorf("CPU %v at %v (%v), want the last reading 2.25 at %v", v, got, ok, at.Add(time.Second))
	}
	w.st.cpu.current = false
	if v, _, ok := tw.CPU("w"); ok {
		t.Errorf("CPU %v no longer read, still given", v)
	}
}
