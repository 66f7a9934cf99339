package remotewrite

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Query workloads (sources.Queries): each query of a batch is rendered as
// PromQL (promql.go) and POSTed to query_path (instant queries) or the
// query_range endpoint beside it (range queries). A row of the answer is
// one point of a group (a host, or every host together) at one time, the
// fields' series at that time together, as SQL's row holds the fields
// side by side: for a query of one field, series × points. Windows lie
// in the data's time range, which a RangeWatch reads from the samples of
// the first device's first metric.

var _ sinks.Querier = (*Sink)(nil)

// rangeRefresh is how often a query sink reads the data's time range.
const rangeRefresh = time.Second

// maxQueryBody bounds the answer read for one query.
const maxQueryBody = 256 << 20

// querier is a sink's state for query workloads.
type querier struct {
	cpu    *sources.Schema
	labels []Label
	// queryPath and rangePath are the instant- and range-query
	// endpoints (query_path, and query_range beside it).
	queryPath, rangePath string
	// rangeSel is the selector whose samples gave the data's range (the
	// first device's, else every device's), once known.
	rangeSel atomic.Pointer[string]
}

// rangePath is the range-query endpoint beside query_path.
func (c *Config) rangePath() string {
	return strings.TrimSuffix(c.QueryPath, "/query") + "/query_range"
}

func (s *Sink) newQuerier(schemas []*sources.Schema, churn *sources.QueryChurn) error {
	tt := sinks.FindTSBSTables(schemas, func(sc *sources.Schema) string { return sc.Measurement })
	if tt.CPU == nil || len(tt.CPU.Fields) == 0 || tt.CPU.DeviceTag >= len(tt.CPU.TagKeys) {
		return errors.New("query workloads on remote-write targets read TSBS's devops measurement cpu: the source has none")
	}
	q := &querier{cpu: tt.CPU, labels: s.cfg.Labels, queryPath: s.cfg.QueryPath, rangePath: s.cfg.rangePath()}
	fetch := s.dataRange
	if churn != nil {
		fetch = sinks.ChurnRange(churn, s.deviceRange, func(ctx context.Context) (sources.DataRange, error) {
			return s.findRange(ctx, q.metric()+"{"+q.matchers("")+"}", horizon())
		})
	}
	s.OpenQueries(sinks.NewRangeWatch(rangeRefresh, s.orNoLabels(q, fetch)), q.render)
	s.SetDataPlace(s.log, fmt.Sprintf("the series of %s{%s} at %s (the target URL's label= and query_path=)", q.metric(), q.matchers(""), s.cfg.baseURL()+s.cfg.QueryPath))
	s.q = q
	return nil
}

// render writes qq as the sink sends it: the endpoint's path, "?", and
// the form POSTed to it.
func (q *querier) render(b *strings.Builder, qq *sources.Query, rng sources.DataRange) error {
	r, err := q.build(qq, rng)
	if err != nil {
		return err
	}
	b.WriteString(q.path(r))
	b.WriteByte('?')
	b.WriteString(r.form())
	return nil
}

func (q *querier) path(r *request) string {
	if r.rangeQuery {
		return q.rangePath
	}
	return q.queryPath
}

// answer is a PromQL answer: a vector's series have Value, a matrix's
// Values.
type answer struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  []any             `json:"value"`
			Values [][]any           `json:"values"`
		} `json:"result"`
	} `json:"data"`
}

