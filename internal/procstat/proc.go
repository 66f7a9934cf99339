package procstat

import "errors"

// ErrExited is what Read returns for a process that is gone (or a zombie
// its parent has not reaped yet, which holds no memory and runs no more).
// Off Linux Read and Find return another error: they need /proc.
var ErrExited = errors.New("the process has exited")

// Proc is what /proc says of another process: its CPU time and resident
// set size, and what names it.
type Proc struct {
	Pid, PPid int
	// Comm is the kernel's name of the process (at most 15 bytes).
	Comm string
	// Start is when it started, in clock ticks after boot: with Pid it
	// names the process, as a pid is reused once its process has exited.
	Start uint64
	// CPUSeconds is its user and system time so far; RSS its resident
	// set size in bytes.
	CPUSeconds, RSS float64
}
