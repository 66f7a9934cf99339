package targetwatch

import (
	"context"
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"

	"github.com/soakd/soakd/sinks"
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

// cpuSink's readings give the CPU times in cpu, one a reading.
type cpuSink struct{ cpu []float64 }

func (s *cpuSink) TargetFigures(context.Context) (sinks.TargetFigures, error) {
	v := s.cpu[0]
	s.cpu = s.cpu[1:]
	return sinks.TargetFigures{CPUSeconds: v, HasCPU: true}, nil
}

// A target that restarts mid-run starts its CPU time again from 0: the
// cores are the CPU time used before the restart plus after it, over the
// time between the first reading and the last, never negative. Bug
// caught: a VictoriaMetrics restarted mid-run summed up as "cpu: 0.8s →
// 0.2s (the target's own), -0.02 cores".
func TestCPUCoresOverARestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := &watch{log: zap.NewNop(), scrub: func(s string) string { return s }, interval: time.Second,
			figures: &cpuSink{cpu: []float64{10, 14, 1, 3}}} // restarted before the third reading
		w.st.memory, w.st.storage, w.st.stats, w.st.unavailable = map[string]*figure{}, map[string]*figure{}, map[string]*figure{}, map[string]string{}
		for i := range 4 {
			if i > 0 {
				time.Sleep(time.Second)
			}
			w.read(context.Background(), time.Second, i == 3)
		}
		c := w.status().CPU
		// 4 s used before the restart, 1 + 2 after, over 3 s.
		if c == nil || c.First != 10 || c.Last != 3 || c.Cores == nil || math.Abs(*c.Cores-7.0/3) > 1e-9 {
			cores := "none"
			if c != nil && c.Cores != nil {
				cores = fmt.Sprint(*c.Cores)
			}
			t.Fatalf("cpu %+v, %s cores, want 10 → 3 with 7/3 cores", c, cores)
		}
	})
}
