package influx

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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

// testTagger serves tag values from a table: vals[device][tag].
type testTagger [][]string

func (tg testTagger) AppendTag(dst []byte, device uint32, tag int) []byte {
	return append(dst, tg[device][tag]...)
}

// hostTagger computes hostname and region tags without a table.
type hostTagger struct{}

func (hostTagger) AppendTag(dst []byte, device uint32, tag int) []byte {
	if tag == 0 {
		return strconv.AppendUint(append(dst, "host_"...), uint64(device), 10)
	}
	return append(dst, [...]string{"eu-west-1", "us-east-1", "ap-south-1"}[device%3]...)
}

// cpuSchema is a small devops-like table: two tags, float and int fields.
func cpuSchema(meas string) *sources.Schema {
	return &sources.Schema{Measurement: meas, TagKeys: []string{"hostname", "region"}, Tags: hostTagger{},
		Fields: []sources.Field{
			{Name: "usage_user", Kind: sources.Float, Decimals: 2},
			{Name: "usage_system", Kind: sources.Float},
			{Name: "procs", Kind: sources.Int},
		}}
}

// gen fills batches with rows of every schema: devices devices, one row
// each per step, timestamps start + seq*step, so rows never repeat.
type gen struct {
	devices int
	start   time.Time
	step    time.Duration
	seq     int64
}

// fill resets b and appends rows rows to each of its tables.
func (g *gen) fill(b *sources.Batch, rows int) {
	b.Reset()
	for i := 0; i < rows; i++ {
		dev := uint32(g.seq % int64(g.devices))
		ts := g.start.Add(time.Duration(g.seq/int64(g.devices)) * g.step).UnixNano()
		for _, t := range b.Tables {
			t.Device = append(t.Device, dev)
			t.Time = append(t.Time, ts)
			for f, fd := range t.Schema.Fields {
				if fd.Kind == sources.Int {
					t.Ints[f] = append(t.Ints[f], g.seq%1000)
				} else {
					t.Floats[f] = append(t.Floats[f], float64(g.seq%10000)/100)
				}
			}
			b.NumValues += len(t.Schema.Fields)
		}
		g.seq++
	}
}

// influxQuery runs an InfluxQL query and returns the first statement's
// series.
type series struct {
	Name    string   `json:"name"`
	Columns []string `json:"columns"`
	Values  [][]any  `json:"values"`
}

func influxQuery(t *testing.T, srv *testserver.Server, db, q string) []series {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	resp, err := hc.PostForm(srv.URL+"/query", url.Values{"db": {db}, "q": {q}})
	if err != nil {
		t.Fatalf("query %q: %v", q, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out struct {
		Error   string `json:"error"`
		Results []struct {
			Error  string   `json:"error"`
			Series []series `json:"series"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &out); err != nil || resp.StatusCode != 200 {
		t.Fatalf("query %q: HTTP %d %s (%v)", q, resp.StatusCode, body, err)
	}
	if out.Error != "" || len(out.Results) == 0 || out.Results[0].Error != "" {
		t.Fatalf("query %q: %s", q, body)
	}
	return out.Results[0].Series
}

// countField returns SELECT count(field) FROM meas (0 when empty).
func countField(t *testing.T, srv *testserver.Server, db, meas, field string) int64 {
	t.Helper()
	ss := influxQuery(t, srv, db, fmt.Sprintf("SELECT count(%s) FROM %s", quoteIdent(field), quoteIdent(meas)))
	if len(ss) == 0 || len(ss[0].Values) == 0 {
		return 0
	}
	n, ok := ss[0].Values[0][1].(float64)
	if !ok {
		t.Fatalf("count: unexpected %v", ss[0].Values)
	}
	return int64(n)
}
