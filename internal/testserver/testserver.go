// Package testserver starts real database servers for integration tests:
// each on a free loopback port, with its data in a temporary directory,
// stopped and removed when the test ends.
//
// When a server's binary is missing the test is skipped with the reason,
// unless SOAKD_REQUIRE_SERVERS=1 (as in CI), where it fails: a CI run must
// never pass by skipping. scripts/test.sh installs the binaries.
package testserver

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Required reports whether missing servers must fail tests (CI).
func Required() bool { return os.Getenv("SOAKD_REQUIRE_SERVERS") == "1" }

// Unavailable skips the test, or fails it when servers are required.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("SOAKD_REQUIRE_SERVERS=1 but %s (run scripts/test.sh, which installs it)", msg)
	}
	t.Skipf("skipping: %s (scripts/test.sh installs it; set SOAKD_REQUIRE_SERVERS=1 to fail instead)", msg)
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("cannot find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// FindBinary looks for name in $PATH and then in dirs; "" if absent.
func FindBinary(name string, dirs ...string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// GoBinDirs are the directories `go install` puts binaries in, where
// scripts/install-test-deps.sh puts influxd, victoria-metrics, prometheus3 and
// tsbs_load_influx: GOBIN, or else the bin directory of each GOPATH
// entry, as `go env` reports them (so also when they are set in go's own
// config file, `go env -w`), then ~/go/bin and /opt/peers/bin.
func GoBinDirs() []string {
	gobin, gopath := os.Getenv("GOBIN"), os.Getenv("GOPATH")
	if out, err := exec.Command("go", "env", "GOBIN", "GOPATH").Output(); err == nil {
		if l := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); len(l) == 2 {
			gobin, gopath = l[0], l[1]
		}
	}
	var dirs []string
	if gobin != "" {
		dirs = append(dirs, gobin)
	}
	for _, d := range filepath.SplitList(gopath) {
		dirs = append(dirs, filepath.Join(d, "bin"))
	}
	if h, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(h, "go", "bin"))
	}
	return append(dirs, "/opt/peers/bin")
}

// Proc is a server process started for a test.
type Proc struct {
	Name string
	Dir  string // data directory, removed at cleanup
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
	// stopSignal is sent first on Stop; SIGKILL follows after stopWait.
	stopSignal syscall.Signal
}

