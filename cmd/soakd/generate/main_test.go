package generate

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/soakd/soakd/cmd/soakd/plugins"
	"github.com/soakd/soakd/sources"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testSources is soakd's own source list.
func testSources() *sources.Registry { return plugins.All().Sources }
