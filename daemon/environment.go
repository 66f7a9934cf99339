package daemon

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/soakd/soakd/sinks"
)

// Environment describes where a run happened, as reproducible benchmark
// reports open with it.
type Environment struct {
	CPU       string            `json:"cpu"`
	Cores     int               `json:"cores"`
	MemoryMiB int64             `json:"memory_mib"`
	OS        string            `json:"os"`
	Go        string            `json:"go"`
	Soakd     string            `json:"soakd"`
	Servers   map[string]string `json:"servers,omitempty"` // workload → the target's version, where the sink can ask
}

// CollectEnvironment reads the machine's CPU model, cores, memory and OS.
func CollectEnvironment(version string) Environment {
	e := Environment{Cores: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH, Go: runtime.Version(), Soakd: version}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				e.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "MemTotal:" {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				e.MemoryMiB = kb / 1024
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		e.OS += " " + strings.TrimSpace(string(b))
	}
	return e
}

// serverVersions asks each workload's target for its version where the
// sink can.
func serverVersions(wls []*workload) map[string]string {
	out := map[string]string{}
	for _, w := range wls {
		v, ok := w.sink.(sinks.Versioner)
		if !ok {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s, err := v.ServerVersion(ctx)
		cancel()
		if err == nil && s != "" {
			out[w.name] = s
		}
	}
	return out
}
