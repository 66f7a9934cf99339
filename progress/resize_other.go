//go:build !unix

package progress

import "os"

// notifyResize does nothing where there is no SIGWINCH: the bar, redrawn
// every second at the terminal's current width, follows a resize then.
func notifyResize(chan<- os.Signal) {}