// ask POSTs form to path (query_path when empty) and decodes the
// answer. It returns the bytes sent.
func (s *Sink) ask(ctx context.Context, path, form string, out *answer) (int, error) {
	if path == "" {
		path = s.cfg.QueryPath
	}
	where := s.cfg.baseURL() + path
	resp, err := s.postForm(ctx, where, form)
	if err != nil {
		return len(form), fmt.Errorf("cannot query %s: %w", where, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusUnprocessableEntity {
		return len(form), fmt.Errorf("cannot query %s: %w", where, classifyStatus(resp.StatusCode, resp.Header, readMessage(resp), 0, true))
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxQueryBody)).Decode(out); err != nil {
		return len(form), sinks.NewError(sinks.Other, true, fmt.Errorf("cannot read the answer of %s: %w", where, err))
	}
	if out.Status != "success" {
		class := sinks.Rejected
		if out.ErrorType == "timeout" || strings.Contains(out.Error, "timeout") {
			class = sinks.Timeout
		}
		return len(form), sinks.NewError(class, class == sinks.Timeout, fmt.Errorf("PromQL error from %s (HTTP %d): %s: %s", where, resp.StatusCode, out.ErrorType, out.Error))
	}
	return len(form), nil
}

// pingQuery asks query_path for vector(1): a query workload's target is
// ready when it answers PromQL, whether or not it takes writes.
func (s *Sink) pingQuery(ctx context.Context) error {
	var a answer
	_, err := s.ask(ctx, "", "query=vector%281%29", &a)
	return err
}

// send runs a rendered query (render's text).
func (s *Sink) send(ctx context.Context, text string, out *answer) (int, error) {
	path, form, _ := strings.Cut(text, "?")
	return s.ask(ctx, path, form, out)
}

// writeQueries runs the queries of b one after the other and sets each
// one's Rows. It returns the bytes of the requests' bodies.
func (s *Sink) writeQueries(ctx context.Context, b *sources.Batch) (int, error) {
	return s.RunBatch(ctx, b, func(qq *sources.Query, rng sources.DataRange, text string) (int, int64, error) {
		var a answer
		n, err := s.send(ctx, text, &a)
		if err != nil {
			return n, 0, fmt.Errorf("query %s: %w", qq.Type, err)
		}
		r, err := s.q.build(qq, rng)
		if err != nil {
			return n, 0, sinks.NewError(sinks.Rejected, false, err)
		}
		res, err := s.q.collect(r, &a)
		if err != nil {
			return n, 0, sinks.NewError(sinks.Other, false, fmt.Errorf("query %s: %w", qq.Type, err))
		}
		return n, int64(len(res.Rows)), nil
	})
}

// QueryRows runs qq alone and returns what it returned in the common
// form (for tests that compare targets).
func (s *Sink) QueryRows(ctx context.Context, qq *sources.Query) (*sinks.QueryResult, error) {
	rng, err := s.QueryRange()
	if err != nil {
		return nil, err
	}
	rq := qq.Resolved(rng)
	r, err := s.q.build(&rq, rng)
	if err != nil {
		return nil, err
	}
	var a answer
	if _, err := s.ask(ctx, s.q.path(r), r.form(), &a); err != nil {
		return nil, err
	}
	res, err := s.q.collect(r, &a)
	if err != nil {
		return nil, err
	}
	qq.Rows = int64(len(res.Rows))
	return res, nil
}

// point is one row being gathered: a group's fields at one time.
type point struct {
	key    string
	labels map[string]string
	ms     int64
	vals   map[string]float64
}

// collect puts the fields of a group at one time together into a row:
// the group's labels, the bucket's start (range queries), then a column
// per field. Rows are sorted by time, then group.
func (q *querier) collect(r *request, a *answer) (*sinks.QueryResult, error) {
	var fields []string
	for _, f := range q.cpu.Fields {
		fields = append(fields, f.Name)
	}
	points := map[string]*point{}
	labelSet := map[string]bool{}
	seenField := map[string]bool{}
	for _, ser := range a.Data.Result {
		field := ser.Metric[fieldLabel]
		seenField[field] = true
		labels := map[string]string{}
		for k, v := range ser.Metric {
			if k == fieldLabel || k == "__name__" || q.constant(k) {
				continue
			}
			if r.group != nil && !slices.Contains(r.group, k) {
				continue
			}
			labels[k] = v
			labelSet[k] = true
		}
		key := labelKey(labels)
		vals := ser.Values
		if ser.Value != nil {
			vals = [][]any{ser.Value}
		}
		for _, v := range vals {
			if len(v) != 2 {
				return nil, fmt.Errorf("a point of the answer is %v", v)
			}
			sec, ok1 := v[0].(float64)
			str, ok2 := v[1].(string)
			if !ok1 || !ok2 {
				return nil, fmt.Errorf("a point of the answer is %v", v)
			}
			x, err := strconv.ParseFloat(str, 64)
			if err != nil {
				return nil, fmt.Errorf("a value of the answer is %q: %w", str, err)
			}
			ms := int64(math.Round(sec * 1000))
			if r.rangeQuery {
				ms = ms + 1 - r.bucket // the bucket's start
			}
			k := key + "@" + strconv.FormatInt(ms, 10)
			p := points[k]
			if p == nil {
				p = &point{key: key, labels: labels, ms: ms, vals: map[string]float64{}}
				points[k] = p
			}
			p.vals[field] = x
		}
	}
	sorted := make([]*point, 0, len(points))
	for _, p := range points {
		sorted = append(sorted, p)
	}
	slices.SortFunc(sorted, func(a, b *point) int { return cmp.Or(cmp.Compare(a.ms, b.ms), strings.Compare(a.key, b.key)) })
	if r.limit > 0 && len(sorted) > r.limit {
		sorted = sorted[len(sorted)-r.limit:]
	}
	if r.limit > 0 {
		slices.Reverse(sorted) // newest first, as ORDER BY ... DESC
	}
	res := &sinks.QueryResult{}
	keys := r.group
	if r.byLabels {
		keys = slices.Sorted(func(yield func(string) bool) {
			for k := range labelSet {
				if !yield(k) {
					return
				}
			}
		})
	}
	res.Columns = append(res.Columns, keys...)
	if r.rangeQuery {
		res.Columns = append(res.Columns, "time")
	}
	var cols []string
	for _, f := range fields {
		if seenField[f] {
			cols = append(cols, f)
		}
	}
	for _, f := range cols {
		name := f
		if r.prefix != "" {
			name = r.prefix + "_" + f
		}
		res.Columns = append(res.Columns, name)
	}
	for _, p := range sorted {
		row := make([]any, 0, len(res.Columns))
		for _, k := range keys {
			if v, ok := p.labels[k]; ok && v != "" {
				row = append(row, v)
			} else {
				row = append(row, nil)
			}
		}
		if r.rangeQuery {
			row = append(row, time.UnixMilli(p.ms).UTC())
		}
		for _, f := range cols {
			if v, ok := p.vals[f]; ok {
				row = append(row, v)
			} else {
				row = append(row, nil)
			}
		}
		res.Rows = append(res.Rows, row)
	}
	return res, nil
}

// constant reports whether label k is one of the URL's constant labels.
func (q *querier) constant(k string) bool {
	for _, l := range q.labels {
		if l.Name == k {
			return true
		}
	}
	return false
}

// dataRange reads the time of the oldest and newest sample of the cpu
// table's first metric for the first device, or for every device when it
// has none. Known, it keeps the oldest time and reads the samples after
// the newest; unknown, it narrows both down to the hour with
// count_over_time over halved ranges, then reads that hour's samples.
func (s *Sink) dataRange(ctx context.Context) (sources.DataRange, error) {
	prev := s.DataRange()
	cpu := s.q.cpu
	metric := MetricName(cpu.Measurement, cpu.Fields[0].Name)
	dev := LabelName(cpu.TagKeys[cpu.DeviceTag]) + "=" + strconv.Quote(string(cpu.Tags.AppendTag(nil, 0, cpu.DeviceTag)))
	horizon := time.Now().AddDate(maxReadYears, 0, 0).UnixMilli()
	if sel := s.q.rangeSel.Load(); prev.Known && sel != nil {
		_, hi, ok, err := s.samples(ctx, *sel, prev.Newest/1e6, horizon)
		if err != nil {
			return prev, err
		}
		if ok && hi*1e6 > prev.Newest {
			prev.Newest = hi * 1e6
		}
		return prev, nil
	}
	for _, extra := range []string{dev, ""} {
		sel := metric + "{" + s.q.matchers(extra) + "}"
		r, err := s.findRange(ctx, sel, horizon)
		if err != nil || r.Known {
			if r.Known {
				s.q.rangeSel.Store(&sel)
			}
			return r, err
		}
	}
	return sources.DataRange{}, nil
}

// metric is the name of the cpu table's first metric, whose samples give
// the data's range.
func (q *querier) metric() string { return MetricName(q.cpu.Measurement, q.cpu.Fields[0].Name) }

// horizon is the newest time a range read looks at.
func horizon() int64 { return time.Now().AddDate(maxReadYears, 0, 0).UnixMilli() }

// deviceRange reads the range of device d's samples of the cpu table's
// first metric: all of it when after is 0, else only the newest sample
// after after (the oldest is then after's).
func (s *Sink) deviceRange(ctx context.Context, d uint32, after int64) (sources.DataRange, error) {
	cpu := s.q.cpu
	sel := s.q.metric() + "{" + s.q.matchers(LabelName(cpu.TagKeys[cpu.DeviceTag])+"="+strconv.Quote(string(cpu.Tags.AppendTag(nil, d, cpu.DeviceTag)))) + "}"
	if after <= 0 {
		return s.findRange(ctx, sel, horizon())
	}
	_, hi, ok, err := s.samples(ctx, sel, after/1e6, horizon())
	if err != nil || !ok {
		return sources.DataRange{}, err
	}
	return sources.DataRange{Oldest: after, Newest: hi * 1e6, Known: true}, nil
}

// hasSamples reports whether sel has a sample in (from, to] (ms).
func (s *Sink) hasSamples(ctx context.Context, sel string, from, to int64) (bool, error) {
	var a answer
	form := "query=" + url.QueryEscape("count_over_time("+sel+"["+strconv.FormatInt(to-from, 10)+"ms])") + "&time=" + seconds(to)
	if _, err := s.ask(ctx, "", form, &a); err != nil {
		return false, fmt.Errorf("cannot read the time range of %s: %w", sel, err)
	}
	return len(a.Data.Result) > 0, nil
}

// orNoLabels is fetch that, when it finds no data, says whether the
// metric has samples without the URL's label= (MissingData): then the
// labels, not a writer yet to come, are why the queries find nothing.
func (s *Sink) orNoLabels(q *querier, fetch func(context.Context) (sources.DataRange, error)) func(context.Context) (sources.DataRange, error) {
	return func(ctx context.Context) (sources.DataRange, error) {
		r, err := fetch(ctx)
		if err != nil || r.Known || len(q.labels) == 0 {
			return r, err
		}
		other, err := s.hasSamples(ctx, q.metric(), 0, horizon())
		if err != nil || !other {
			return r, err
		}
		return r, sinks.MissingData(fmt.Errorf("%s holds series of %s, but none with every label of the target URL's %s: fix label=, or have a workload write with them first",
			s.cfg.baseURL()+s.cfg.QueryPath, q.metric(), q.labelParams()))
	}
}

// labelParams are the URL's label= parameters, as it gives them.
func (q *querier) labelParams() string {
	parts := make([]string, len(q.labels))
	for i, l := range q.labels {
		parts[i] = "label=" + l.Name + ":" + l.Value
	}
	return strings.Join(parts, "&")
}

// findRange looks for the oldest and newest sample of sel in (0, horizon].
func (s *Sink) findRange(ctx context.Context, sel string, horizon int64) (sources.DataRange, error) {
	const precision = int64(time.Hour / time.Millisecond)
	has := func(from, to int64) (bool, error) { return s.hasSamples(ctx, sel, from, to) }
	if ok, err := has(0, horizon); err != nil || !ok {
		return sources.DataRange{}, err
	}
	// Oldest: the first hour (lo, hi] holding a sample from 0.
	lo, hi, err := bisect(0, horizon, precision, func(mid int64) (bool, error) { return has(0, mid) })
	if err != nil {
		return sources.DataRange{}, err
	}
	oldest, _, ok, err := s.samples(ctx, sel, lo, hi)
	if err != nil || !ok {
		return sources.DataRange{}, err
	}
	// Newest: the last hour (lo, hi] after which no sample comes.
	lo, hi, err = bisect(oldest-1, horizon, precision, func(mid int64) (bool, error) {
		after, err := has(mid, horizon)
		return !after, err
	})
	if err != nil {
		return sources.DataRange{}, err
	}
	_, newest, ok, err := s.samples(ctx, sel, lo, hi)
	if err != nil || !ok {
		return sources.DataRange{}, err
	}
	return sources.DataRange{Oldest: oldest * 1e6, Newest: newest * 1e6, Known: true}, nil
}

// bisect narrows (lo, hi] to at most precision wide around where past
// turns true: past(t) is false for t <= lo, true for t >= hi, and once
// true stays true.
func bisect(lo, hi, precision int64, past func(t int64) (bool, error)) (int64, int64, error) {
	for hi-lo > precision {
		mid := lo + (hi-lo)/2
		ok, err := past(mid)
		if err != nil {
			return lo, hi, err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	return lo, hi, nil
}

// samples reads the raw samples of sel in (from, to] (ms) and returns the
// time of the first and last.
func (s *Sink) samples(ctx context.Context, sel string, from, to int64) (first, last int64, ok bool, err error) {
	var a answer
	form := "query=" + url.QueryEscape(sel+"["+strconv.FormatInt(max(to-from, 1), 10)+"ms]") + "&time=" + seconds(to)
	if _, err := s.ask(ctx, "", form, &a); err != nil {
		return 0, 0, false, fmt.Errorf("cannot read the time range of %s: %w", sel, err)
	}
	for _, ser := range a.Data.Result {
		for _, v := range ser.Values {
			sec, isNum := v[0].(float64)
			if !isNum {
				continue
			}
			ms := int64(math.Round(sec * 1000))
			if ms <= from || ms > to {
				continue // Prometheus 2 closes the range on the left too
			}
			if !ok || ms < first {
				first = ms
			}
			if !ok || ms > last {
				last = ms
			}
			ok = true
		}
	}
	return first, last, ok, nil
}
