//lint:file-ignore SA1019 dashboardv2 is the schema of Grafana 12 only; these dashboards are for Grafana 10 to 12, which all read the classic one.

package mixin

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/xychart"
)

// Capacity is capacity.json: a rate ramp or a capacity search, where the
// offered (target) rate steps up and the question is where the target
// stops keeping up. It is built from the metrics every run exports: the
// offered rate is soakd_target_rate, so p99 can be drawn against it.
func Capacity() (dashboard.Dashboard, error) {
	s := panelScope
	b := newDashboard("soakd: capacity", "soakd-capacity",
		"A soakd ramp or capacity search: achieved against offered rate per step, and latency against the offered rate.")

	b.WithRow(dashboard.NewRowBuilder("Steps"))
	b.WithPanel(timeSeries("Target vs achieved per step",
		"The offered (target) rate steps up; achieved follows it while the target keeps up. Summed over shards.",
		"short", 12,
		q(s.target(), "{{workload}} target"),
		q(s.achieved(), "{{workload}} achieved")))
	b.WithPanel(timeSeries("Achieved / target",
		"Where this falls below 1 the target no longer keeps up with the offered rate.",
		"percentunit", 12,
		q(fmt.Sprintf("(%s) / (%s > 0)", s.achieved(), s.target()), "{{workload}}")))
	b.WithPanel(timeSeries("Error ratio and drops",
		"Share of batches or operations that failed for good, and scheduled units dropped per second: a step that breaks an error SLO shows here.",
		"percentunit", 24,
		q(s.errorRatio(), "{{workload}} error ratio"),
		q(s.rate("soakd_dropped_total"), "{{workload}} dropped/s")).
		OverrideByRegexp("dropped/s$", []dashboard.DynamicConfigValue{
			{Id: "custom.axisPlacement", Value: "right"}, {Id: "unit", Value: "short"}}))

	b.WithRow(dashboard.NewRowBuilder("Capacity search (soakd capacity)"))
	b.WithPanel(statPanel("Knee found so far",
		"The highest rate whose step met the SLO; 0 while none has. soakd capacity's report says which SLO each failing step broke.",
		"short", nil,
		q(fmt.Sprintf("max by (%s) (%s)", s.by, s.vec("soakd_capacity_knee_rate")), "{{workload}}")))
	b.WithPanel(timeSeries("Search step and knee",
		"The index of the step running (right) and the knee found so far (left), against the offered rate.",
		"short", 18,
		q(fmt.Sprintf("max by (%s) (%s)", s.by, s.vec("soakd_capacity_knee_rate")), "{{workload}} knee"),
		q(s.target(), "{{workload}} offered rate"),
		q(fmt.Sprintf("max by (%s) (%s)", s.by, s.vec("soakd_capacity_step")), "{{workload}} step")).
		OverrideByRegexp("step$", []dashboard.DynamicConfigValue{
			{Id: "custom.axisPlacement", Value: "right"}, {Id: "unit", Value: "none"}}))

	b.WithRow(dashboard.NewRowBuilder("Latency against the offered rate: $workload").Repeat("workload"))
	b.WithPanel(p99VsRate(s))
	b.WithPanel(rightAxis(timeSeries("p99 response and offered rate ($workload)",
		"The same over time: the 99th percentile of the response latency (left) and the offered rate (right).",
		"s", 12,
		q(s.quantile(0.99, "soakd_response_seconds"), "p99 response"),
		q(s.target(), "offered rate")), "offered rate", "short"))
	return build(b)
}

// p99VsRate is an XY chart of the response p99 (y) against the offered
// rate (x), one point per scrape, for one workload (the row repeats per
// workload): the latency curve whose bend is the knee.
func p99VsRate(s scope) *xychart.PanelBuilder {
	p := xychart.NewPanelBuilder().
		Title("p99 response vs offered rate ($workload)").
		Description("Each point is one moment of the run: the offered (target) rate against the 99th percentile of the response latency.").
		Datasource(datasource()).
		Height(10).
		Span(12).
		Unit("s").
		Mapping(xychart.SeriesMappingAuto).
		Show(xychart.XYShowModePoints).
		PointSize(xychart.NewXychartFieldConfigPointSizeBuilder().Fixed(4)).
		Legend(common.NewVizLegendOptionsBuilder().DisplayMode(common.LegendDisplayModeList).Placement(common.LegendPlacementBottom).ShowLegend(true)).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeSingle)).
		// The first number field is x: the queries' two series are joined
		// on time into one frame, offered rate first.
		WithTransformation(dashboard.DataTransformerConfig{Id: "joinByField", Options: map[string]any{"byField": "Time", "mode": "outer"}})
	for _, t := range targets([]query{
		q(s.target(), "offered rate"),
		q(s.quantile(0.99, "soakd_response_seconds"), "p99 response"),
	}) {
		p.WithTarget(t)
	}
	return p
}
