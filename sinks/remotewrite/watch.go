package remotewrite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/promtext"
)

var (
	_ sinks.TargetWatcher = (*Sink)(nil)
	_ sinks.Versioner     = (*Sink)(nil)
)

// maxFigures bounds what TargetFigures reads of /metrics.
const maxFigures = 32 << 20

const cpuMetric = "process_cpu_seconds_total"

// memoryMetrics are the memory figures every Go server's /metrics has.
var memoryMetrics = map[string]string{
	"process_resident_memory_bytes": "rss",
	"go_memstats_heap_inuse_bytes":  "heap_inuse",
}

// storageMetrics are Prometheus' TSDB sizes on disk: its persisted
// blocks, and where the version exports them its write-ahead log and the
// head's memory-mapped chunks.
var storageMetrics = map[string]string{
	"prometheus_tsdb_storage_blocks_bytes":           "blocks",
	"prometheus_tsdb_wal_storage_size_bytes":         "wal",
	"prometheus_tsdb_head_chunks_storage_size_bytes": "head_chunks",
}

// vmDataSize is VictoriaMetrics' size of its data by type
// (storage/small, storage/big, indexdb/file, ...): soakd adds the
// storage/ types up as data, the indexdb/ ones as index.
const vmDataSize = "vm_data_size_bytes"

// The servers' active series: Prometheus' series in its head block (those
// written to in the last hour or so, up to three), and VictoriaMetrics'
// series that have a sample stamped in the current hour (the entries of
// its cache of them, which its own dashboards show as active series).
const (
	promHeadSeries = "prometheus_tsdb_head_series"
	vmCacheEntries = "vm_cache_entries"
	vmHourSeries   = "storage/hour_metric_ids"
)

