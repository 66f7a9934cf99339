package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/cmd/soakd/cli"
	"github.com/soakd/soakd/cmd/soakd/plugins"
	"github.com/soakd/soakd/sweep"
)

// Every source the composition root registers, finite or endless, ends a
// one-point sweep bounded by SOAKD_SWEEP_DURATION and reports the point,
// on its built-in target, which the report names. A source added to the registry is covered here
// without a change.
func TestSweepEndsOnEverySource(t *testing.T) {
	for _, e := range plugins.All().Sources.Entries() {
		for _, name := range e.Names {
			t.Run(name, func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "sweep")
				// Only a guard against a sweep that never ends: the point is
				// bounded by SWEEP_DURATION, far below this.
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				var stdout, stderr bytes.Buffer
				code := realMain(ctx, []string{"sweep"}, map[string]string{"SOAKD_LISTEN": "off", "SOAKD_PROGRESS_INTERVAL": "0",
					"SOAKD_WORKLOADS": "w", "SOAKD_W_SOURCE": name, "SOAKD_SWEEP_WORKERS": "1", "SOAKD_SWEEP_BATCH": "10",
					"SOAKD_SWEEP_REPEATS": "1", "SOAKD_SWEEP_DURATION": "1s", "SOAKD_SWEEP_OUT": out}, &stdout, &stderr)
				if ctx.Err() != nil {
					t.Fatalf("the sweep did not end\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
				}
				if code != cli.ExitOK {
					t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
				}
				res := readJSON[sweep.Result](t, out+".json")
				if len(res.Points) != 1 || len(res.Points[0].Rates) != 1 || res.Points[0].Rates[0] <= 0 {
					t.Fatalf("points %+v, want one with one run that wrote", res.Points)
				}
				// No TARGET: the report says the figures are soakd's own.
				if !strings.HasPrefix(res.BuiltinTarget, "the built-in target ") ||
					!strings.Contains(stdout.String(), "| target | "+res.BuiltinTarget+" |") {
					t.Errorf("builtin_target %q; the report must say the target was the built-in one:\n%s", res.BuiltinTarget, stdout.String())
				}
			})
		}
	}
}
