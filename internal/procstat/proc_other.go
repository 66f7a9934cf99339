//go:build !linux

package procstat

import "errors"

// ErrExited is what Read returns for a process that is gone.
var ErrExited = errors.New("the process has exited")

// Proc is what /proc says of another process (Linux only).
type Proc struct {
	Pid, PPid       int
	Comm            string
	Start           uint64
	CPUSeconds, RSS float64
}

// errNoProc is why another process cannot be watched off Linux.
var errNoProc = errors.New("reading another process's figures needs Linux's /proc")

// Read is unavailable off Linux.
func Read(int) (Proc, error) { return Proc{}, errNoProc }

// Find is unavailable off Linux.
func Find(string) ([]Proc, error) { return nil, errNoProc }
