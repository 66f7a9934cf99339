package remotewrite

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Read-back is PromQL through the query API (query_path): for each
// query, the raw samples of the schema's metrics for the device over
// the time range — a range selector evaluated at the range's end — and
// a row is the samples of one label set at one time.

var _ sinks.SeriesReader = (*Sink)(nil)

// maxReadYears bounds the end of a read: PromQL's times are seconds in a
// float, and "until the end of time" means until well after now.
const maxReadYears = 10

// Readable returns nil: the targets of remote write answer PromQL at
// query_path. A schema whose device tag is missing cannot be read back.
func (s *Sink) Readable() error { return nil }

// Resolution is the protocol's: milliseconds.
func (s *Sink) Resolution() time.Duration { return time.Millisecond }

// ReadSeries reads the rows of every query, one PromQL request each.
func (s *Sink) ReadSeries(ctx context.Context, qs []sinks.SeriesQuery, out []*sources.Table) error {
	if len(qs) != len(out) {
		return fmt.Errorf("BUG: remotewrite: %d queries, %d tables", len(qs), len(out))
	}
	for i, q := range qs {
		if err := s.readOne(ctx, q, out[i]); err != nil {
			return err
		}
	}
	return nil
}

// readOne reads q's rows into t.
func (s *Sink) readOne(ctx context.Context, q sinks.SeriesQuery, t *sources.Table) error {
	sc := q.Schema
	if sc.DeviceTag >= len(sc.TagKeys) {
		return sinks.NewError(sinks.Rejected, false, fmt.Errorf("measurement %s has no device tag to read a device's series by", sc.Measurement))
	}
	// The first and last ms whose rows' times, truncated, are in
	// [From, To]: From rounded up, To down, both within 1970 and a few
	// years from now.
	var fromMs int64
	if q.From > 0 {
		fromMs = (q.From + 999_999) / 1e6
	}
	toMs := min(Millis(q.To), time.Now().AddDate(maxReadYears, 0, 0).UnixMilli())
	if toMs < fromMs {
		return nil
	}
	if len(sc.Tags.AppendTag(nil, q.Device, sc.DeviceTag)) == 0 {
		// An empty tag is no label: the selector would match every
		// device without one.
		return sinks.NewError(sinks.Rejected, false, fmt.Errorf("device %d of %s has an empty %s, which remote write leaves out: its series cannot be told apart", q.Device, sc.Measurement, sc.TagKeys[sc.DeviceTag]))
	}
	sel := s.selector(q)
	expr := fmt.Sprintf("%s[%dms]", sel, toMs-fromMs+1)
	at := strconv.FormatInt(toMs/1000, 10) + "." + fmt.Sprintf("%03d", toMs%1000)
	series, err := s.query(ctx, expr, at)
	if err != nil {
		return err
	}
	return appendRows(series, q, fromMs, toMs, t)
}

// selector is the series selector of q's device: its schema's metrics,
// its device tag and the URL's constant labels.
func (s *Sink) selector(q sinks.SeriesQuery) string {
	sc := q.Schema
	names := make([]string, len(sc.Fields))
	for f, fd := range sc.Fields {
		names[f] = regexp.QuoteMeta(MetricName(sc.Measurement, fd.Name))
	}
	var b strings.Builder
	b.WriteString(`{__name__=~`)
	b.WriteString(strconv.Quote(strings.Join(names, "|")))
	dev := sc.Tags.AppendTag(nil, q.Device, sc.DeviceTag)
	b.WriteString("," + LabelName(sc.TagKeys[sc.DeviceTag]) + "=" + strconv.Quote(string(dev)))
	for _, l := range s.cfg.Labels {
		b.WriteString("," + l.Name + "=" + strconv.Quote(l.Value))
	}
	b.WriteByte('}')
	return b.String()
}

// promSeries is a series of a matrix answer.
type promSeries struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
}

