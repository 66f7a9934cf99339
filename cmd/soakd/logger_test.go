package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/serve"
)

// The log samples a flood of one message (20 a second, then one in 100)
// but never /control's audit line: 30 changes in one second are 30
// lines, each with its caller. The 21st to 30th were dropped, and the
// last change logged was not the one applied.
func TestControlLogNotSampled(t *testing.T) {
	var buf bytes.Buffer
	log, err := newLogger(&config.Config{LogLevel: "info", LogFormat: "json"}, &buf, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		log.Info(serve.ControlLogMessage, zap.Int("rate", 300+i))
		log.Info("something else", zap.Int("i", i))
	}
	out := buf.String()
	if n := strings.Count(out, `"msg":"control"`); n != 30 {
		t.Errorf("%d control lines of 30", n)
	}
	if n := strings.Count(out, `"msg":"something else"`); n != 20 {
		t.Errorf("%d lines of another message logged 30 times in a second, want the sampler's 20", n)
	}
}
