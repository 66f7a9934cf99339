package generate

import (
	"bufio"
	"fmt"
	"os"
	"syscall"

	"github.com/soakd/soakd/sinks/file"
)

// gather writes one output's bytes, which the merge finds as many short
// ranges (a device's lines) in the workers' pieces. When the output is a
// file (standard output too, when it is one) the ranges go to the kernel
// as they lie, up to maxIov of them per writev, so they are copied once,
// by the kernel (not at all for /dev/null), rather than first into the
// output's buffer: that copy was all the writer did, on a core the
// workers need. Ranges that follow one another in a piece (a worker's
// consecutive devices) become one. Any other writer gets copies in its
// buffer, as before.
//
// The ranges point into pieces: flush before a piece is reused.
type gather struct {
	w    *bufio.Writer
	f    *os.File
	rc   syscall.RawConn // nil: copy into w
	name string
	iov  [][]byte
	vec  []syscall.Iovec // the system call's form of iov (unused where there is no writev)
	err  error           // the first write error; nothing is written after it
}

// maxIov is Linux's IOV_MAX: the most ranges one writev takes.
const maxIov = 1024

func newGather(o *file.Output) (*gather, error) {
	g := &gather{w: o.W, name: o.Name}
	if o.File == nil {
		return g, nil
	}
	rc, err := o.File.SyscallConn()
	if err != nil || !haveWritev {
		return g, nil
	}
	// What OpenOutputs buffered (a CSV header) goes first.
	if err := o.W.Flush(); err != nil {
		return nil, fmt.Errorf("cannot write %s: %w", o.Name, err)
	}
	g.f, g.rc = o.File, rc
	g.iov = make([][]byte, 0, maxIov)
	return g, nil
}

// add queues b, writing the queue once it holds maxIov ranges.
func (g *gather) add(b []byte) {
	if len(b) == 0 {
		return
	}
	if g.rc == nil {
		_, _ = g.w.Write(b) // errors resurface on Flush
		return
	}
	if k := len(g.iov); k > 0 {
		prev := g.iov[k-1]
		if n := len(prev); n < cap(prev) && n+len(b) <= cap(prev) && &prev[:n+1][n] == &b[0] {
			g.iov[k-1] = prev[:n+len(b)]
			return
		}
	}
	g.iov = append(g.iov, b)
	if len(g.iov) == maxIov {
		_ = g.flush()
	}
}

// flush writes what is queued and returns the first write error, naming
// the output.
func (g *gather) flush() error {
	if g.rc != nil && len(g.iov) > 0 {
		if g.err == nil {
			if err := g.writev(); err != nil {
				g.err = fmt.Errorf("cannot write %s: %w", g.name, err)
			}
		}
		g.iov = g.iov[:0]
	}
	return g.err
}
