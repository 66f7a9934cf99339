package remotewrite

import (
	"cmp"
	"slices"

	"github.com/soakd/soakd/sources"
)

// rowOrder is the order in which a table's rows are encoded: by time,
// rows of the same time in the table's order. A device's late reading
// (OUT_OF_ORDER, an offline device's backfill) can follow a newer row of
// the device in the same batch; sent in that order, Prometheus appends
// both, then drops the older sample when it commits the request and still
// answers 204: an acknowledged row lost without a word. Sent in time
// order, each series' samples are in order within the request, and a
// sample older than what the series holds is refused (400, counted as
// out_of_order) instead. A table already in time order, the common case,
// is not sorted. order is reused scratch.
func rowOrder(t *sources.Table, order []int32) []int32 {
	n := t.Len()
	order = order[:0]
	for i := range n {
		order = append(order, int32(i))
	}
	if slices.IsSorted(t.Time[:n]) {
		return order
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(t.Time[a], t.Time[b]) })
	return order
}
