package config

import (
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Plugins is the composition root's list of sources and sinks.
type Plugins struct {
	Sources *sources.Registry
	Sinks   *sinks.Registry
	// Builtin is the target used when a workload sets none, per kind. It
	// must be in-process: nothing is sent to a host the user did not name.
	Builtin map[sources.Kind]string
}
