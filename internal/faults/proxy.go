// Package faults is the fault-injection machinery of soakd's fault matrix
// (matrix_test.go): a toxiproxy proxy run in the test's process in front
// of a real server (latency, bandwidth limits, resets, half-open
// connections, a target that is down), and a harness that runs the soakd
// engine in-process against it while checking, every 100 ms, what must
// hold whatever the target does: the accounting invariant, work in
// flight and heap bounded, the schedule keeping its clock.
//
//	p := faults.NewProxy(t, srv.Addr)
//	r := faults.Start(t, env) // SOAKD_W_TARGET pointing at p.Addr()
//	p.Add(t, "slow", "latency", "downstream", map[string]any{"latency": 200})
//	...
//	sum := r.Stop(t)
//	r.Check(t, sum)
package faults

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Proxy is a toxiproxy proxy, run in this process, between soakd and one
// server: toxics added and removed by the test change what the
// connections through it see.
type Proxy struct {
	p *toxiproxy.Proxy
}

// NewProxy starts a proxy to upstream (host:port) on a free loopback port,
// stopped (and its connections closed) when the test ends.
func NewProxy(t testing.TB, upstream string) *Proxy {
	t.Helper()
	zerolog.SetGlobalLevel(zerolog.Disabled) // toxics log through zerolog's global logger
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, "target", "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("cannot start a proxy to %s: %v", upstream, err)
	}
	t.Cleanup(p.Stop)
	return &Proxy{p: p}
}

// Addr is where clients connect (host:port).
func (p *Proxy) Addr() string {
	p.p.Lock()
	defer p.p.Unlock()
	return p.p.Listen
}

// Add adds a toxic: typ is a toxiproxy toxic (latency, bandwidth,
// reset_peer, timeout, slow_close, limit_data, slicer), stream is
// upstream (client to server) or downstream, attrs its attributes
// (latency and jitter in ms, rate in KB/s, timeout in ms, ...).
func (p *Proxy) Add(t testing.TB, name, typ, stream string, attrs map[string]any) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"name": name, "type": typ, "stream": stream, "toxicity": 1.0, "attributes": attrs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.p.Toxics.AddToxicJson(strings.NewReader(string(b))); err != nil {
		t.Fatalf("cannot add toxic %s: %v", name, err)
	}
}

// Remove removes the toxic name.
func (p *Proxy) Remove(t testing.TB, name string) {
	t.Helper()
	if err := p.p.Toxics.RemoveToxic(context.Background(), name); err != nil {
		t.Fatalf("cannot remove toxic %s: %v", name, err)
	}
}

// Disable closes the listener and every connection through the proxy: the
// target is down (connections refused) until Enable.
func (p *Proxy) Disable() { p.p.Stop() }

// Enable listens again on the same address.
func (p *Proxy) Enable(t testing.TB) {
	t.Helper()
	if err := p.p.Start(); err != nil {
		t.Fatalf("cannot start the proxy again: %v", err)
	}
}
