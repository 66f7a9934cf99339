package remotewrite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustParse(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := sinks.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// openSink opens raw with the test's logger and closes it at cleanup.
func openSink(t *testing.T, raw string, o sinks.Options) *Sink {
	t.Helper()
	if o.Logger == nil {
		o.Logger = zaptest.NewLogger(t)
	}
	if o.Kind == 0 {
		o.Kind = sources.Series
	}
	s, err := Open(context.Background(), mustParse(t, raw), o)
	if err != nil {
		t.Fatalf("Open(%s): %v", sinks.Redact(raw), err)
	}
	t.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s.(*Sink)
}

// hostTagger computes hostname and region tags without a table; device
// 3's region is empty.
type hostTagger struct{}

func (hostTagger) AppendTag(dst []byte, device uint32, tag int) []byte {
	if tag == 0 {
		return strconv.AppendUint(append(dst, "host_"...), uint64(device), 10)
	}
	if device == 3 {
		return dst
	}
	return append(dst, [...]string{"eu-west-1", "us-east-1", "ap-south-1"}[device%3]...)
}

// cpuSchema is a small devops-like table: two tags, float and int fields.
func cpuSchema(meas string) *sources.Schema {
	return &sources.Schema{Measurement: meas, TagKeys: []string{"hostname", "region"}, Tags: hostTagger{},
		Fields: []sources.Field{
			{Name: "usage_user", Kind: sources.Float, Decimals: 2},
			{Name: "usage.system", Kind: sources.Float},
			{Name: "procs", Kind: sources.Int},
		}}
}

// gen fills batches with rows of every schema: devices devices, one row
// each per step, timestamps start + seq/devices*step, so rows never
// repeat; every 7th row's second field is null.
type gen struct {
	devices int
	start   time.Time
	step    time.Duration
	seq     int64
}

// value is the value of field f of row seq.
func value(seq int64, f int, kind sources.FieldKind) float64 {
	if kind == sources.Int {
		return float64(seq%1000 + int64(f))
	}
	return float64(seq%10000)/100 + float64(f)
}

// fill resets b and appends rows rows to each of its tables.
func (g *gen) fill(b *sources.Batch, rows int) {
	b.Reset()
	for range rows {
		dev := uint32(g.seq % int64(g.devices))
		ts := g.start.Add(time.Duration(g.seq/int64(g.devices)) * g.step).UnixNano()
		for _, t := range b.Tables {
			i := t.Len()
			t.Device = append(t.Device, dev)
			t.Time = append(t.Time, ts)
			for f, fd := range t.Schema.Fields {
				if fd.Kind == sources.Int {
					t.Ints[f] = append(t.Ints[f], int64(value(g.seq, f, fd.Kind)))
				} else {
					t.Floats[f] = append(t.Floats[f], value(g.seq, f, fd.Kind))
				}
				if f == 1 && g.seq%7 == 0 {
					t.SetNull(f, i)
					continue
				}
				b.NumValues++
			}
		}
		g.seq++
	}
	for _, t := range b.Tables {
		t.PadNulls()
	}
}

// answerSeries is a series of a PromQL answer: a matrix's raw samples or a
// vector's one.
type answerSeries struct {
	Metric map[string]string
	Values [][2]float64 // [seconds, value]
}

// promQuery runs an instant query at time at on the server at base
// (http://host:port) and returns its series.
func promQuery(t *testing.T, base, q string, at time.Time) []answerSeries {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	form := url.Values{"query": {q}, "time": {strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64)}}
	resp, err := hc.PostForm(base+"/api/v1/query", form)
	if err != nil {
		t.Fatalf("query %q: %v", q, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  []any             `json:"value"`
				Values [][]any           `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.Status != "success" {
		t.Fatalf("query %q: HTTP %d %s (%v)", q, resp.StatusCode, body, err)
	}
	var ss []answerSeries
	for _, r := range out.Data.Result {
		s := answerSeries{Metric: r.Metric}
		vals := r.Values
		if r.Value != nil {
			vals = [][]any{r.Value}
		}
		for _, v := range vals {
			ts, _ := v[0].(float64)
			f, err := strconv.ParseFloat(fmt.Sprint(v[1]), 64)
			if err != nil {
				t.Fatalf("query %q: value %v", q, v[1])
			}
			s.Values = append(s.Values, [2]float64{ts, f})
		}
		ss = append(ss, s)
	}
	return ss
}

// promScalar runs a query that answers one number (0 when it answers
// nothing).
func promScalar(t *testing.T, base, q string, at time.Time) float64 {
	t.Helper()
	ss := promQuery(t, base, q, at)
	switch {
	case len(ss) == 0:
		return 0
	case len(ss) > 1 || len(ss[0].Values) != 1:
		t.Fatalf("query %q answers %d series", q, len(ss))
	}
	return ss[0].Values[0][1]
}

// vmFlush makes what VictoriaMetrics at base received searchable.
func vmFlush(t *testing.T, base string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	resp, err := hc.Get(base + "/internal/force_flush")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }
