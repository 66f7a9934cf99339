package daemon_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/soakd/soakd/config"
	"github.com/soakd/soakd/daemon"
	"github.com/soakd/soakd/serve"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/soakd/soakd/sources"
)

// VERIFY and VERIFY_DELAY out of range are configuration errors naming
// the variable.
func TestVerifySettings(t *testing.T) {
	p := daemon.Plugins()
	for _, bad := range []map[string]string{{"SOAKD_SEQ_VERIFY": "1.5"}, {"SOAKD_SEQ_VERIFY": "-0.1"}, {"SOAKD_SEQ_VERIFY_DELAY": "-1s"}} {
		env := daemon.Env("SOAKD_WORKLOADS", "seq")
		for k, v := range bad {
			env[k] = v
		}
		c, err := config.Load(env, p.Sources)
		if err == nil {
			err = c.Validate(p)
		}
		if err == nil || !strings.Contains(err.Error(), "SOAKD_SEQ_VERIFY") {
			t.Errorf("%v: %v, want an error naming the variable", bad, err)
		}
	}
}

// VERIFY without a Verifier among the observers is refused before
// anything runs, naming the variable: nothing would read back.
func TestVerifyNeedsAVerifier(t *testing.T) {
	p := daemon.Plugins()
	cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_TARGET", "null://", "SOAKD_SEQ_VERIFY", "0.5"), p)
	res := runServed(context.Background(), cfg, p)
	if res.err == nil || !strings.Contains(res.err.Error(), "SOAKD_SEQ_VERIFY") || res.sum != nil {
		t.Fatalf("run: %v, summary %v: want an error naming SOAKD_SEQ_VERIFY", res.err, res.sum)
	}
}

// fakeVerifier follows the workloads with VERIFY set and finds every
// unit of an acknowledged batch missing.
type fakeVerifier struct {
	mu       sync.Mutex
	events   []string // begin, end, and a write after end
	batches  int
	units    int64
	followed []string
}

func (f *fakeVerifier) Opened(*daemon.Handle) error                            { return nil }
func (f *fakeVerifier) Started(context.Context, []*daemon.Handle, func(error)) {}
func (f *fakeVerifier) PhaseBegun(*daemon.Handle, *daemon.Phase)               {}
func (f *fakeVerifier) PhaseEnded(*daemon.Handle, *daemon.Phase, string)       {}
func (f *fakeVerifier) ReadsBack()                                             {}

func (f *fakeVerifier) Follow(w *daemon.Handle) daemon.WriteFollower {
	if w.Config().Verify == 0 {
		return nil
	}
	f.followed = append(f.followed, w.Name())
	return f
}

func (f *fakeVerifier) Begin(context.Context) { f.note("begin") }
func (f *fakeVerifier) End()                  { f.note("end") }

func (f *fakeVerifier) note(e string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, e)
}

func (f *fakeVerifier) Written(p *daemon.Phase, b *sources.Batch, o daemon.WriteOutcome) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.events) != 1 {
		f.events = append(f.events, "write outside begin–end")
	}
	f.batches++
	if !o.Acked {
		return
	}
	f.units += int64(b.Len())
	verdicts := make([]sources.Verdict, b.Len())
	for i := range verdicts {
		verdicts[i] = sources.Missing
	}
	p.ReadBack().Checked(verdicts, 0, 0)
}

// A Verifier follows only the workloads with VERIFY set, sees each of
// their batches between Begin and End, and what it counts into the
// phase's ReadBack is the summary's and /metrics' verify counts, and the
// run's failure.
func TestVerifyFollowsBatches(t *testing.T) {
	p := daemon.Plugins()
	cfg := daemon.LoadTest(t, daemon.Env("SOAKD_WORKLOADS", "a,b", "SOAKD_A_SOURCE", "seq", "SOAKD_B_SOURCE", "seq",
		"SOAKD_A_ROWS", "1000", "SOAKD_B_ROWS", "1000", "SOAKD_A_RATE", "max", "SOAKD_B_RATE", "max",
		"SOAKD_A_BATCH_SIZE", "10", "SOAKD_A_TARGET", "null://", "SOAKD_B_TARGET", "null://", "SOAKD_A_VERIFY", "0.5"), p)
	f := &fakeVerifier{}
	reg := prometheus.NewRegistry()
	s := serve.New(serve.Options{Config: cfg, Logger: zap.NewNop(), Version: "test", Registry: reg})
	sum, err := daemon.Run(context.Background(), cfg, daemon.Deps{Logger: zap.NewNop(), Plugins: p, Version: "test",
		Observers: []daemon.Observer{f, s}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(f.followed, ",") != "a" || strings.Join(f.events, ",") != "begin,end" {
		t.Errorf("followed %v, events %v: want a alone, begun then ended", f.followed, f.events)
	}
	a, b := sum.Workload("a", "run"), sum.Workload("b", "run")
	if f.batches != 100 || f.units != 1000 || a.Units != 1000 {
		t.Errorf("%d batches, %d units followed, %d acknowledged: want 100 batches of 10", f.batches, f.units, a.Units)
	}
	if v := a.Verify; v == nil || v.Fraction != 0.5 || v.Checked != 1000 || v.Missing != 1000 || v.Skipped != 0 {
		t.Errorf("a's verify summary %+v, want 1000 checked, all missing", v)
	}
	if a.Failure == nil || a.Failure.Reason != "read-back of acknowledged units failed: 1000 missing, 0 mismatched, 0 duplicated of 1000 checked (VERIFY)" {
		t.Errorf("a's failure %+v", a.Failure)
	}
	if v := b.Verify; b.Failure != nil || v == nil || v.Fraction != 0 || v.Checked != 0 {
		t.Errorf("b (no VERIFY): verify %+v, failure %+v", v, b.Failure)
	}
	if n, err := testutil.GatherAndCount(reg, "soakd_verify_checked_total"); err != nil || n != 1 {
		t.Errorf("%d soakd_verify_checked_total series (%v), want a's alone", n, err)
	}
}
