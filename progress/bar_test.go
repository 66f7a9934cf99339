package progress

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The progress line fits the terminal: at each width it is the fullest
// form that fits, whole fields only (no number cut), and the parts are
// left out in order: the graphic, the time elapsed, the targets, the
// time left, then the workloads from the last.
func TestBarFitsTheTerminal(t *testing.T) {
	b := barInfo{frac: 0.42, elapsed: 62 * time.Second, left: 86 * time.Second, wls: []barWorkload{
		{name: "iot", unit: "rows", achieved: 18400, target: 18437},
		{name: "kv", unit: "ops", achieved: 1000, target: 1000},
	}}
	want := map[int]string{
		120: "[####------]  42% 1m02s elapsed, 1m26s left | iot 18400 rows/s (target 18437) | kv 1000 ops/s (target 1000)",
		80:  " 42% 1m26s left | iot 18400 rows/s (target 18437) | kv 1000 ops/s (target 1000)",
		60:  " 42% 1m26s left | iot 18400 rows/s | kv 1000 ops/s",
		40:  " 42% | iot 18400 rows/s | kv 1000 ops/s",
	}
	full := b.render(barLevels(2)[0])
	words := strings.Fields(full)
	for _, width := range []int{40, 60, 80, 120} {
		got := b.fit(width - 1)
		if n := utf8.RuneCountInString(got); n > width-1 {
			t.Errorf("width %d: %d columns: %q", width, n, got)
		}
		// Every word shown is a word of the full line: none is cut.
		for _, f := range strings.Fields(got) {
			if !strings.HasPrefix(f, "[") && !slices.Contains(words, f) {
				t.Errorf("width %d: %q is cut (%q)", width, f, got)
			}
		}
		if got != want[width] {
			t.Errorf("width %d:\n got %q\nwant %q", width, got, want[width])
		}
	}
	// Narrower still: workloads go from the last, the percentage stays.
	if got := b.fit(25); got != " 42% | iot 18400 rows/s" {
		t.Errorf("width 26: %q", got)
	}
	if got := b.fit(4); got != " 42%" {
		t.Errorf("width 5: %q", got)
	}
	if got := b.fit(2); got != "" {
		t.Errorf("width 3: %q, want nothing rather than a cut number", got)
	}
}

// The console reads the terminal's width at every frame (from the
// terminal, else COLUMNS), so the bar follows a resize: each frame fits
// the width at the time it is drawn.
func TestConsoleFollowsTheWidth(t *testing.T) {
	var out strings.Builder
	t.Setenv("COLUMNS", "120")
	con := NewConsole(&out)
	b := barInfo{frac: 0.5, elapsed: 30 * time.Second, left: 30 * time.Second, wls: []barWorkload{
		{name: "iot", unit: "rows", achieved: 1000, target: 1000}, {name: "kv", unit: "ops", achieved: 1000, target: 1000}}}
	for _, cols := range []int{120, 60, 80} {
		t.Setenv("COLUMNS", strconv.Itoa(cols))
		line := b.fit(con.columns() - 1)
		con.showBar(line)
		if n := utf8.RuneCountInString(line); n > cols-1 || n < cols-40 {
			t.Errorf("COLUMNS=%d: a frame of %d columns: %q", cols, n, line)
		}
	}
	_, cur := screen(out.String())
	if want := b.fit(79); cur != want {
		t.Errorf("on screen %q, want the 80-column frame %q", cur, want)
	}
}