// TargetFigures reads the server's own /metrics (metrics_path) with the
// sink's credentials and headers: memory (rss, heap_inuse), CPU time,
// the active series, the values VictoriaMetrics discarded (answered as
// written, not stored; by reason too), and the storage of the whole server — Prometheus' blocks (and wal and
// head_chunks where it exports them), or VictoriaMetrics' data and
// index. A server that refuses
// /metrics (401, 403, 404) leaves every figure in Unavailable; only a
// target that does not answer is an error.
func (s *Sink) TargetFigures(ctx context.Context) (sinks.TargetFigures, error) {
	f := sinks.TargetFigures{Memory: map[string]float64{}, Storage: map[string]float64{}, Stats: map[string]float64{},
		Unavailable: map[string]string{}}
	resp, err := s.getMetrics(ctx)
	if err != nil {
		return sinks.TargetFigures{}, err
	}
	defer resp.Body.Close()
	switch code := resp.StatusCode; {
	case code == http.StatusUnauthorized || code == http.StatusForbidden || code == http.StatusNotFound || code == http.StatusMethodNotAllowed:
		why := fmt.Sprintf("the server refuses %s: HTTP %d", s.cfg.MetricsPath, code)
		for _, fig := range []string{"memory", "storage", "cpu", sinks.StatActiveSeries} {
			f.Unavailable[fig] = why
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return f, nil
	case code/100 != 2:
		return sinks.TargetFigures{}, fmt.Errorf("cannot read %s of %s: %w", s.cfg.MetricsPath, s.cfg.String(),
			classifyStatus(code, resp.Header, readMessage(resp), 0, true))
	}
	vm := false
	err = promtext.Scan(io.LimitReader(resp.Body, maxFigures), func(name string) bool {
		return name == cpuMetric || name == vmDataSize || name == promHeadSeries || name == vmCacheEntries || sinks.IsDiscardedMetric(name) ||
			memoryMetrics[name] != "" || storageMetrics[name] != ""
	}, func(m promtext.Sample) {
		switch {
		case m.Name == promHeadSeries:
			f.Stats[sinks.StatActiveSeries] = m.Value
		case sinks.IsDiscardedMetric(m.Name):
			sinks.AddDiscarded(f.Stats, m.Name, m.Labels, m.Value)
		case m.Name == vmCacheEntries:
			if m.Labels["type"] == vmHourSeries {
				f.Stats[sinks.StatActiveSeries] = m.Value
			}
		case m.Name == cpuMetric:
			f.CPUSeconds, f.HasCPU = m.Value, true
		case memoryMetrics[m.Name] != "":
			f.Memory[memoryMetrics[m.Name]] = m.Value
		case storageMetrics[m.Name] != "":
			f.Storage[storageMetrics[m.Name]] += m.Value
		case m.Name == vmDataSize:
			vm = true
			switch typ := m.Labels["type"]; {
			case strings.HasPrefix(typ, "storage/"):
				f.Storage["data"] += m.Value
			case strings.HasPrefix(typ, "indexdb/"):
				f.Storage["index"] += m.Value
			}
		}
	})
	if err != nil {
		return sinks.TargetFigures{}, fmt.Errorf("cannot read %s of %s: %w", s.cfg.MetricsPath, s.cfg.String(), s.scanError(ctx, err))
	}
	if _, prom := f.Storage["blocks"]; prom {
		if _, ok := f.Storage["wal"]; !ok {
			// Prometheus 2.42 exports no size of its write-ahead log: the
			// samples not yet compacted into a block are in no storage
			// figure (the head's memory is in rss).
			f.Unavailable["storage.wal"] = s.cfg.MetricsPath + " has no prometheus_tsdb_wal_storage_size_bytes"
		}
	}
	if vm && len(f.Storage) == 0 {
		f.Storage["data"] = 0 // nothing stored yet
	}
	if !f.HasCPU {
		f.Unavailable["cpu"] = s.cfg.MetricsPath + " has no " + cpuMetric
	}
	if _, ok := f.Stats[sinks.StatActiveSeries]; !ok {
		f.Unavailable[sinks.StatActiveSeries] = fmt.Sprintf("%s has neither Prometheus' %s nor VictoriaMetrics' %s{type=%q}",
			s.cfg.MetricsPath, promHeadSeries, vmCacheEntries, vmHourSeries)
	}
	if len(f.Memory) == 0 {
		f.Unavailable["memory"] = s.cfg.MetricsPath + " has neither process_resident_memory_bytes nor go_memstats_heap_inuse_bytes"
	}
	if len(f.Storage) == 0 {
		f.Unavailable["storage"] = s.cfg.MetricsPath + " has neither Prometheus' prometheus_tsdb_* sizes nor VictoriaMetrics' " + vmDataSize
	}
	return f, nil
}

// vmVersion is VictoriaMetrics' version metric (labels version and
// short_version).
const vmVersion = "vm_app_version"

// ServerVersion is the server's product and version from its own
// /metrics (metrics_path), for reports: VictoriaMetrics' vm_app_version
// ("VictoriaMetrics v1.151.0", or "VictoriaMetrics" from a build that
// set no version), Prometheus' prometheus_build_info
// ("Prometheus 2.42.0"), or another server's NAME_build_info ("mimir
// 2.10.0"; go_build_info, the Go module's, aside).
func (s *Sink) ServerVersion(ctx context.Context) (string, error) {
	resp, err := s.getMetrics(ctx)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("cannot read %s of %s: %w", s.cfg.MetricsPath, s.cfg.String(),
			classifyStatus(resp.StatusCode, resp.Header, readMessage(resp), 0, true))
	}
	version := ""
	err = promtext.Scan(io.LimitReader(resp.Body, maxFigures), func(name string) bool {
		return name == vmVersion || strings.HasSuffix(name, "_build_info") && name != "go_build_info"
	}, func(m promtext.Sample) {
		v := m.Labels["version"]
		if version != "" {
			return
		}
		switch m.Name {
		case vmVersion:
			// A VictoriaMetrics built with go install has no version
			// (its releases set it when they build): the product alone.
			if sv := m.Labels["short_version"]; sv != "" {
				v = sv
			}
			version = strings.TrimSpace("VictoriaMetrics " + v)
		case "prometheus_build_info":
			version = strings.TrimSpace("Prometheus " + v)
		default:
			if v != "" {
				version = strings.TrimSuffix(m.Name, "_build_info") + " " + v
			}
		}
	})
	if err != nil {
		return "", fmt.Errorf("cannot read %s of %s: %w", s.cfg.MetricsPath, s.cfg.String(), s.scanError(ctx, err))
	}
	if version == "" {
		return "", fmt.Errorf("%s of %s has no %s or *_build_info with a version label", s.cfg.MetricsPath, s.cfg.String(), vmVersion)
	}
	return version, nil
}

// getMetrics asks for the server's own /metrics (metrics_path) with the
// sink's credentials and headers.
func (s *Sink) getMetrics(ctx context.Context) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.cfg.baseURL()+s.cfg.MetricsPath, nil)
	if err != nil {
		return nil, sinks.NewError(sinks.Other, false, err)
	}
	s.commonHeaders(req.Header)
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s of %s: %w", s.cfg.MetricsPath, s.cfg.String(), sinks.ClassifyHTTPTransport(ctx, err, true))
	}
	return resp, nil
}

// scanError classes an error met reading /metrics: the connection failing
// mid-answer is the transport's; a line that does not parse is the
// server's answer, not a connection error.
func (s *Sink) scanError(ctx context.Context, err error) error {
	var ne net.Error
	if ctx.Err() != nil || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) {
		return sinks.ClassifyHTTPTransport(ctx, err, true)
	}
	return sinks.NewError(sinks.Other, false, err)
}
