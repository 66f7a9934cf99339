package main

import (
	"os"
	"os/signal"
	"syscall"
)

// stopSignals are the signals that stop a run gracefully: the summary,
// report and files are written as at its end. SIGHUP is among them so
// that a terminal or SSH session that closes under a long run leaves its
// summary files rather than killing soakd outright, but not when SIGHUP
// is ignored (nohup): handling it would undo the nohup.
func stopSignals() []os.Signal {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}
