package daemon

import (
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sources"
)

// opsFor lists the op slots a workload of kind k reports: write for
// series, every KV op, and for queries the types src issues (every type
// when it does not say).
func opsFor(k sources.Kind, src sources.Source) []int {
	switch k {
	case sources.Series:
		return []int{writeOp}
	case sources.Queries:
		var out []int
		if qs, ok := src.(interface{ QueryTypes() []sources.QueryType }); ok {
			for _, t := range qs.QueryTypes() {
				if t < sources.NumQueryTypes {
					out = append(out, queryOp0+int(t))
				}
			}
		}
		if len(out) == 0 {
			for t := range int(sources.NumQueryTypes) {
				out = append(out, queryOp0+t)
			}
		}
		return out
	}
	out := make([]int, sources.NumOps)
	for i := range out {
		out[i] = i
	}
	return out
}

// latTotals are one op's latency buckets summed over phases.
type latTotals struct{ response, service report.Buckets }

// totals sums every phase's counts and latency buckets, each phase read
// in one snapshot so histogram counts agree with the op counts.
//
// Only the ops recorded get buckets (lat[op] is nil for the others): the
// history asks every second, and a whole array of every op slot's
// buckets, over 100 KB, would be a fresh large allocation each time.
func (w *workload) totals() (counts, *[opSlots]*latTotals, *report.Buckets) {
	var c counts
	lat := new([opSlots]*latTotals)
	disp := new(report.Buckets)
	for _, ps := range w.allPhases() {
		pc := ps.snapshotThen(func(h *phaseHist) {
			for op, oh := range h.ops {
				if oh != nil {
					if lat[op] == nil {
						lat[op] = new(latTotals)
					}
					lat[op].response.Add(&oh.response.prom)
					lat[op].service.Add(&oh.service.prom)
				}
			}
			if h.dispatch != nil {
				disp.Add(&h.dispatch.prom)
			}
		})
		c.add(&pc)
	}
	return c, lat, disp
}
