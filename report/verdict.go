package report

// ThresholdResult is one threshold's outcome, in the summary (final) and
// in /status (so far).
type ThresholdResult struct {
	Threshold string `json:"threshold"` // as written, without spaces
	OK        bool   `json:"ok"`        // so far, while the run lasts
	// Value is what the verdict rests on, in Unit: the run phase's value;
	// for a windowed check the worst window's; for a drift check the change
	// from the early window to the latest. Null without data (see Note).
	Value *float64 `json:"value"`
	// Unit is seconds, ratio (1 = 100 %), count or units_per_second.
	Unit  string `json:"unit"`
	Abort bool   `json:"abort,omitempty"` // written with !: stops the run when it fails
	// Windows is the number of windows judged (windowed checks) or of
	// late windows compared (drift), FailedWindows how many failed.
	Windows       int `json:"windows,omitempty"`
	FailedWindows int `json:"failed_windows,omitempty"`
	// WorstWindow is the worst window of a windowed check; LatestWindow the
	// last one judged (windowed and drift); EarlyWindow a drift check's
	// early window. A drift check's windows hold the metric itself (seconds
	// for latency; for achieved the fraction of the target achieved, or
	// units/s with RATE=max), not the change: its 30th percentile over the
	// window's sub-windows (steps), the 70th for achieved.
	WorstWindow  *WindowValue `json:"worst_window,omitempty"`
	LatestWindow *WindowValue `json:"latest_window,omitempty"`
	EarlyWindow  *WindowValue `json:"early_window,omitempty"`
	// WindowUnit is the unit of a drift check's window values.
	WindowUnit string `json:"window_unit,omitempty"`
	// Note says why there is no value, when there is none.
	Note string `json:"note,omitempty"`

	// Current is soakd_threshold_value: the latest measurement.
	Current *float64 `json:"-"`
}

// WindowValue is a window of the run phase and a check's value in it.
type WindowValue struct {
	From  float64 `json:"from_seconds"` // since the run phase began
	To    float64 `json:"to_seconds"`
	Value float64 `json:"value"`
}
