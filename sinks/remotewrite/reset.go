package remotewrite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sinks/promtext"
)

var _ sinks.Resetter = (*Sink)(nil)

// deletePath is the admin endpoint that deletes series, beside
// query_path: Prometheus' (with --web.enable-admin-api) and
// VictoriaMetrics'.
func (c *Config) deletePath() string {
	return strings.TrimSuffix(c.QueryPath, "/query") + "/admin/tsdb/delete_series"
}

// Reset deletes the sink's series, for soakd sweep's resets: those of its
// schemas' metrics that carry the URL's constant labels (label=; without
// any, every series of those metric names). It takes the server's admin
// API; a server that refuses it is a configuration error, not a failure
// to wait out.
//
// Prometheus is refused: it keeps a deleted series' newest time in
// memory and refuses every sample at or before it, so the next point,
// whose data starts where the last one's did, would fail almost whole
// (as out_of_order) and be ranked among the others as if it had run.
// VictoriaMetrics takes samples at any time.
func (s *Sink) Reset(ctx context.Context) error {
	prom, err := s.isPrometheus(ctx)
	if err != nil {
		return err
	}
	if prom {
		return sinks.NewError(sinks.Rejected, false, errors.New("cannot reset Prometheus between points: it keeps each deleted series' newest time and refuses samples before it, so the next point's would fail as out_of_order; sweep it without SOAKD_SWEEP_RESET, or use a fresh Prometheus per point"))
	}
	for _, sc := range s.schemas {
		names := make([]string, len(sc.Fields))
		for f, fd := range sc.Fields {
			names[f] = regexp.QuoteMeta(MetricName(sc.Measurement, fd.Name))
		}
		match := `{__name__=~` + strconv.Quote(strings.Join(names, "|"))
		for _, l := range s.cfg.Labels {
			match += "," + l.Name + "=" + strconv.Quote(l.Value)
		}
		match += "}"
		if err := s.deleteSeries(ctx, match); err != nil {
			return err
		}
	}
	return nil
}

func (s *Sink) deleteSeries(ctx context.Context, match string) error {
	where := s.cfg.baseURL() + s.cfg.deletePath()
	resp, err := s.postForm(ctx, where, url.Values{"match[]": {match}}.Encode())
	if err != nil {
		return fmt.Errorf("cannot delete soakd's series at %s: %w", where, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil
	}
	// Prometheus answers 503 while its admin API is off: no use waiting.
	return sinks.NewError(sinks.Rejected, false, fmt.Errorf("cannot delete soakd's series at %s: HTTP %d: %s (Prometheus needs --web.enable-admin-api)",
		where, resp.StatusCode, readMessage(resp)))
}

// prometheusInfo is the metric only Prometheus itself exports among the
// servers the sink writes to.
const prometheusInfo = "prometheus_build_info"

// isPrometheus says whether the server is Prometheus, from its own
// /metrics (metrics_path); a server that refuses /metrics is taken for
// one that is not.
func (s *Sink) isPrometheus(ctx context.Context) (bool, error) {
	resp, err := s.getMetrics(ctx)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return false, nil
	}
	prom := false
	err = promtext.Scan(io.LimitReader(resp.Body, maxFigures), func(name string) bool { return name == prometheusInfo },
		func(promtext.Sample) { prom = true })
	if err != nil {
		return false, fmt.Errorf("cannot read %s of %s: %w", s.cfg.MetricsPath, s.cfg.String(), s.scanError(ctx, err))
	}
	return prom, nil
}
