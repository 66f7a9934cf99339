package sinktest

import (
	"context"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/sinks"
)

// kindRE is the form of a figure's kind: a snake_case name, as it becomes
// the kind label of soakd_target_memory_bytes and
// soakd_target_storage_bytes.
var kindRE = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// unavailableRE is the form of a key of TargetFigures.Unavailable: a
// whole figure (memory, storage, cpu) or one kind of one (storage.wal),
// or one of sinks.Stats.
var unavailableRE = regexp.MustCompile(`^(memory|storage|cpu)(\.[a-z][a-z0-9]*(_[a-z0-9]+)*)?$|^(` + strings.Join(sinks.Stats, "|") + `)$`)

// TargetFigures checks a sinks.TargetWatcher on a target that is up: the
// reading succeeds within Prompt, every figure is a finite non-negative
// number under a snake_case kind, and every figure not read is named in
// Unavailable (memory, storage, cpu, or figure.kind) with why; each stat
// is one of sinks.Stats, a finite non-negative number. It returns
// the figures for the caller's own checks.
func TargetFigures(t *testing.T, s sinks.Sink) sinks.TargetFigures {
	t.Helper()
	w, ok := s.(sinks.TargetWatcher)
	if !ok {
		t.Fatalf("%T is not a sinks.TargetWatcher", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), Prompt)
	defer cancel()
	f, err := w.TargetFigures(ctx)
	if err != nil {
		checkClass(t, "TargetFigures", err)
		t.Fatalf("TargetFigures of a target that is up: %v", err)
	}
	checkFigures(t, f)
	return f
}

func checkFigures(t *testing.T, f sinks.TargetFigures) {
	t.Helper()
	for what, m := range map[string]map[string]float64{"memory": f.Memory, "storage": f.Storage} {
		for kind, v := range m {
			if !kindRE.MatchString(kind) {
				t.Errorf("%s kind %q is not snake_case", what, kind)
			}
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Errorf("%s %s = %v bytes", what, kind, v)
			}
			if why, ok := f.Unavailable[what+"."+kind]; ok {
				t.Errorf("%s %s is both read (%v) and unavailable (%s)", what, kind, v, why)
			}
		}
		if why, ok := f.Unavailable[what]; ok && len(m) > 0 {
			t.Errorf("%s is unavailable (%s) but has kinds %v", what, why, m)
		}
	}
	byReason := map[string]float64{}
	for name, v := range f.Stats {
		stat, reason, split := strings.Cut(name, ".")
		if !slices.Contains(sinks.Stats, stat) {
			t.Errorf("stat %q is none of %v", name, sinks.Stats)
		}
		if split {
			// STAT.REASON: a part of STAT, whose parts add up to it.
			if !kindRE.MatchString(reason) {
				t.Errorf("stat %q: reason %q is not snake_case", name, reason)
			}
			byReason[stat] += v
		}
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("stat %s = %v", name, v)
		}
		if why, ok := f.Unavailable[name]; ok {
			t.Errorf("stat %s is both read (%v) and unavailable (%s)", name, v, why)
		}
	}
	for stat, sum := range byReason {
		if total, ok := f.Stats[stat]; !ok || math.Abs(total-sum) > 1e-9*max(total, 1) {
			t.Errorf("stat %s is %v (given: %t), but its reasons add up to %v", stat, total, ok, sum)
		}
	}
	if f.CPUSeconds < 0 || math.IsNaN(f.CPUSeconds) || math.IsInf(f.CPUSeconds, 0) || (!f.HasCPU && f.CPUSeconds != 0) {
		t.Errorf("CPU: %v seconds (HasCPU %t)", f.CPUSeconds, f.HasCPU)
	}
	if _, ok := f.Unavailable["cpu"]; ok == f.HasCPU {
		t.Errorf("CPU read %t, and unavailable %t: exactly one must hold (%q)", f.HasCPU, ok, f.Unavailable["cpu"])
	}
	for k, why := range f.Unavailable {
		if !unavailableRE.MatchString(k) {
			t.Errorf("unavailable figure %q is not memory, storage, cpu or one of their kinds", k)
		}
		if why == "" {
			t.Errorf("unavailable figure %q without why", k)
		}
	}
}

// targetDown checks that a sink that cannot reach its server fails to
// read its figures, promptly, with a classified error: a watcher must
// tell a target that is down from one that hides a figure.
func targetDown(t *testing.T, s sinks.Sink, classes ...sinks.Class) {
	t.Helper()
	w, ok := s.(sinks.TargetWatcher)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), Prompt)
	defer cancel()
	f, err := w.TargetFigures(ctx)
	if err == nil {
		t.Errorf("TargetFigures of a target that is down succeeded: %+v", f)
		return
	}
	wantClass(t, "TargetFigures of a target that is down", err, classes...)
}

// TargetFiguresServerDown reads s's figures, stops its server (stop), and
// checks that a reading then fails as a connection error within 5 s: a
// target that went away is not a figure of 0, nor a hang.
func TargetFiguresServerDown(t *testing.T, s sinks.Sink, stop func()) {
	t.Helper()
	TargetFigures(t, s)
	w := s.(sinks.TargetWatcher) // TargetFigures checked it is one
	stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := w.TargetFigures(ctx); err == nil {
		t.Fatal("figures read from a stopped server")
	} else if cl := sinks.ClassOf(err); cl != sinks.Connection {
		t.Errorf("class %s, want connection: %v", cl, err)
	}
}
