//go:build !unix

package daemon

import "os"

// notifyResize does nothing where there is no SIGWINCH: the bar, redrawn
// every second at the terminal's current width, follows a resize then.
func notifyResize(chan<- os.Signal) {}
