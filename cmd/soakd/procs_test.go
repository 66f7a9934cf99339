package main

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

// A run that uses little CPU runs its Go code on one P once it has been
// calm for ten seconds, and gives every P back when it ends: the governor
// is among a run's observers. Not parallel: GOMAXPROCS is the process's.
func TestLowLoadRunsOnOneP(t *testing.T) {
	if testing.Short() {
		t.Skip("a 13 s run")
	}
	if os.Getenv("GOMAXPROCS") != "" || runtime.GOMAXPROCS(0) < 2 {
		t.Skip("GOMAXPROCS is set, or one P is all there is: the governor is off")
	}
	def := runtime.GOMAXPROCS(0)
	code, _, stderr := run(t, map[string]string{"SOAKD_WORKLOADS": "iot", "SOAKD_IOT_RATE": "10", "SOAKD_DURATION": "13s",
		"SOAKD_LOG_LEVEL": "debug", "SOAKD_LOG_FORMAT": "json", "SOAKD_PROGRESS_INTERVAL": "0"})
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "runs on one P while it uses little CPU") {
		t.Fatalf("13 s at 10 batches/s and the governor never took soakd to one P:\n%s", stderr)
	}
	if n := runtime.GOMAXPROCS(0); n != def {
		t.Fatalf("GOMAXPROCS %d after the run, want %d back", n, def)
	}
}
