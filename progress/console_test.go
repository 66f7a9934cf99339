package progress

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/enginetest"
)

// screen replays terminal output: \r returns to the start of the line,
// ESC[K erases to its end, \n ends it. It returns the finished lines and
// the line the cursor is on.
func screen(out string) (lines []string, current string) {
	var line []rune
	col := 0
	for i := 0; i < len(out); {
		switch {
		case strings.HasPrefix(out[i:], "\x1b[K"):
			line = line[:col]
			i += 3
		case out[i] == '\r':
			col = 0
			i++
		case out[i] == '\n':
			lines = append(lines, string(line))
			line, col = nil, 0
			i++
		default:
			r := []rune(out[i:])[0]
			if col < len(line) {
				line[col] = r
			} else {
				line = append(line, r)
			}
			col++
			i += len(string(r))
		}
	}
	return lines, string(line)
}

var barRE = regexp.MustCompile(`^\[[#-]+\] +(\d+)% (\S+) elapsed, (\S+) left`)

// A run with a progress bar: every log line is a line of its own (none
// holds a piece of the bar), the time left counts down with the
// configured duration, and the last frame says 100 %.
func TestConsoleBarAndLogsNeverShareALine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		con := NewConsole(&out)
		enc := zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig())
		log := zap.New(zapcore.NewCore(enc, zapcore.AddSync(con), zapcore.InfoLevel))
		p := enginetest.Plugins()
		cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_BATCH_SIZE", "10",
			"SOAKD_SEQ_DURATION", "20s", "SOAKD_SEQ_TARGET", "null://?latency=1ms&fail=0.3", "SOAKD_SEQ_RETRIES", "0"), p)
		_, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: log, Plugins: p,
			Observers: []daemon.Observer{New(cfg, log, con, nil)}})
		if err != nil {
			t.Fatal(err)
		}
		lines, cur := screen(out.String())
		if cur != "" {
			t.Errorf("cursor left on a line holding %q", cur)
		}
		var bars, logs int
		var lefts []string
		for _, l := range lines {
			isBar := barRE.MatchString(l)
			isLog := strings.Contains(l, "INFO") || strings.Contains(l, "WARN")
			switch {
			case isBar && isLog, strings.Contains(l, "[#") && isLog, strings.Contains(l, "elapsed") && isLog:
				t.Errorf("a log line and the bar share a line: %q", l)
			case isBar:
				bars++
			case isLog:
				logs++
			default:
				t.Errorf("line is neither the bar nor a log line: %q", l)
			}
		}
		if logs < 3 {
			t.Errorf("%d log lines; the failing writes should have logged", logs)
		}
		// Every frame was drawn over the previous one; the last stayed.
		if bars != 1 {
			t.Fatalf("%d finished bar lines, want the last frame only", bars)
		}
		m := barRE.FindStringSubmatch(lines[len(lines)-1])
		if m == nil || m[1] != "100" || m[3] != "0s" {
			t.Errorf("last frame %q, want 100 %% and 0s left", lines[len(lines)-1])
		}
		// Frames as drawn: time left goes down a second per second.
		for _, f := range regexp.MustCompile(`\[[#-]+\][^\r\n\x1b]*`).FindAllString(out.String(), -1) {
			// A log line redraws the frame it erased: count each frame once.
			if m := barRE.FindStringSubmatch(f); m != nil && (len(lefts) == 0 || lefts[len(lefts)-1] != m[3]) {
				lefts = append(lefts, m[3])
			}
		}
		want := []string{"19s", "18s", "17s"}
		if len(lefts) < 5 || strings.Join(lefts[:3], " ") != strings.Join(want, " ") {
			t.Errorf("time left per frame %v, want it to count down from %v", lefts, want)
		}
	})
}

// A run stopped by a signal halfway leaves the bar where it got to; a
// run ended by SOAKD_DURATION ran its course: 100 %.
func TestConsoleBarLastFrame(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    []string
		cancel bool
		want   string
	}{
		{"signal at 5 s of 20 s", []string{"SOAKD_SEQ_DURATION", "20s"}, true, "25"},
		{"SOAKD_DURATION", []string{"SOAKD_DURATION", "8s"}, false, "100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var out bytes.Buffer
				con := NewConsole(&out)
				p := enginetest.Plugins()
				env := enginetest.Env(append([]string{"SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_BATCH_SIZE", "10",
					"SOAKD_SEQ_TARGET", "null://"}, tc.env...)...)
				cfg := enginetest.Load(t, env, p)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tc.cancel {
					time.AfterFunc(5*time.Second, cancel)
				}
				if _, err := daemon.Run(ctx, cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p,
					Observers: []daemon.Observer{New(cfg, zap.NewNop(), con, nil)}}); err != nil {
					t.Fatal(err)
				}
				lines, _ := screen(out.String())
				m := barRE.FindStringSubmatch(lines[len(lines)-1])
				if m == nil || m[1] != tc.want {
					t.Errorf("last frame %q, want %s %%", lines[len(lines)-1], tc.want)
				}
			})
		})
	}
}
