package influx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/promtext"
)

var _ sinks.TargetWatcher = (*Sink)(nil)

// maxFigures bounds what TargetFigures reads of one answer: /debug/vars
// grows with the server's shards.
const maxFigures = 32 << 20

// The Prometheus metrics TargetFigures reads from /metrics, which InfluxDB
// 1.8 and 2.x (and other Go servers: VictoriaMetrics) serve.
var metricKinds = []struct{ metric, kind string }{
	{"go_memstats_heap_inuse_bytes", "heap_inuse"},
	{"go_memstats_sys_bytes", "sys"},
	{"process_resident_memory_bytes", "rss"},
}

const (
	cpuMetric   = "process_cpu_seconds_total"
	shardMetric = "storage_shard_disk_size" // InfluxDB 2.x, by bucket id
)

// bucketID is the id of the sink's bucket on InfluxDB 2.x, looked up once.
type bucketID struct {
	mu sync.Mutex
	id string
}

// TargetFigures reads the target's figures over HTTP with the sink's
// credentials, on the sink's transport:
//
//   - /metrics: memory (heap_inuse, sys, rss), CPU time, on InfluxDB
//     2.x the disk size of the shards of the sink's bucket (shard), and
//     on VictoriaMetrics the values it discarded (answered as written,
//     not stored: vm_rows_ignored_total, vm_rows_invalid_total);
//   - /debug/vars on InfluxDB 1.x (influx1:// of product influxdb, or
//     influx:// to 1.8): memory (heap_inuse, sys from memstats) and the
//     diskBytes of the shards of the sink's database (shard).
//
// An endpoint the server refuses or lacks (401, 403, 404) leaves its
// figures in Unavailable; only a target that does not answer is an
// error.
func (s *Sink) TargetFigures(ctx context.Context) (sinks.TargetFigures, error) {
	f := sinks.TargetFigures{Memory: map[string]float64{}, Storage: map[string]float64{}, Unavailable: map[string]string{}}
	m, err := s.readMetrics(ctx)
	switch {
	case err == nil:
		for _, mk := range metricKinds {
			if v, ok := m.values[mk.metric]; ok {
				f.Memory[mk.kind] = v
			}
		}
		if v, ok := m.values[cpuMetric]; ok {
			f.CPUSeconds, f.HasCPU = v, true
		} else {
			f.Unavailable["cpu"] = "/metrics has no " + cpuMetric
		}
		if len(m.discarded) > 0 {
			f.Stats = m.discarded
		}
	case refusedStatus(err):
		f.Unavailable["cpu"] = "the server refuses /metrics: " + err.Error()
		f.Unavailable["memory"] = f.Unavailable["cpu"]
	default:
		return sinks.TargetFigures{}, err
	}

	switch {
	case m.shards != nil:
		if err := s.bucketShards(ctx, m.shards, &f); err != nil {
			return sinks.TargetFigures{}, err
		}
	case s.influxDB1():
		if err := s.debugVars(ctx, &f); err != nil {
			return sinks.TargetFigures{}, err
		}
	default:
		f.Unavailable["storage"] = fmt.Sprintf("soakd reads shard sizes from InfluxDB only, not product %s", s.cfg.Product.Name)
	}
	if len(f.Memory) > 0 {
		delete(f.Unavailable, "memory")
	} else if _, ok := f.Unavailable["memory"]; !ok {
		f.Unavailable["memory"] = "neither /metrics nor /debug/vars gives the server's memory"
	}
	return f, nil
}

// influxDB1 reports whether the target may be InfluxDB 1.x: v1 with the
// influxdb product, or v2 to a server whose /metrics has no 2.x storage
// metrics (1.8's compatibility API).
func (s *Sink) influxDB1() bool {
	return s.cfg.API == V2 || s.cfg.Product.Name == "influxdb"
}

// refusedStatus reports an answer that says the endpoint is not for the
// sink (no permission, or not served): its figures are unavailable, the
// target is up.
func refusedStatus(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && (se.StatusCode == http.StatusUnauthorized || se.StatusCode == http.StatusForbidden ||
		se.StatusCode == http.StatusNotFound || se.StatusCode == http.StatusMethodNotAllowed)
}

// metrics is what readMetrics found: the values of the unlabelled
// metrics it looks for, and the shard sizes by bucket id (nil when the
// server has no storage_shard_disk_size: not InfluxDB 2.x).
type metrics struct {
	values map[string]float64
	shards map[string]float64
	// discarded is what VictoriaMetrics took but did not store
	// (sinks.AddDiscarded); nil from a server without those counts.
	discarded map[string]float64
}

func (s *Sink) readMetrics(ctx context.Context) (metrics, error) {
	resp, err := s.doWithin(ctx, 0, http.MethodGet, "/metrics", "", nil)
	if err != nil {
		return metrics{}, fmt.Errorf("cannot read /metrics of %s: %w", s.cfg.String(), err)
	}
	defer resp.Body.Close()
	m, err := parseMetrics(io.LimitReader(resp.Body, maxFigures))
	if err != nil {
		return metrics{}, sinks.ClassifyHTTPTransport(ctx, fmt.Errorf("cannot read /metrics of %s: %w", s.cfg.String(), err), true)
	}
	return m, nil
}

