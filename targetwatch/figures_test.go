package targetwatch

import (
	"testing"
	"time"

	"go.uber.org/zap"
)

// The judges' figures: memory is one kind, the first of MemoryKinds the
// last reading has (never a sum); storage the total; none without a
// reading, for a workload whose watch is off, or once a kind is no longer
// read.
func TestFigures(t *testing.T) {
	t.Parallel()
	at := time.Now()
	w := &watch{}
	w.st.memory = map[string]*figure{}
	tw := New(zap.NewNop(), Options{})
	tw.byName = map[string]*watch{"w": w, "off": nil}
	for _, name := range []string{"w", "off", "unknown"} {
		if _, _, ok := tw.Memory(name); ok {
			t.Errorf("%s: memory before any reading", name)
		}
		if _, _, ok := tw.Storage(name); ok {
			t.Errorf("%s: storage before any reading", name)
		}
		if _, _, ok := tw.StoragePerValue(name); ok {
			t.Errorf("%s: storage per value before any reading", name)
		}
	}
	addKinds(w.st.memory, map[string]float64{"heap_inuse": 10, "sys": 20}, at)
	if v, got, ok := tw.Memory("w"); !ok || v != 10 || !got.Equal(at) {
		t.Errorf("heap_inuse before sys: %v %v %v", v, got, ok)
	}
	w.st.rss = w.st.rss.add(40, at)
	addKinds(w.st.memory, map[string]float64{"used": 30, "heap_inuse": 10}, at)
	if v, _, _ := tw.Memory("w"); v != 40 {
		t.Errorf("process_rss before used: %v", v)
	}
	addKinds(w.st.memory, map[string]float64{"used": 30, "rss": 50}, at)
	if v, _, _ := tw.Memory("w"); v != 50 {
		t.Errorf("rss first: %v", v)
	}
	addKinds(w.st.memory, map[string]float64{"used": 31}, at)
	w.st.rss.current = false
	if v, _, _ := tw.Memory("w"); v != 31 {
		t.Errorf("rss and process_rss no longer read: %v, want used", v)
	}
	w.st.storageTotal = w.st.storageTotal.add(1000, at)
	w.st.perValue, w.st.hasPerValue = 2.5, true
	if v, _, ok := tw.Storage("w"); !ok || v != 1000 {
		t.Errorf("storage %v %v", v, ok)
	}
	if v, _, ok := tw.StoragePerValue("w"); !ok || v != 2.5 {
		t.Errorf("storage per value %v %v", v, ok)
	}
}
