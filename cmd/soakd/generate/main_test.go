package generate

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
	"github.com/soakd/soakd/sources/kv"
	"github.com/soakd/soakd/sources/seq"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testSources is the source list of cmd/soakd (builtin.go), which this
// package cannot import.
func testSources() daemon.Sources {
	return daemon.Sources{
		{
			Names:    iot.Names(),
			Kind:     sources.Series,
			Settings: func() any { return &iot.Config{} },
			Validate: func(w *daemon.Workload) error {
				return iot.Defaults(w.Source, *w.Ext.(*iot.Config)).Validate()
			},
			New: func(w *daemon.Workload) (sources.Source, error) {
				return iot.New(w.Source, *w.Ext.(*iot.Config), w.Seed, w.Shard)
			},
			File: &daemon.FileEntry{
				Defaults: iot.FileDefaults(),
				Finite:   func(w *daemon.Workload) error { return w.Ext.(*iot.Config).Finite() },
			},
		},
		{
			Names:    []string{"kv"},
			Kind:     sources.KV,
			Settings: func() any { return &kv.Config{} },
			Validate: func(w *daemon.Workload) error { return w.Ext.(*kv.Config).Validate() },
			New: func(w *daemon.Workload) (sources.Source, error) {
				return kv.New(*w.Ext.(*kv.Config), w.Seed, w.Shard)
			},
		},
		{
			Names:    []string{"seq"},
			Kind:     sources.Series,
			Settings: func() any { return &seq.Config{} },
			Validate: func(w *daemon.Workload) error { return w.Ext.(*seq.Config).Validate() },
			New: func(w *daemon.Workload) (sources.Source, error) {
				return seq.New(*w.Ext.(*seq.Config), w.Shard)
			},
			File: &daemon.FileEntry{
				Finite: func(w *daemon.Workload) error { return w.Ext.(*seq.Config).Finite() },
			},
		},
	}
}