// query runs an instant query evaluated at at (seconds) and returns its
// matrix.
func (s *Sink) query(ctx context.Context, expr, at string) ([]promSeries, error) {
	form := url.Values{"query": {expr}, "time": {at}}.Encode()
	where := s.cfg.baseURL() + s.cfg.QueryPath
	resp, err := s.postForm(ctx, where, form)
	if err != nil {
		return nil, fmt.Errorf("cannot read back from %s: %w", where, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("cannot read back from %s: %w", where,
			classifyStatus(resp.StatusCode, resp.Header, readMessage(resp), 0, true))
	}
	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string       `json:"resultType"`
			Result     []promSeries `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<30)).Decode(&out); err != nil {
		return nil, sinks.NewError(sinks.Other, false, fmt.Errorf("cannot decode the answer of %s%s: %w", s.cfg.baseURL(), s.cfg.QueryPath, err))
	}
	if out.Status != "success" || out.Data.ResultType != "matrix" {
		return nil, sinks.NewError(sinks.Rejected, false, fmt.Errorf("cannot read back from %s%s: %s %s (answer of type %q)",
			s.cfg.baseURL(), s.cfg.QueryPath, out.Status, out.Error, out.Data.ResultType))
	}
	return out.Data.Result, nil
}

// row is one row read back: the samples of a label set at one time.
type row struct {
	key    string // the labels other than __name__
	labels map[string]string
	ms     int64
	vals   []float64
	has    []bool
}

// appendRows turns the series read into q's rows, appended to t in time
// order: the samples of the same labels (but the name) at the same time
// make one row, a field without a sample is null. Samples outside
// [fromMs, toMs] are left out.
func appendRows(series []promSeries, q sinks.SeriesQuery, fromMs, toMs int64, t *sources.Table) error {
	sc := q.Schema
	field := map[string]int{}
	for f, fd := range sc.Fields {
		field[MetricName(sc.Measurement, fd.Name)] = f
	}
	rows := map[string]*row{}
	for _, ser := range series {
		f, ok := field[ser.Metric["__name__"]]
		if !ok {
			continue
		}
		key := labelKey(ser.Metric)
		for _, v := range ser.Values {
			sec, ok1 := v[0].(float64)
			str, ok2 := v[1].(string)
			if !ok1 || !ok2 {
				return sinks.NewError(sinks.Other, false, fmt.Errorf("a sample of %s is %v", ser.Metric["__name__"], v))
			}
			ms := int64(math.Round(sec * 1000))
			if ms < fromMs || ms > toMs {
				// Prometheus 2 closes a range selector on both ends,
				// Prometheus 3 and VictoriaMetrics on the right only.
				continue
			}
			k := key + "@" + strconv.FormatInt(ms, 10)
			r := rows[k]
			if r == nil {
				r = &row{key: key, labels: ser.Metric, ms: ms, vals: make([]float64, len(sc.Fields)), has: make([]bool, len(sc.Fields))}
				rows[k] = r
			}
			x, err := strconv.ParseFloat(str, 64)
			if err != nil {
				return sinks.NewError(sinks.Other, false, fmt.Errorf("a sample of %s is %q: %w", ser.Metric["__name__"], str, err))
			}
			r.vals[f], r.has[f] = x, true
		}
	}
	sorted := make([]*row, 0, len(rows))
	for _, r := range rows {
		sorted = append(sorted, r)
	}
	slices.SortFunc(sorted, func(a, b *row) int { return cmp.Or(cmp.Compare(a.ms, b.ms), strings.Compare(a.key, b.key)) })
	for _, r := range sorted {
		i := t.Len()
		t.Device = append(t.Device, q.Device)
		t.Time = append(t.Time, r.ms*1e6)
		if q.Tags != nil {
			for _, k := range sc.TagKeys {
				*q.Tags = append(*q.Tags, r.labels[LabelName(k)])
			}
		}
		for f, fd := range sc.Fields {
			null := !r.has[f]
			if fd.Kind == sources.Int {
				x := int64(r.vals[f])
				if float64(x) != r.vals[f] {
					null = true // not an integer: read as null, which the comparison reports
				}
				t.Ints[f] = append(t.Ints[f], x)
			} else {
				t.Floats[f] = append(t.Floats[f], r.vals[f])
			}
			if null {
				t.SetNull(f, i)
			}
		}
	}
	t.PadNulls()
	return nil
}

// labelKey is a series' labels but its name, in a fixed order.
func labelKey(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		if k != "__name__" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + strconv.Quote(m[k]) + ",")
	}
	return b.String()
}
