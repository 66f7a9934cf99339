package testserver

import (
	"testing"

	"go.uber.org/goleak"
)

// Every server a test started is stopped, its wait goroutine gone.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
