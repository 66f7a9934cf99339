package targetwatch

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"go.uber.org/zap"

	"github.com/soakd/soakd/internal/procstat"
)

// procWatch follows the process WATCH_PROCESS names, from the watch's
// goroutine alone. A pid is watched until its process exits; a name is
// looked up in /proc at each reading until a process has it, and looked
// up again once that process exits (the target restarted).
type procWatch struct {
	pid     int    // the pid set, 0 when a name is
	name    string // the name set
	setting string // SOAKD_<W>_WATCH_PROCESS
	log     *zap.Logger

	cur    procstat.Proc // the process watched now
	has    bool
	done   bool // a pid set whose process has exited: watched no more
	warned bool // the name matched nothing, and that was logged
	failed bool // a reading failed otherwise, and that was logged
}

// procReading is one reading of the process: its figures when ok, else
// why there are none.
type procReading struct {
	p   procstat.Proc
	ok  bool
	why string
}

// read reads the watched process, finding it first when it has a name.
func (pw *procWatch) read() procReading {
	if pw.done {
		return procReading{why: fmt.Sprintf("process %d has exited: no longer watched", pw.pid)}
	}
	if pw.has {
		p, err := procstat.Read(pw.cur.Pid)
		switch {
		case err == nil && p.Start == pw.cur.Start:
			pw.cur, pw.failed = p, false
			return procReading{p: p, ok: true}
		case err == nil || errors.Is(err, procstat.ErrExited):
			// Gone, or its pid taken by another process since.
			pw.has = false
			if pw.pid != 0 {
				pw.done = true
				pw.log.Warn("the target's process has exited: it is no longer watched", zap.Int("pid", pw.cur.Pid),
					zap.String("set", pw.setting))
				return procReading{why: fmt.Sprintf("process %d has exited: no longer watched", pw.pid)}
			}
			pw.log.Warn("the target's process has exited: looking for a process of that name at each reading",
				zap.Int("pid", pw.cur.Pid), zap.String("name", pw.name), zap.String("set", pw.setting))
		default:
			return pw.fail(err)
		}
	}
	if pw.pid != 0 {
		return pw.follow(pw.pid)
	}
	found, err := procstat.Find(pw.name)
	if err != nil {
		return pw.fail(err)
	}
	if len(found) == 0 {
		why := fmt.Sprintf("no process is named %q (by its comm or argv[0])", pw.name)
		if !pw.warned {
			pw.warned = true
			pw.log.Warn(fmt.Sprintf("%s=%s: %s; looking again at each reading", pw.setting, pw.name, why),
				zap.String("set", pw.setting))
		}
		return procReading{why: why}
	}
	p := eldestRoot(found)
	fields := []zap.Field{zap.String("name", pw.name), zap.Int("pid", p.Pid), zap.String("comm", p.Comm)}
	if len(found) > 1 {
		// A server that forks (PostgreSQL's backends) shares the name
		// with its children: the watch is of the parent.
		fields = append(fields, zap.Int("matched", len(found)))
	}
	pw.log.Info("watching the target's process", fields...)
	pw.cur, pw.has, pw.failed = p, true, false
	return procReading{p: p, ok: true}
}

// follow starts watching process pid, as WATCH_PROCESS set it.
func (pw *procWatch) follow(pid int) procReading {
	p, err := procstat.Read(pid)
	if errors.Is(err, procstat.ErrExited) {
		pw.done = true
		why := fmt.Sprintf("no process %d", pid)
		pw.log.Warn(fmt.Sprintf("%s=%d: %s; it is not watched", pw.setting, pid, why), zap.String("set", pw.setting))
		return procReading{why: why}
	}
	if err != nil {
		return pw.fail(err)
	}
	pw.log.Info("watching the target's process", zap.Int("pid", p.Pid), zap.String("comm", p.Comm))
	pw.cur, pw.has, pw.failed = p, true, false
	return procReading{p: p, ok: true}
}

// fail is a reading that failed otherwise than by the process exiting (a
// /proc the container hides): logged once until a reading succeeds.
func (pw *procWatch) fail(err error) procReading {
	why := "cannot read /proc: " + err.Error()
	if !pw.failed {
		pw.failed = true
		pw.log.Warn("cannot read the target's process; trying again at each reading", zap.String("error", err.Error()),
			zap.String("set", pw.setting))
	}
	return procReading{why: why}
}

// eldestRoot is, of processes sorted by start, the eldest whose parent is
// none of them: a server's main process rather than one it forked.
func eldestRoot(ps []procstat.Proc) procstat.Proc {
	for _, p := range ps {
		if !slices.ContainsFunc(ps, func(q procstat.Proc) bool { return q.Pid == p.PPid }) {
			return p
		}
	}
	return ps[0]
}

// setValue is WATCH_PROCESS as set.
func (pw *procWatch) setValue() string {
	if pw.pid != 0 {
		return strconv.Itoa(pw.pid)
	}
	return pw.name
}