// syncBuffer collects a process's output for failure messages, keeping
// only the last 64 KiB.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.b.Len() > 64<<10 {
		keep := s.b.Bytes()[s.b.Len()-32<<10:]
		s.b = *bytes.NewBuffer(append([]byte(nil), keep...))
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TempDir makes a directory for server data that the given OS user (""
// for the current one) can write, removed when the test ends.
func TempDir(t testing.TB, owner string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "soakd-"+sanitize(t.Name())+"-")
	if err != nil {
		t.Fatalf("cannot create temp dir: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if owner != "" {
		uid, gid, err := lookupUser(owner)
		if err != nil {
			t.Fatalf("%v", err)
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatalf("cannot give %s to %s: %v", dir, owner, err)
		}
	}
	return dir
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	if len(b) > 40 {
		b = b[:40]
	}
	return string(b)
}

func lookupUser(name string) (uid, gid int, err error) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, fmt.Errorf("no OS user %q to run the server as: %w", name, err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid, nil
}

// Command describes a server process to start.
type Command struct {
	Name string   // for messages
	Path string   // binary
	Args []string // arguments
	Dir  string   // data dir (already created)
	// AsUser runs the process as this OS user when the test runs as root
	// (PostgreSQL refuses to run as root).
	AsUser string
	// StopSignal is sent on Stop (default SIGTERM).
	StopSignal syscall.Signal
	// Ready is polled until it returns nil or ReadyTimeout passes.
	Ready        func(ctx context.Context) error
	ReadyTimeout time.Duration
}

// Start starts c, waits until it is ready and registers a cleanup that
// stops it. The test fails if the server does not come up.
func Start(t testing.TB, c Command) *Proc {
	t.Helper()
	return startReady(t, c, "start", "")
}

// startReady is Start; what ("start", "restart") and after ("", " after
// restart") name the step in the test's failure.
func startReady(t testing.TB, c Command, what, after string) *Proc {
	t.Helper()
	p, err := start(c)
	if err != nil {
		t.Fatalf("cannot %s %s: %v", what, c.Name, err)
	}
	t.Cleanup(func() { p.Stop() })
	if err := p.waitReady(c); err != nil {
		t.Fatalf("%s did not become ready%s: %v\n--- %s output ---\n%s", c.Name, after, err, c.Name, p.Output())
	}
	return p
}

func start(c Command) (*Proc, error) {
	cmd := exec.Command(c.Path, c.Args...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Dir = c.Dir
	// Own process group so a stop reaches the server and nothing else.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if c.AsUser != "" && os.Geteuid() == 0 {
		uid, gid, err := lookupUser(c.AsUser)
		if err != nil {
			return nil, err
		}
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		cmd.Env = append(os.Environ(), "HOME="+c.Dir)
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sig := c.StopSignal
	if sig == 0 {
		sig = syscall.SIGTERM
	}
	p := &Proc{Name: c.Name, Dir: c.Dir, cmd: cmd, out: out, done: make(chan struct{}), stopSignal: sig}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

func (p *Proc) waitReady(c Command) error {
	timeout := c.ReadyTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		select {
		case <-p.done:
			return fmt.Errorf("exited early: %v", p.err)
		default:
		}
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		last = c.Ready(rctx)
		rcancel()
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready after %v: %w", timeout, last)
		case <-p.done:
			return fmt.Errorf("exited early: %v", p.err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Output returns the tail of the server's stdout and stderr.
func (p *Proc) Output() string { return p.out.String() }

// Pid is the server's process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Signal sends sig to the server (e.g. SIGSTOP / SIGCONT in fault tests).
func (p *Proc) Signal(sig syscall.Signal) error { return syscall.Kill(p.cmd.Process.Pid, sig) }

// Stop stops the server: its stop signal, then SIGKILL after 20 s. Safe to
// call more than once.
func (p *Proc) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGCONT) // a stopped process cannot handle SIGTERM
	_ = syscall.Kill(p.cmd.Process.Pid, p.stopSignal)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Restart stops the server and starts it again with the same command and
// data, waiting until it is ready.
func (p *Proc) Restart(t testing.TB, c Command) *Proc {
	t.Helper()
	p.Stop()
	return startReady(t, c, "restart", " after restart")
}

// DialReady is a Ready function that succeeds once addr accepts TCP.
func DialReady(addr string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// Procs returns the server's process id and those of its children, from
// /proc (PostgreSQL's backends are children of the postmaster, each in a
// session of its own, so signalling the process group misses them).
func (p *Proc) Procs() []int {
	pid := p.Pid()
	out := []int{pid}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid ...; comm may hold spaces, so cut at the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			child, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(f, "/proc/"), "/stat"))
			out = append(out, child)
		}
	}
	return out
}

// Freeze stops the server and its children with SIGSTOP, as a server that
// hangs (swapping, a stalled disk, a debugger) looks to its clients. The
// returned function resumes them (SIGCONT); it is safe to call more than
// once and cleanup calls it too.
func (p *Proc) Freeze(t testing.TB) (thaw func()) {
	t.Helper()
	// The server itself first: stopped, it forks no more children (a
	// PostgreSQL backend for a new connection). Then its children, again
	// until a look finds none not yet stopped: one forked while the first
	// look read /proc would otherwise run on through the freeze, serving
	// its connection as if nothing had happened.
	procs := []int{p.Pid()}
	if err := syscall.Kill(procs[0], syscall.SIGSTOP); err != nil {
		t.Fatalf("cannot stop %s (pid %d): %v", p.Name, procs[0], err)
	}
	for {
		var fresh []int
		for _, pid := range p.Procs() {
			if !slices.Contains(procs, pid) {
				fresh = append(fresh, pid)
			}
		}
		if len(fresh) == 0 {
			break
		}
		for _, pid := range fresh {
			// A child that exited meanwhile is not an error.
			_ = syscall.Kill(pid, syscall.SIGSTOP)
		}
		procs = append(procs, fresh...)
	}
	thaw = sync.OnceFunc(func() {
		for _, pid := range procs {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	})
	t.Cleanup(thaw)
	return thaw
}

// Kill kills the server and its children with SIGKILL, as a crash or the
// OOM killer would, and waits until they have gone: a server started again
// on the data (Resume) must not find them still holding its shared memory.
// Its data stays for Resume.
func (p *Proc) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	procs := p.Procs()
	for _, pid := range procs {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	<-p.done
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if !slices.ContainsFunc(procs, func(pid int) bool { return syscall.Kill(pid, 0) == nil }) {
			return
		}
	}
}

// startOnFreePort is startOnFreePorts for a server on one port of
// 127.0.0.1: build gets the port and its address and returns the command
// and the server's URL.
func startOnFreePort(t testing.TB, build func(port int, addr string) (Command, string)) *Server {
	t.Helper()
	return startOnFreePorts(t, 1, func(ports []int) (Command, *Server) {
		addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
		c, url := build(ports[0], addr)
		return c, &Server{Addr: addr, Port: ports[0], URL: url}
	})
}

// startOnFreePorts starts the server build describes on n ports FreePort
// picks, and fills in the Server's process and command. A port is free
// only when FreePort looks: a process that binds it before the server
// does (another test's server, a client's ephemeral port) makes the
// server exit "address already in use", and it is started again on new
// ports, up to 5 times.
func startOnFreePorts(t testing.TB, n int, build func(ports []int) (Command, *Server)) *Server {
	t.Helper()
	for attempt := 1; ; attempt++ {
		ports := make([]int, n)
		for i := range ports {
			ports[i] = FreePort(t)
		}
		c, s := build(ports)
		p, err := start(c)
		if err != nil {
			t.Fatalf("cannot start %s: %v", c.Name, err)
		}
		if err := p.waitReady(c); err != nil {
			p.Stop()
			if attempt < 5 && strings.Contains(strings.ToLower(p.Output()), "address already in use") {
				t.Logf("%s: a port was taken before it bound it; starting again on others", c.Name)
				continue
			}
			t.Fatalf("%s did not become ready: %v\n--- %s output ---\n%s", c.Name, err, c.Name, p.Output())
		}
		t.Cleanup(func() { p.Stop() })
		s.Proc, s.cmd = p, c
		return s
	}
}
