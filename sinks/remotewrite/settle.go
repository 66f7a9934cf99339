package remotewrite

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/soakd/soakd/sinks"
)

var _ sinks.Settler = (*Sink)(nil)

// vmFlushPath makes VictoriaMetrics (single-node) flush the rows it holds
// in memory, so that queries see them at once rather than at its next
// flush (-inmemoryDataFlushInterval, 5 s by default).
const vmFlushPath = "/internal/force_flush"

// Settle makes the rows VictoriaMetrics acknowledged searchable now; other
// servers (Prometheus reads its head at once) are left as they are.
func (s *Sink) Settle(ctx context.Context) error {
	v, err := s.ServerVersion(ctx)
	if err != nil || !strings.HasPrefix(v, "VictoriaMetrics") {
		return nil // not VictoriaMetrics, or a server that does not say
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.cfg.baseURL()+vmFlushPath, nil)
	if err != nil {
		return err
	}
	s.commonHeaders(req.Header)
	resp, err := s.hc.Do(req)
	if err != nil {
		return fmt.Errorf("cannot flush %s's newest rows (%s): %w", s.cfg.String(), vmFlushPath, sinks.ClassifyHTTPTransport(ctx, err, true))
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("cannot flush %s's newest rows: %s answered HTTP %d (a cluster, or -forceFlushAuthKey)", s.cfg.String(), vmFlushPath, resp.StatusCode)
	}
	return nil
}
