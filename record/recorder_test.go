package record_test

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"go.uber.org/zap"

	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/internal/enginetest"
	"github.com/soakd/soakd/record"
	"github.com/soakd/soakd/report"
	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// scripted is a sink whose nth write (from 1) ends as outcome(n) says.
type scripted struct {
	n       atomic.Int64
	outcome func(n int64) error
}

func (s *scripted) Write(context.Context, *sources.Batch) (int, error) {
	return 0, s.outcome(s.n.Add(1))
}
func (s *scripted) Close(context.Context) error { return nil }

func plugins(kind sources.Kind, outcome func(n int64) error) *daemon.Deps {
	p := enginetest.Plugins(sinks.Entry{Schemes: []string{"scripted"}, Kinds: []sources.Kind{kind},
		Open: func(context.Context, *url.URL, sinks.Options) (sinks.Sink, error) {
			return &scripted{outcome: outcome}, nil
		}})
	return &daemon.Deps{Logger: zap.NewNop(), Plugins: p, Version: "test", Observers: []daemon.Observer{record.New()}}
}

// seqAt is where a stream of seq's DEVICES=5 stands after its first n
// rows: rows go round by round, devices 0..4 in each.
func seqAt(n int64) sources.Position { return sources.Position{Round: n / 5, Device: n % 5} }

// The summary's verify entry records, for the one stream of a series
// run, each run of batches with the same outcome: acknowledged, failed
// (write 3, rows 20–29) and partly stored (write 5, rows 40–49), ending
// where the data set ends; and the settings that make the data set.
func TestRecorderRecordsEachStream(t *testing.T) {
	rejected := errors.New("rejected")
	d := plugins(sources.Series, func(n int64) error {
		switch n {
		case 3:
			return sinks.NewError(sinks.Rejected, false, rejected)
		case 5:
			return sinks.NewError(sinks.Rejected, false, enginetest.Partial{N: 4})
		}
		return nil
	})
	cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "scripted://x", "SOAKD_SEQ_RATE", "max",
		"SOAKD_SEQ_WORKERS", "1", "SOAKD_SEQ_BATCH_SIZE", "10", "SOAKD_SEQ_DEVICES", "5", "SOAKD_SEQ_ROWS", "100"), d.Plugins)
	sum, err := daemon.Run(context.Background(), cfg, *d)
	if err != nil {
		t.Fatal(err)
	}
	v := sum.Workload("seq", "run").Verify
	if v == nil || len(v.Streams) != 1 {
		t.Fatalf("verify %+v, want the record of one stream", v)
	}
	r := v.Streams[0]
	want := []report.Segment{
		{To: seqAt(20), Status: report.SegmentAcked},
		{To: seqAt(30), Status: report.SegmentFailed},
		{To: seqAt(40), Status: report.SegmentAcked},
		{To: seqAt(50), Status: report.SegmentPartial},
		{To: seqAt(100), Status: report.SegmentAcked},
	}
	if r.Part != 0 || r.Start != seqAt(0) || !slices.Equal(r.Segments, want) || r.Merged != 0 {
		t.Errorf("stream record %+v, want part 0 from %+v with segments %+v", r, seqAt(0), want)
	}
	if v.Settings["SOURCE"] != "seq" || v.Settings["ROWS"] != "100" || v.Settings["DEVICES"] != "5" {
		t.Errorf("settings %v, want SOURCE=seq, ROWS=100, DEVICES=5 among them", v.Settings)
	}
	if v.InDoubtRecords != nil || v.InDoubtOverflow {
		t.Errorf("a series run has KV records in doubt: %v", v.InDoubtRecords)
	}
}

// A KV load phase whose every write fails leaves each record it tried to
// insert in doubt, in its own entry's record, and the key space is the
// source's.
func TestRecorderKeepsFailedInsertsInDoubt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := plugins(sources.KV, func(int64) error { return sinks.NewError(sinks.Rejected, false, errors.New("rejected")) })
		cfg := enginetest.Load(t, enginetest.Env("SOAKD_WORKLOADS", "k", "SOAKD_K_SOURCE", "kv", "SOAKD_K_TARGET", "scripted://x",
			"SOAKD_K_RECORDS", "30", "SOAKD_K_WORKERS", "1", "SOAKD_K_PIPELINE", "4", "SOAKD_K_LOAD_RATE", "max",
			"SOAKD_K_RATE", "100", "SOAKD_K_DURATION", "1s"), d.Plugins)
		sum, err := daemon.Run(context.Background(), cfg, *d)
		if err != nil {
			t.Fatal(err)
		}
		load := sum.Workload("k", "load")
		if load == nil || load.Verify == nil {
			t.Fatalf("no load phase entry with a verify record: %+v", sum.Workloads)
		}
		got := slices.Sorted(slices.Values(load.Verify.InDoubtRecords))
		want := make([]uint64, 30)
		for i := range want {
			want[i] = uint64(i)
		}
		if !slices.Equal(got, want) || load.Verify.InDoubtOverflow {
			t.Errorf("records in doubt %v (overflow %v), want 0..29", got, load.Verify.InDoubtOverflow)
		}
		if load.Verify.Records != 30 {
			t.Errorf("records %d, want the 30 of RECORDS", load.Verify.Records)
		}
	})
}
