//go:build unix

package progress

import (
	"os"
	"os/signal"
	"syscall"
)

// notifyResize asks for SIGWINCH on c: the terminal changed size.
func notifyResize(c chan<- os.Signal) { signal.Notify(c, syscall.SIGWINCH) }
