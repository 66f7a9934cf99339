//lint:file-ignore SA1019 dashboardv2 is the schema of Grafana 12 only; these dashboards are for Grafana 10 to 12, which all read the classic one.

package mixin

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/heatmap"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// schemaVersion is the dashboard schema of Grafana 10.4 and 11.0: newer
// Grafana migrates it on load, older does not know what the panels use.
const schemaVersion = 39

// datasource is the dashboards' datasource variable.
func datasource() dashboard.DataSourceRef {
	return dashboard.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}
}

// query is one PromQL target of a panel.
type query struct {
	expr, legend string
}

func q(expr, legend string) query { return query{expr, legend} }

func targets(qs []query) []cog.Builder[variants.Dataquery] {
	var out []cog.Builder[variants.Dataquery]
	for i, x := range qs {
		out = append(out, prometheus.NewDataqueryBuilder().
			RefId(string(rune('A'+i))).
			Datasource(datasource()).
			Expr(x.expr).
			LegendFormat(x.legend))
	}
	return out
}

func legend() *common.VizLegendOptionsBuilder {
	return common.NewVizLegendOptionsBuilder().
		DisplayMode(common.LegendDisplayModeTable).
		Placement(common.LegendPlacementBottom).
		ShowLegend(true).
		Calcs([]string{"mean", "lastNotNull", "max"})
}

func tooltip() *common.VizTooltipOptionsBuilder {
	return common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending)
}

// timeSeries is a time series panel of the queries, in unit.
func timeSeries(title, desc, unit string, w uint32, qs ...query) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().
		Title(title).
		Description(desc).
		Datasource(datasource()).
		Unit(unit).
		Min(0).
		Height(8).
		Span(w).
		Legend(legend()).
		Tooltip(tooltip()).
		FillOpacity(5).
		ShowPoints(common.VisibilityModeNever)
	for _, t := range targets(qs) {
		p.WithTarget(t)
	}
	return p
}

// rightAxis puts the series whose legend matches regexp on a right axis
// in unit.
func rightAxis(p *timeseries.PanelBuilder, regexp, unit string) *timeseries.PanelBuilder {
	return p.OverrideByRegexp(regexp, []dashboard.DynamicConfigValue{
		{Id: "custom.axisPlacement", Value: "right"},
		{Id: "unit", Value: unit},
	})
}

// statPanel is a stat panel of the queries' last values.
func statPanel(title, desc, unit string, steps []dashboard.Threshold, qs ...query) *stat.PanelBuilder {
	p := stat.NewPanelBuilder().
		Title(title).
		Description(desc).
		Datasource(datasource()).
		Unit(unit).
		Height(4).
		Span(4).
		GraphMode(common.BigValueGraphModeArea).
		ColorMode(common.BigValueColorModeValue).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"}))
	if steps != nil {
		p.Thresholds(dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(steps))
	}
	for _, t := range targets(qs) {
		p.WithTarget(t)
	}
	return p
}

// heatmapPanel draws a native histogram's rate as a heatmap (Grafana reads
// the histogram buckets; nothing is computed in the browser).
func heatmapPanel(title, desc string, qs ...query) *heatmap.PanelBuilder {
	p := heatmap.NewPanelBuilder().
		Title(title).
		Description(desc).
		Datasource(datasource()).
		Height(8).
		Span(12).
		Calculate(false).
		YAxis(heatmap.NewYAxisConfigBuilder().Unit("s").AxisPlacement(common.AxisPlacementLeft)).
		Color(heatmap.NewHeatmapColorOptionsBuilder().
			Mode(heatmap.HeatmapColorModeScheme).
			Scheme("Spectral").
			Scale(heatmap.HeatmapColorScaleExponential).
			Exponent(0.5).
			Steps(64)).
		CellValues(heatmap.NewCellValuesBuilder().Unit("short")).
		Tooltip(heatmap.NewHeatmapTooltipBuilder().Mode(common.TooltipDisplayModeSingle).YHistogram(true))
	for _, t := range targets(qs) {
		p.WithTarget(t)
	}
	return p
}

// threshold steps: base color, then value → color.
func steps(base string, rest ...any) []dashboard.Threshold {
	out := []dashboard.Threshold{{Color: base}}
	for i := 0; i+1 < len(rest); i += 2 {
		v := rest[i].(float64)
		out = append(out, dashboard.Threshold{Value: &v, Color: rest[i+1].(string)})
	}
	return out
}

// variables are the datasource, job and workload variables every
// dashboard has.
func variables(b *dashboard.DashboardBuilder) *dashboard.DashboardBuilder {
	return b.
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").
			Label("Prometheus").
			Type("prometheus")).
		WithVariable(labelVariable("job", jobVariableQuery)).
		WithVariable(labelVariable("workload", workloadVariableQuery))
}

// labelVariable is a variable named and labelled name over the values
// query finds, any number of them, all by default.
func labelVariable(name, query string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(name).
		Label(name).
		Datasource(datasource()).
		Query(dashboard.StringOrMap{String: cog.ToPtr(query)}).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(true).
		IncludeAll(true).
		AllValue(".*")
}

// The variables' queries (Grafana's label_values of a PromQL selector).
const (
	jobVariableQuery      = `label_values(soakd_build_info, job)`
	workloadVariableQuery = `label_values(soakd_workers{job=~"$job"}, workload)`
)

// build finishes a dashboard: the schema version, then the model.
func build(b *dashboard.DashboardBuilder) (dashboard.Dashboard, error) {
	d, err := b.Build()
	if err != nil {
		return d, err
	}
	d.SchemaVersion = schemaVersion
	// Grafana wants a unique id per panel, rows included.
	id := uint32(0)
	for _, p := range d.Panels {
		id++
		switch {
		case p.Panel != nil:
			p.Panel.Id = cog.ToPtr(id)
		case p.RowPanel != nil:
			p.RowPanel.Id = id
			for i := range p.RowPanel.Panels {
				id++
				p.RowPanel.Panels[i].Id = cog.ToPtr(id)
			}
		}
	}
	return d, nil
}

// newDashboard starts a soakd dashboard: its title, uid and description,
// the settings every soakd dashboard shares (refresh, time range, shared
// crosshair, /control annotations) and the datasource, job and workload
// variables.
func newDashboard(title, uid, description string) *dashboard.DashboardBuilder {
	b := dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags([]string{"soakd"}).
		Editable().
		Refresh("10s").
		Time("now-1h", "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Annotation(controlAnnotation())
	return variables(b)
}
