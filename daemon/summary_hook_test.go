package daemon_test

import (
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/summary"
)

func init() { daemon.WriteSummaryText = summary.WriteText }
