package remotewrite

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/soakd/soakd/sources"
)

// The PromQL of TSBS's devops query types. Each field of the cpu table
// is a metric of its own (cpu_usage_user, ...), so a query over several
// fields is one expression per field joined with "or", each marked with
// a field label (label_replace), and the sink puts the fields of a group
// at one time back together into one row, as SQL returns them:
//
//   - single-groupby-*, cpu-max-all-*: a range query, step the bucket
//     (1m, 1h), of max(max_over_time(cpu_F{hostname=~"..."}[bucket]))
//     for each field F;
//   - double-groupby-*: a range query, step 1h, of
//     avg by (hostname) (avg_over_time(cpu_F[1h]));
//   - groupby-orderby-limit: single-groupby's range query over every
//     host, its window's minute buckets, of which the sink keeps the five
//     newest (PromQL has no ORDER BY ... LIMIT);
//   - lastpoint: an instant query at the data's newest time of
//     last_over_time(cpu_F[span of the data]) for every field.
//
// A range query evaluates its expression at the last millisecond of each
// bucket over the bucket's width, so that a point reads the samples of
// [bucket start, bucket end) (Prometheus 2 closes range selectors on the
// left too: a sample 1 ms before a bucket would count in it). Its points
// are the buckets its window touches, whole: the first and last bucket
// also read the samples of their part outside the window, where SQL reads
// the window's alone.
//
// high-cpu-* (the raw rows whose usage_user is above 90) has no PromQL
// form: PromQL filters values on an evaluation grid, not raw samples.
// Nor have the iot types (joins of the last reading per truck with tag
// arithmetic, sessions over consecutive buckets).

// fieldLabel marks each series of a multi-field answer with its field.
const fieldLabel = "field"

// promqlType says whether query type has a PromQL form.
func promqlType(t sources.QueryType) bool {
	switch t {
	case sources.SingleGroupby111, sources.SingleGroupby1112, sources.SingleGroupby181,
		sources.SingleGroupby511, sources.SingleGroupby5112, sources.SingleGroupby581,
		sources.CPUMaxAll1, sources.CPUMaxAll8,
		sources.DoubleGroupby1, sources.DoubleGroupby5, sources.DoubleGroupbyAll,
		sources.GroupbyOrderbyLimit, sources.Lastpoint:
		return true
	}
	return false
}

// PromQLTypes lists the query types the sink can run, in order.
func PromQLTypes() []sources.QueryType {
	var out []sources.QueryType
	for t := range sources.NumQueryTypes {
		if promqlType(t) {
			out = append(out, t)
		}
	}
	return out
}

// CheckQueries is the registry's query-type check: it refuses the query
// types that have no PromQL form, naming them.
func CheckQueries(_ *url.URL, types []sources.QueryType) error {
	var bad []string
	for _, t := range types {
		if !promqlType(t) {
			bad = append(bad, t.String())
		}
	}
	if len(bad) == 0 {
		return nil
	}
	ok := make([]string, 0, 16)
	for _, t := range PromQLTypes() {
		ok = append(ok, t.String())
	}
	return fmt.Errorf("query types %s have no PromQL form (remote-write targets run %s): leave them out of QUERIES",
		strings.Join(bad, ", "), strings.Join(ok, ", "))
}

// request is a rendered query: the endpoint and the form sent to it.
type request struct {
	rangeQuery bool
	expr       string
	// at (instant) or start, end, step (range): milliseconds.
	at, start, end, step int64
	// bucket is the width of a range query's buckets (ms), 0 for an
	// instant query.
	bucket int64
	// limit keeps the newest limit points of the answer (0: all).
	limit int
	// prefix names the value columns: prefix_field, or the field alone.
	prefix string
	// group are the labels a row is grouped by (nil: every label of the
	// answer but the field and the URL's constant labels).
	group []string
	// byLabels: the answer's labels make the row's columns.
	byLabels bool
}

// form is the request's body.
func (r *request) form() string {
	v := url.Values{"query": {r.expr}}
	if r.rangeQuery {
		v.Set("start", seconds(r.start))
		v.Set("end", seconds(r.end))
		v.Set("step", seconds(r.step))
		// VictoriaMetrics shifts a long answer's points to cache it
		// unless told not to; other targets ignore the parameter.
		v.Set("nocache", "1")
	} else {
		v.Set("time", seconds(r.at))
	}
	return v.Encode()
}

