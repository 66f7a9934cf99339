package gencmd

import (
	"context"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs Main itself when GENCMD_MAIN=1, so bench/gen.sh can use
// the test binary as `soakd generate` before cmd/soakd wires it in:
//
//	GENCMD_MAIN=1 ./gencmd.test -- --source devops ...
func TestMain(m *testing.M) {
	if os.Getenv("GENCMD_MAIN") == "1" {
		args := os.Args[1:]
		for i, a := range args {
			if a == "--" {
				args = args[i+1:]
				break
			}
		}
		os.Exit(Main(context.Background(), args, os.Stdout, os.Stderr))
	}
	goleak.VerifyTestMain(m)
}
