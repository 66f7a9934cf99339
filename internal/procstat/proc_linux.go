package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// userHZ is the unit of the CPU times /proc/<pid>/stat gives: USER_HZ,
// which the kernel fixes at 100 on every architecture Go runs Linux on.
const userHZ = 100

// Read reads process pid's figures from /proc/<pid>/stat and statm.
func Read(pid int) (Proc, error) {
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return Proc{}, gone(err)
	}
	p, state, err := parseStat(b)
	if err != nil {
		return Proc{}, fmt.Errorf("%s/stat: %w", dir, err)
	}
	if state == 'Z' || state == 'X' {
		return Proc{}, ErrExited
	}
	m, err := os.ReadFile(dir + "/statm")
	if err != nil {
		return Proc{}, gone(err)
	}
	f := bytes.Fields(m)
	if len(f) < 2 {
		return Proc{}, fmt.Errorf("%s/statm: %q has no resident field", dir, m)
	}
	pages, err := strconv.ParseUint(string(f[1]), 10, 64)
	if err != nil {
		return Proc{}, fmt.Errorf("%s/statm: %w", dir, err)
	}
	p.RSS = float64(pages) * float64(os.Getpagesize())
	return p, nil
}

// gone turns a missing /proc entry into ErrExited.
func gone(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return ErrExited
	}
	return err
}

// parseStat reads the fields of a /proc/<pid>/stat line that Proc holds,
// and the process's state. The name, in parentheses, may itself hold
// spaces and parentheses: the fields after it start after the last ')'.
func parseStat(b []byte) (Proc, byte, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return Proc{}, 0, fmt.Errorf("%q: no (name)", b)
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return Proc{}, 0, fmt.Errorf("pid: %w", err)
	}
	// After the name: state (field 3), ppid (4), ..., utime (14), stime
	// (15), ..., starttime (22).
	f := bytes.Fields(b[end+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return Proc{}, 0, fmt.Errorf("%q: too few fields", b)
	}
	var n [4]uint64
	for i, field := range []int{4, 14, 15, 22} {
		if n[i], err = strconv.ParseUint(string(f[field-3]), 10, 64); err != nil {
			return Proc{}, 0, fmt.Errorf("field %d: %w", field, err)
		}
	}
	return Proc{Pid: pid, PPid: int(n[0]), Comm: string(b[open+1 : end]), Start: n[3],
		CPUSeconds: float64(n[1]+n[2]) / userHZ}, f[0][0], nil
}

// Find returns the live processes named name, by their comm (the
// kernel's name, cut to 15 bytes) or the base name of their argv[0], in
// the order they started. Processes that end while it looks are left out.
func Find(name string) ([]Proc, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 || !named(pid, name) {
			continue
		}
		if p, err := Read(pid); err == nil {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b Proc) int {
		if a.Start != b.Start {
			return compare(a.Start, b.Start)
		}
		return a.Pid - b.Pid
	})
	return out, nil
}

func compare(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// named reports whether process pid's comm or argv[0]'s base name is name.
func named(pid int, name string) bool {
	dir := "/proc/" + strconv.Itoa(pid)
	if comm, err := os.ReadFile(dir + "/comm"); err == nil && string(bytes.TrimSuffix(comm, []byte("\n"))) == name {
		return true
	}
	cmdline, err := os.ReadFile(dir + "/cmdline")
	if err != nil || len(cmdline) == 0 {
		return false // a kernel thread, or gone
	}
	argv0, _, _ := bytes.Cut(cmdline, []byte{0})
	return filepath.Base(string(argv0)) == name
}
