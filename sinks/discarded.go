package sinks

// VictoriaMetrics' counts of what it answered as written but did not
// store: samples it ignored, by reason (small_timestamp, big_timestamp:
// outside its retention; too_many_labels, too_long_label_value, ...), and
// lines it could not parse, by type of input (a request sent to the
// wrong path is answered 204 and counted here).
const (
	vmIgnored = "vm_rows_ignored_total"
	vmInvalid = "vm_rows_invalid_total"
)

// IsDiscardedMetric reports whether a /metrics family is one that
// AddDiscarded reads.
func IsDiscardedMetric(name string) bool { return name == vmIgnored || name == vmInvalid }

// AddDiscarded adds a sample of a family IsDiscardedMetric accepts to
// stats: to StatDiscarded, and to StatDiscarded.REASON, the reason being
// the sample's reason label, or "invalid_" and its type label.
func AddDiscarded(stats map[string]float64, name string, labels map[string]string, v float64) {
	reason := labels["reason"]
	if name == vmInvalid {
		reason = "invalid_" + labels["type"]
	}
	stats[StatDiscarded] += v
	stats[StatDiscarded+"."+reason] += v
}
