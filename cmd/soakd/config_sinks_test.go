package main

import (
	"strings"
	"testing"

	"github.com/soakd/soakd/cmd/soakd/cli"
)

// soakd config --sinks lists every sink's schemes and URL parameters, from
// the declarations the sinks parse their URLs with.
func TestConfigSinks(t *testing.T) {
	code, out, errs := run(t, nil, "config", "--sinks")
	if code != cli.ExitOK {
		t.Fatalf("config --sinks: exit %d\n%s", code, errs)
	}
	for _, want := range []string{
		"null://", "file://", "postgres://, postgresql://", "influx://, influxs://, influx1://", "redis://, rediss://, redis-cluster://, redis-sentinel://",
		"PARAMETER", "latency", "fail_class", "timeout|connection|rejected|server|out_of_order|empty|other",
		"dialect", "postgres|timescaledb|kwdb|matrixdb|greenplum|cockroach", "chunk_interval",
		"v1 only: database", "v2 only: bucket", "product", "sentinel_password", "string, secret", "read_timeout", "10s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("config --sinks lacks %q:\n%s", want, out)
		}
	}
	if code, out, _ := run(t, nil, "config", "--help"); code != cli.ExitOK || !strings.Contains(out, "--sinks") {
		t.Errorf("config --help: exit %d, does not mention --sinks:\n%s", code, out)
	}
}

// config --check --sinks lists the sinks and checks the settings as
// --check does: exit 2 naming the setting at fault. Bug caught: --sinks
// returned first, so SOAKD_IOT_RATE=fast passed the check with exit 0.
func TestConfigCheckSinksChecks(t *testing.T) {
	for _, args := range [][]string{{"config", "--check", "--sinks"}, {"config", "--sinks", "--check"}} {
		code, out, errs := run(t, map[string]string{"SOAKD_WORKLOADS": "iot", "SOAKD_IOT_RATE": "fast"}, args...)
		if code != cli.ExitConfig || !strings.Contains(errs, "SOAKD_IOT_RATE") || !strings.Contains(out, "null://") {
			t.Errorf("%v with RATE=fast: exit %d, want 2 naming SOAKD_IOT_RATE after the sinks' list\nstdout:\n%s\nstderr:\n%s", args, code, out, errs)
		}
		code, out, errs = run(t, map[string]string{"SOAKD_WORKLOADS": "iot"}, args...)
		if code != cli.ExitOK || !strings.Contains(out, "null://") || !strings.Contains(out, "configuration ok") {
			t.Errorf("%v: exit %d, want 0 with the sinks' list and configuration ok\nstdout:\n%s\nstderr:\n%s", args, code, out, errs)
		}
	}
}
