// Package sysinfo describes the machine a run happened on, as
// reproducible benchmark reports open with it: CPU model, cores, memory,
// OS and kernel, Go and soakd versions. The HTML report prints it; the
// capacity and sweep reports are meant to as well.
package sysinfo

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Info is the environment of a run. Fields the OS does not tell are "".
type Info struct {
	CPU     string `json:"cpu"`          // model name
	Cores   int    `json:"cores"`        // logical CPUs soakd may use
	Memory  uint64 `json:"memory_bytes"` // physical memory; 0 if unknown
	OS      string `json:"os"`           // distribution, or GOOS
	Kernel  string `json:"kernel"`
	Arch    string `json:"arch"`
	Go      string `json:"go"`
	Version string `json:"soakd"`
}

// Collect reads the environment; version is soakd's.
func Collect(version string) Info {
	in := Info{Cores: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH, Go: runtime.Version(), Version: version}
	in.CPU = field("/proc/cpuinfo", "model name", "Hardware", "cpu model", "uarch")
	if kb, err := strconv.ParseUint(strings.TrimSuffix(field("/proc/meminfo", "MemTotal"), " kB"), 10, 64); err == nil {
		in.Memory = kb * 1024
	}
	if os := field("/etc/os-release", "PRETTY_NAME"); os != "" {
		in.OS = strings.Trim(os, `"`)
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		in.Kernel = strings.TrimSpace(string(b))
	}
	return in
}

// Rows lists the environment as label and value pairs, for a table.
func (in Info) Rows() [][2]string {
	mem := ""
	if in.Memory > 0 {
		mem = fmt.Sprintf("%.1f GiB", float64(in.Memory)/(1<<30))
	}
	return [][2]string{
		{"CPU", in.CPU}, {"cores", strconv.Itoa(in.Cores)}, {"memory", mem},
		{"OS", in.OS}, {"kernel", in.Kernel}, {"architecture", in.Arch},
		{"Go", in.Go}, {"soakd", in.Version},
	}
}

// field returns the value of the first of keys found in a "key: value" or
// "KEY=value" file, or "".
func field(path string, keys ...string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	vals := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			k, v, ok = strings.Cut(line, "=")
		}
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if _, seen := vals[k]; !seen {
			vals[k] = v
		}
	}
	for _, k := range keys {
		if v := vals[k]; v != "" {
			return v
		}
	}
	return ""
}