// parseMetrics reads the Prometheus text format for the metrics of
// metricKinds, cpuMetric and shardMetric; it skips everything else.
func parseMetrics(r io.Reader) (metrics, error) {
	m := metrics{values: map[string]float64{}}
	wanted := map[string]bool{cpuMetric: true, shardMetric: true}
	for _, mk := range metricKinds {
		wanted[mk.metric] = true
	}
	err := promtext.Scan(r, func(name string) bool { return wanted[name] || sinks.IsDiscardedMetric(name) }, func(s promtext.Sample) {
		if sinks.IsDiscardedMetric(s.Name) {
			if m.discarded == nil {
				m.discarded = map[string]float64{}
			}
			sinks.AddDiscarded(m.discarded, s.Name, s.Labels, s.Value)
			return
		}
		if s.Name == shardMetric {
			if m.shards == nil {
				m.shards = map[string]float64{}
			}
			m.shards[s.Labels["bucket"]] += s.Value
			return
		}
		m.values[s.Name] = s.Value
	})
	return m, err
}

// bucketShards sets the shard figure of InfluxDB 2.x: the disk size of
// the shards of the sink's bucket, whose id it looks up once.
func (s *Sink) bucketShards(ctx context.Context, shards map[string]float64, f *sinks.TargetFigures) error {
	s.bucket.mu.Lock()
	id := s.bucket.id
	s.bucket.mu.Unlock()
	if id == "" {
		q := url.Values{"name": {s.cfg.Bucket}}
		if s.cfg.Org != "" {
			q.Set("org", s.cfg.Org)
		}
		var buckets struct {
			Buckets []struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"buckets"`
		}
		if err := s.getJSON(ctx, "/api/v2/buckets?"+q.Encode(), &buckets); err != nil {
			if refusedStatus(err) {
				f.Unavailable["storage"] = fmt.Sprintf("the server refuses to look up bucket %q: %v", s.cfg.Bucket, err)
				return nil
			}
			return fmt.Errorf("cannot look up bucket %q: %w", s.cfg.Bucket, err)
		}
		for _, b := range buckets.Buckets {
			if b.Name == s.cfg.Bucket {
				id = b.ID
			}
		}
		if id == "" {
			f.Unavailable["storage"] = fmt.Sprintf("bucket %q not found (not created yet?)", s.cfg.Bucket)
			return nil
		}
		s.bucket.mu.Lock()
		s.bucket.id = id
		s.bucket.mu.Unlock()
	}
	f.Storage["shard"] = shards[id] // 0 until the bucket has a shard
	return nil
}

// debugVars reads InfluxDB 1.x's /debug/vars: memstats' HeapInuse and
// Sys, and the diskBytes (TSM files and WAL) of the shards of the sink's
// database (and retention policy, when the sink names one).
func (s *Sink) debugVars(ctx context.Context, f *sinks.TargetFigures) error {
	db, rp := s.cfg.DB, s.cfg.RP
	if s.cfg.API == V2 {
		db, rp, _ = strings.Cut(s.cfg.Bucket, "/")
	}
	resp, err := s.doWithin(ctx, 0, http.MethodGet, "/debug/vars", "", nil)
	if err != nil {
		if refusedStatus(err) {
			f.Unavailable["storage"] = "the server refuses /debug/vars: " + err.Error()
			return nil
		}
		return fmt.Errorf("cannot read /debug/vars of %s: %w", s.cfg.String(), err)
	}
	defer resp.Body.Close()
	var vars map[string]json.RawMessage
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxFigures)).Decode(&vars); err != nil {
		return sinks.ClassifyHTTPTransport(ctx, fmt.Errorf("cannot read /debug/vars of %s: %w", s.cfg.String(), err), true)
	}
	var mem struct {
		HeapInuse, Sys *float64
	}
	if raw, ok := vars["memstats"]; ok && json.Unmarshal(raw, &mem) == nil {
		if mem.HeapInuse != nil {
			f.Memory["heap_inuse"] = *mem.HeapInuse
		}
		if mem.Sys != nil {
			f.Memory["sys"] = *mem.Sys
		}
	}
	shard := 0.0
	for key, raw := range vars {
		if !strings.HasPrefix(key, "shard:") {
			continue
		}
		var st struct {
			Name   string            `json:"name"`
			Tags   map[string]string `json:"tags"`
			Values struct {
				DiskBytes float64 `json:"diskBytes"`
			} `json:"values"`
		}
		if json.Unmarshal(raw, &st) != nil || st.Name != "shard" {
			continue
		}
		if st.Tags["database"] == db && (rp == "" || st.Tags["retentionPolicy"] == rp) {
			shard += st.Values.DiskBytes
		}
	}
	f.Storage["shard"] = shard // 0 until the database has a shard
	return nil
}
