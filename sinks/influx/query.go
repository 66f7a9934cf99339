package influx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// Query workloads (sources.Queries): each query of a batch is rendered as
// InfluxQL (render.go) and POSTed to InfluxDB's /query endpoint (1.x, and
// InfluxDB 2.x through its v1 compatibility with a DBRP mapping), with
// epoch=ns; the rows of every series that comes back are counted. The
// database is ?db= (v1) or the bucket's DB (v2: DB or DB/RP). Windows lie
// in the data's time range, which a RangeWatch reads every second from
// the first device's series (first() and last() of its first field).

// rangeRefresh is how often a query sink reads the data's time range.
const rangeRefresh = time.Second

// maxQueryBody bounds the answer read for one query.
const maxQueryBody = 256 << 20

// querier is a sink's state for query workloads.
type querier struct {
	db, rp                     string
	cpu, readings, diagnostics *sources.Schema
}

func (s *Sink) newQuerier(schemas []*sources.Schema, churn *sources.QueryChurn) error {
	q := &querier{}
	if s.cfg.API == V1 {
		q.db, q.rp = s.cfg.DB, s.cfg.RP
	} else {
		q.db, q.rp, _ = strings.Cut(s.cfg.Bucket, "/")
	}
	tt := sinks.FindTSBSTables(schemas, func(sc *sources.Schema) string { return sc.Measurement })
	q.cpu, q.readings, q.diagnostics = tt.CPU, tt.Readings, tt.Diagnostics
	main := tt.Main
	if main == nil || len(main.Fields) == 0 {
		return errors.New("query workloads read TSBS's measurements (cpu, or readings and diagnostics): the source has none")
	}
	fetch := func(ctx context.Context) (sources.DataRange, error) { return s.dataRange(ctx, main) }
	if churn != nil {
		fetch = sinks.ChurnRange(churn, func(ctx context.Context, d uint32, _ int64) (sources.DataRange, error) {
			return s.rangeWhere(ctx, main, s.deviceIs(main, d))
		}, func(ctx context.Context) (sources.DataRange, error) { return s.rangeWhere(ctx, main, "") })
	}
	s.OpenQueries(sinks.NewRangeWatch(rangeRefresh, s.orNoDatabase(q, fetch)), q.render)
	s.SetDataPlace(s.log, fmt.Sprintf("database %q (the target URL's %s)", q.db, q.dbParam(s.cfg)))
	s.q = q
	return nil
}

// orNoDatabase is fetch that, when it finds no data or the query is
// refused, says whether the database is missing (MissingData): a query
// workload creates nothing, so a database no writer has created, or a
// typo in the URL, would otherwise read as no data yet. InfluxDB answers
// the range read on a missing database "not executed", so the database
// is looked up in SHOW DATABASES; a server that lists none cannot tell.
func (s *Sink) orNoDatabase(q *querier, fetch func(context.Context) (sources.DataRange, error)) func(context.Context) (sources.DataRange, error) {
	return func(ctx context.Context) (sources.DataRange, error) {
		r, err := fetch(ctx)
		if (err == nil && r.Known) || (err != nil && sinks.ClassOf(err) != sinks.Rejected) {
			return r, err
		}
		names, lerr := s.databases(ctx)
		if lerr != nil || slices.Contains(names, q.db) {
			return r, err
		}
		return sources.DataRange{}, sinks.MissingData(fmt.Errorf("database %q does not exist on %s: fix the target URL's %s, or have a workload write there first",
			q.db, s.cfg.String(), q.dbParam(s.cfg)))
	}
}

// dbParam is the target URL's parameter that names the database queried.
func (q *querier) dbParam(c Config) string {
	if c.API == V2 {
		return "bucket="
	}
	return "db="
}

// checkQueries reports a URL that cannot serve query workloads.
func checkQueries(c Config) error {
	if c.API == V1 && c.Product.Name != "influxdb" {
		return fmt.Errorf("query workloads speak InfluxQL to InfluxDB's /query; product=%s is not InfluxDB", c.Product.Name)
	}
	return nil
}

// influxAnswer is /query's JSON answer; values are kept raw and decoded
// only when collected.
type influxAnswer struct {
	Error   string `json:"error"`
	Results []struct {
		Error  string `json:"error"`
		Series []struct {
			Name    string              `json:"name"`
			Tags    map[string]string   `json:"tags"`
			Columns []string            `json:"columns"`
			Values  [][]json.RawMessage `json:"values"`
		} `json:"series"`
	} `json:"results"`
}

