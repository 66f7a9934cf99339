package config

import (
	"strings"
	"testing"
	"time"
)

// WATCH_INTERVAL defaults to 10s and WATCH_PROCESS to none; a pid and a
// name both load, and WatchedProcess tells them apart.
func TestWatchSettings(t *testing.T) {
	t.Parallel()
	p := testPlugins()
	w := loadTest(t, map[string]string{"SOAKD_WORKLOADS": "seq"}, p).Workload[0]
	if w.WatchInterval != 10*time.Second || w.WatchProcess != "" {
		t.Errorf("defaults: WATCH_INTERVAL %v, WATCH_PROCESS %q", w.WatchInterval, w.WatchProcess)
	}
	for _, tc := range []struct {
		interval, process string
		pid               int
		name              string
	}{
		{"0", "", 0, ""},
		{"1s", "4242", 4242, ""},
		{"1m", " redis-server ", 0, "redis-server"},
		{"30s", "postgres", 0, "postgres"},
	} {
		w := loadTest(t, map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_WATCH_INTERVAL": tc.interval,
			"SOAKD_SEQ_WATCH_PROCESS": tc.process}, p).Workload[0]
		if pid, name := w.WatchedProcess(); pid != tc.pid || name != tc.name {
			t.Errorf("WATCH_PROCESS=%q: pid %d name %q, want %d %q", tc.process, pid, name, tc.pid, tc.name)
		}
	}
}

// A watch interval below a second or negative, and a WATCH_PROCESS that
// can name no process (a pid out of range, a path, spaces) or that is set
// while the watch is off, are configuration errors naming the variable.
func TestWatchSettingErrors(t *testing.T) {
	t.Parallel()
	p := testPlugins()
	for _, tc := range []struct {
		interval, process, want string
	}{
		{"500ms", "", "SOAKD_SEQ_WATCH_INTERVAL: 500ms: want 0 (off) or at least 1s"},
		{"-1s", "", "SOAKD_SEQ_WATCH_INTERVAL: -1s: want 0 (off) or at least 1s"},
		{"soon", "", "SOAKD_SEQ_WATCH_INTERVAL"},
		{"", "0", "SOAKD_SEQ_WATCH_PROCESS: 0 is no pid"},
		{"", "-12", "SOAKD_SEQ_WATCH_PROCESS: -12 is no pid"},
		{"", "99999999", "SOAKD_SEQ_WATCH_PROCESS: 99999999 is no pid"},
		{"", "99999999999999999999", `SOAKD_SEQ_WATCH_PROCESS: "99999999999999999999" is no pid`},
		{"", "/usr/bin/redis-server", `SOAKD_SEQ_WATCH_PROCESS: "/usr/bin/redis-server" is a path: give the process's name, its base name (e.g. redis-server)`},
		{"", "redis server", `SOAKD_SEQ_WATCH_PROCESS: "redis server": a process name has no spaces`},
		{"0", "redis-server", `SOAKD_SEQ_WATCH_PROCESS: "redis-server" is set, but SOAKD_SEQ_WATCH_INTERVAL=0 turns the watch off`},
	} {
		env := map[string]string{"SOAKD_WORKLOADS": "seq", "SOAKD_SEQ_WATCH_PROCESS": tc.process}
		if tc.interval != "" {
			env["SOAKD_SEQ_WATCH_INTERVAL"] = tc.interval
		}
		cfg, err := Load(env, p.Sources)
		err = cfg.Check(p, err)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("WATCH_INTERVAL=%q WATCH_PROCESS=%q: got %v, want containing %q", tc.interval, tc.process, err, tc.want)
		}
	}
}
