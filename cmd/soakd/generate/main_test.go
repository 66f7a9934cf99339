package generate

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/soakd/soakd/cmd/soakd/plugins"
	"github.com/soakd/soakd/daemon"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testSources is soakd's own source list.
func testSources() daemon.Sources { return plugins.All().Sources }