// query POSTs InfluxQL statements to /query and decodes the answer. It
// returns the bytes sent.
func (s *Sink) query(ctx context.Context, stmts string, out *influxAnswer) (int, error) {
	form := url.Values{"q": {stmts}, "db": {s.q.db}, "epoch": {"ns"}}
	if s.q.rp != "" {
		form.Set("rp", s.q.rp)
	}
	body := form.Encode()
	// No limit of its own: a query may take as long as the workload's
	// TIMEOUT (and ?timeout=) allow.
	resp, err := s.doWithin(ctx, 0, http.MethodPost, "/query", "application/x-www-form-urlencoded", strings.NewReader(body))
	if err != nil {
		return len(body), err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(io.LimitReader(resp.Body, maxQueryBody))
	if err := dec.Decode(out); err != nil {
		return len(body), sinks.NewError(sinks.Other, true, fmt.Errorf("cannot read the answer of %s: %w", s.cfg.String(), err))
	}
	msg := out.Error
	for _, r := range out.Results {
		if r.Error != "" && msg == "" {
			msg = r.Error // the first: the statements after it say "not executed"
		}
	}
	if msg != "" {
		class := sinks.Rejected
		if strings.Contains(msg, "timeout") || strings.Contains(msg, "timed out") {
			class = sinks.Timeout
		}
		return len(body), sinks.NewError(class, class == sinks.Timeout, fmt.Errorf("InfluxQL error from %s: %s", s.cfg.String(), msg))
	}
	return len(body), nil
}

// dataRange reads the time of the first and last value of sc's first
// field for the first device, or for every device when it has none.
func (s *Sink) dataRange(ctx context.Context, sc *sources.Schema) (sources.DataRange, error) {
	r, err := s.rangeWhere(ctx, sc, s.deviceIs(sc, 0))
	if err == nil && !r.Known {
		return s.rangeWhere(ctx, sc, "")
	}
	return r, err
}

// deviceIs is the InfluxQL condition selecting device d's series of sc.
func (s *Sink) deviceIs(sc *sources.Schema, d uint32) string {
	return ident(sc.TagKeys[sc.DeviceTag]) + " = " + str(string(sc.Tags.AppendTag(nil, d, sc.DeviceTag)))
}

// rangeWhere reads the time of the first and last value of sc's first
// field where cond holds (every series: empty).
func (s *Sink) rangeWhere(ctx context.Context, sc *sources.Schema, cond string) (sources.DataRange, error) {
	field := ident(sc.Fields[0].Name)
	from := ident(sc.Measurement)
	where := ""
	if cond != "" {
		where = " WHERE " + cond
	}
	var a influxAnswer
	_, err := s.query(ctx, "SELECT first("+field+") FROM "+from+where+"; SELECT last("+field+") FROM "+from+where, &a)
	if err != nil {
		return sources.DataRange{}, fmt.Errorf("cannot read the time range of %s: %w", sc.Measurement, err)
	}
	if len(a.Results) == 2 && len(a.Results[0].Series) > 0 && len(a.Results[1].Series) > 0 {
		lo, err1 := firstTime(a.Results[0].Series[0].Values)
		hi, err2 := firstTime(a.Results[1].Series[0].Values)
		if err := errors.Join(err1, err2); err != nil {
			return sources.DataRange{}, sinks.NewError(sinks.Other, true, fmt.Errorf("time range of %s: %w", sc.Measurement, err))
		}
		return sources.DataRange{Oldest: lo, Newest: hi, Known: true}, nil
	}
	return sources.DataRange{}, nil
}

func firstTime(values [][]json.RawMessage) (int64, error) {
	if len(values) == 0 || len(values[0]) == 0 {
		return 0, errors.New("no time in the answer")
	}
	return strconv.ParseInt(string(values[0][0]), 10, 64)
}

// writeQueries runs the queries of b one after the other and sets each
// one's Rows. It returns the bytes of the requests' bodies.
func (s *Sink) writeQueries(ctx context.Context, b *sources.Batch) (int, error) {
	return s.RunBatch(ctx, b, func(q *sources.Query, _ sources.DataRange, text string) (int, int64, error) {
		var a influxAnswer
		n, err := s.query(ctx, text, &a)
		if err != nil {
			return n, 0, fmt.Errorf("query %s: %w", q.Type, err)
		}
		return n, rowsOf(q, &a, nil), nil
	})
}

// rowsOf counts the rows of a's series and, with collect, keeps them in
// the common form: each series' GROUP BY tags (empty ones as nil), then
// its columns, times as time.Time. avg-vs-projected-fuel-consumption's
// per-capacity rows are combined into one per fleet (see render.go).
func rowsOf(q *sources.Query, a *influxAnswer, collect *sinks.QueryResult) int64 {
	if q.Type == sources.AvgVsProjectedFuelConsumption {
		return combineFuel(a, collect)
	}
	var n int64
	for _, r := range a.Results {
		for _, ser := range r.Series {
			n += int64(len(ser.Values))
			if collect == nil {
				continue
			}
			keys := slices.Sorted(func(yield func(string) bool) {
				for k := range ser.Tags {
					if !yield(k) {
						return
					}
				}
			})
			if collect.Columns == nil {
				collect.Columns = append(append([]string{}, keys...), ser.Columns...)
			}
			for _, vals := range ser.Values {
				row := make([]any, 0, len(keys)+len(vals))
				for _, k := range keys {
					row = append(row, tagValue(ser.Tags[k]))
				}
				for i, v := range vals {
					row = append(row, jsonValue(v, i < len(ser.Columns) && ser.Columns[i] == "time"))
				}
				collect.Rows = append(collect.Rows, row)
			}
		}
	}
	return n
}

func tagValue(v string) any {
	if v == "" {
		return nil
	}
	return v
}

// jsonValue decodes one value of an answer: numbers as float64 (times as
// time.Time), strings, booleans, nil.
func jsonValue(raw json.RawMessage, isTime bool) any {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	if f, ok := v.(float64); ok && isTime {
		ns, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			ns = int64(f)
		}
		return time.Unix(0, ns).UTC()
	}
	if s, ok := v.(string); ok && s == "" {
		return nil
	}
	return v
}

