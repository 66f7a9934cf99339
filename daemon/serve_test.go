package daemon_test

import (
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/serve"
)

// The engine's internal tests run the HTTP API as the composition root
// does; they cannot import package serve themselves (it imports daemon).
func init() {
	daemon.ServeHook = func(cfg *config.Config, d daemon.Deps, reg *prometheus.Registry, l net.Listener) (daemon.Observer, http.Handler) {
		log := d.Logger
		if log == nil {
			log = zap.NewNop()
		}
		s := serve.New(serve.Options{Config: cfg, Logger: log, Version: d.Version, Registry: reg, Listener: l})
		return s, s.Handler()
	}
}