// seconds formats milliseconds as PromQL's seconds.
func seconds(ms int64) string {
	sign := ""
	if ms < 0 {
		sign, ms = "-", -ms
	}
	return sign + strconv.FormatInt(ms/1000, 10) + "." + fmt.Sprintf("%03d", ms%1000)
}

// ceilMs is ns rounded up to the millisecond.
func ceilMs(ns int64) int64 {
	ms := ns / 1e6
	if ns%1e6 > 0 {
		ms++
	}
	return ms
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// build renders qq over data range rng.
func (q *querier) build(qq *sources.Query, rng sources.DataRange) (*request, error) {
	if !promqlType(qq.Type) {
		return nil, fmt.Errorf("query %s has no PromQL form", qq.Type)
	}
	cpu := q.cpu
	if cpu == nil {
		return nil, fmt.Errorf("query %s reads the devops measurement cpu, which this data set has not", qq.Type)
	}
	info := qq.Type.Info()
	start, end := qq.Window(rng)
	host := LabelName(cpu.TagKeys[cpu.DeviceTag])
	r := &request{}
	switch qq.Type {
	case sources.Lastpoint:
		newest := rng.Newest / 1e6
		span := max(newest-floorDiv(rng.Oldest, 1e6)+1, 1)
		r.at, r.byLabels = newest, true
		r.expr = q.fields(len(cpu.Fields), func(sel string) string {
			return "last_over_time(" + sel + "[" + strconv.FormatInt(span, 10) + "ms])"
		}, "")
		return r, nil
	case sources.DoubleGroupby1, sources.DoubleGroupby5, sources.DoubleGroupbyAll:
		r.prefix, r.group = "mean", []string{host}
		r.expr = q.fields(info.Metrics, func(sel string) string {
			return "avg by (" + host + ") (avg_over_time(" + sel + "[" + every(info.Bucket) + "]))"
		}, "")
	default: // single-groupby-*, cpu-max-all-*, groupby-orderby-limit
		r.prefix, r.group = "max", []string{}
		devs := ""
		if qq.Type != sources.GroupbyOrderbyLimit {
			devs = q.devices(qq)
		}
		r.expr = q.fields(info.Metrics, func(sel string) string {
			return "max(max_over_time(" + sel + "[" + every(info.Bucket) + "]))"
		}, devs)
		if qq.Type == sources.GroupbyOrderbyLimit {
			r.limit = 5
		}
	}
	b := info.Bucket.Milliseconds()
	first, last := ceilMs(start), ceilMs(end)-1
	r.rangeQuery, r.bucket, r.step = true, b, b
	r.start = floorDiv(first, b)*b + b - 1
	r.end = floorDiv(last, b)*b + b - 1
	if end <= start {
		r.end = r.start // no data yet: one point, which finds nothing
	}
	return r, nil
}

// fields is fn's expression for each of the first n fields of the cpu
// table, each marked with its field, joined with "or". sel is the
// field's selector: its metric, the URL's constant labels and devs.
func (q *querier) fields(n int, fn func(sel string) string, devs string) string {
	cpu := q.cpu
	n = min(n, len(cpu.Fields))
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(" or ")
		}
		f := cpu.Fields[i].Name
		sel := MetricName(cpu.Measurement, f) + "{" + q.matchers(devs) + "}"
		b.WriteString("label_replace(" + fn(sel) + ", " + strconv.Quote(fieldLabel) + ", " + strconv.Quote(f) + `, "", "")`)
	}
	return b.String()
}

// matchers are the URL's constant labels and extra (a matcher or "").
func (q *querier) matchers(extra string) string {
	var parts []string
	for _, l := range q.labels {
		parts = append(parts, l.Name+"="+strconv.Quote(l.Value))
	}
	if extra != "" {
		parts = append(parts, extra)
	}
	return strings.Join(parts, ",")
}

// devices is the matcher of qq's devices: hostname=~"host_1|host_7".
func (q *querier) devices(qq *sources.Query) string {
	cpu := q.cpu
	var alts []string
	var buf []byte
	for _, d := range qq.Devices[:qq.NDevices] {
		buf = cpu.Tags.AppendTag(buf[:0], d, cpu.DeviceTag)
		alts = append(alts, regexp.QuoteMeta(string(buf)))
	}
	return LabelName(cpu.TagKeys[cpu.DeviceTag]) + "=~" + strconv.Quote(strings.Join(alts, "|"))
}

// every is a bucket's width as a PromQL duration.
func every(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}