// combineFuel turns the per (fleet, nominal_fuel_consumption) means and
// counts of avg-vs-projected-fuel-consumption into one row per fleet:
// the mean fuel consumption and the mean nominal consumption over the
// same readings, as the SQL averages them. Trucks without a fleet or a
// nominal consumption are left out, as in the SQL.
func combineFuel(a *influxAnswer, collect *sinks.QueryResult) int64 {
	type acc struct{ sum, n, nominal, rows float64 }
	byFleet := map[string]*acc{}
	for _, r := range a.Results {
		for _, ser := range r.Series {
			fleet, nom := ser.Tags["fleet"], ser.Tags["nominal_fuel_consumption"]
			nominal, err := strconv.ParseFloat(nom, 64)
			if fleet == "" || err != nil {
				continue
			}
			col := func(name string) int { return slices.Index(ser.Columns, name) }
			im, in, ir := col("avg_fuel_consumption"), col("n"), col("rows")
			if im < 0 || in < 0 || ir < 0 {
				continue
			}
			for _, vals := range ser.Values {
				mean, _ := jsonValue(vals[im], false).(float64)
				cnt, _ := jsonValue(vals[in], false).(float64)
				rows, _ := jsonValue(vals[ir], false).(float64)
				ac := byFleet[fleet]
				if ac == nil {
					ac = &acc{}
					byFleet[fleet] = ac
				}
				ac.sum += mean * cnt
				ac.n += cnt
				ac.nominal += nominal * rows
				ac.rows += rows
			}
		}
	}
	fleets := make([]string, 0, len(byFleet))
	for f, ac := range byFleet {
		if ac.rows > 0 {
			fleets = append(fleets, f)
		}
	}
	sort.Strings(fleets)
	if collect != nil {
		collect.Columns = []string{"fleet", "avg_fuel_consumption", "projected_fuel_consumption"}
		for _, f := range fleets {
			ac := byFleet[f]
			avg := any(nil)
			if ac.n > 0 {
				avg = ac.sum / ac.n
			}
			collect.Rows = append(collect.Rows, []any{f, avg, ac.nominal / ac.rows})
		}
	}
	return int64(len(fleets))
}

// QueryRows runs q alone and returns what it returned in the common form
// (for tests that compare targets).
func (s *Sink) QueryRows(ctx context.Context, q *sources.Query) (*sinks.QueryResult, error) {
	text, err := s.QueryText(q)
	if err != nil {
		return nil, err
	}
	var a influxAnswer
	if _, err := s.query(ctx, text, &a); err != nil {
		return nil, err
	}
	res := &sinks.QueryResult{}
	q.Rows = rowsOf(q, &a, res)
	return res, nil
}

// ident quotes an InfluxQL identifier.
func ident(s string) string { return quoteIdent(s) }

// str quotes an InfluxQL string literal.
func str(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// num formats a threshold for InfluxQL.
func num(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return "0"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
