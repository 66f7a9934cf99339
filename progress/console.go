package progress

import (
	"io"
	"os"
	"strconv"
	"sync"

	"golang.org/x/term"
)

// Console shares a terminal between log lines and a one-line progress
// bar. A log line first erases the bar, then the bar is drawn again below
// it, so the two never share a line. The logger writes through it (it is
// an io.Writer) and the reporter draws the bar.
type Console struct {
	mu    sync.Mutex
	out   io.Writer
	width int    // terminal columns; a longer bar would wrap and could not be erased
	bar   string // the bar as last drawn; "" = none on screen
}

// eraseLine returns the cursor to the start of the line and clears it.
const eraseLine = "\r\x1b[K"

// NewConsole returns a console writing to out (a terminal).
func NewConsole(out io.Writer) *Console {
	c := &Console{out: out, width: 80}
	c.width = c.columns()
	return c
}

// Write writes log output (whole lines) above the bar.
func (c *Console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bar != "" {
		_, _ = io.WriteString(c.out, eraseLine)
	}
	n, err := c.out.Write(p)
	if c.bar != "" {
		_, _ = io.WriteString(c.out, c.bar)
	}
	return n, err
}

// Sync is a no-op (zapcore.WriteSyncer).
func (c *Console) Sync() error { return nil }

// columns is the terminal's width now, so the bar follows a resize (it
// is redrawn every second, and at once on SIGWINCH): the size the
// terminal reports, else COLUMNS, else the width found at the start.
func (c *Console) columns() int {
	w := 0
	if f, ok := c.out.(*os.File); ok {
		if n, _, err := term.GetSize(int(f.Fd())); err == nil {
			w = n
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); w <= 0 && err == nil {
		w = n
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if w > 0 {
		c.width = w
	}
	return c.width
}

// terminal reports whether the console writes to a terminal, which can
// be resized.
func (c *Console) terminal() bool {
	f, ok := c.out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// showBar draws line as the bar, replacing the previous one.
func (c *Console) showBar(line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The reporter fits the bar to columns(); this only guards against
	// a shrink between the two, which would wrap the bar so that it could
	// not be erased.
	if r := []rune(line); len(r) > c.width-1 {
		line = string(r[:max(c.width-1, 0)])
	}
	c.bar = line
	_, _ = io.WriteString(c.out, eraseLine+line)
}

// endBar draws line as the bar's last frame and leaves it on screen;
// later output starts on the next line.
func (c *Console) endBar(line string) {
	c.showBar(line)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bar != "" {
		_, _ = io.WriteString(c.out, "\n")
		c.bar = ""
	}
}
