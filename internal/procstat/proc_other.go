//go:build !linux

package procstat

import "errors"

// errNoProc is why another process cannot be watched off Linux.
var errNoProc = errors.New("reading another process's figures needs Linux's /proc")

// Read is unavailable off Linux.
func Read(int) (Proc, error) { return Proc{}, errNoProc }

// Find is unavailable off Linux.
func Find(string) ([]Proc, error) { return nil, errNoProc }
