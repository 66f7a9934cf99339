package daemon_test

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/soakd/soakd/daemon"
)

// slowLog holds each write of the stop message for a while, as a log
// written to a slow terminal or pipe would, and records whether that write
// had finished.
type slowLog struct {
	started, finished atomic.Bool
}

func (l *slowLog) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("stopping")) {
		l.started.Store(true)
		time.Sleep(300 * time.Millisecond)
		l.finished.Store(true)
	}
	return len(p), nil
}

// Run logs nothing once it has returned: the caller may read or close the
// log then (soakd's tests read it into a buffer, which raced with the stop
// message written by a goroutine Run had not waited for).
func TestNoLogAfterRunReturns(t *testing.T) {
	p := daemon.Plugins()
	cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "10", "SOAKD_SEQ_DURATION", "5s"), p)
	w := &slowLog{}
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(w), zap.InfoLevel))
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // stopped (SIGTERM) as the run starts
	if _, err := daemon.Run(ctx, cfg, daemon.Deps{Logger: log, Plugins: p}); err != nil {
		t.Fatal(err)
	}
	if !w.started.Load() {
		t.Fatal("a run stopped as it started logged no stop message")
	}
	if !w.finished.Load() {
		t.Fatal("Run returned while its stop message was still being written")
	}
}
