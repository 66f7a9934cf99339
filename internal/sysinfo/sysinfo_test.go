package sysinfo

import (
	"runtime"
	"testing"
)

func TestCollect(t *testing.T) {
	in := Collect("v1.2.3")
	if in.Cores < 1 || in.Go != runtime.Version() || in.Version != "v1.2.3" || in.OS == "" {
		t.Errorf("incomplete: %+v", in)
	}
	if runtime.GOOS == "linux" && (in.CPU == "" || in.Memory == 0 || in.Kernel == "") {
		t.Errorf("on Linux the CPU, memory and kernel are known: %+v", in)
	}
	if rows := in.Rows(); len(rows) != 8 || rows[0][0] != "CPU" {
		t.Errorf("rows: %v", rows)
	}
}
