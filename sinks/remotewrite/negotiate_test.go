package remotewrite

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/snappy"

	"github.com/soakd/soakd/sinks"
	"github.com/soakd/soakd/sources"
)

// receiver is a remote-write endpoint that behaves as a kind of server
// does with a 2.0 request, and counts the samples it received in the
// requests it took.
type receiver struct {
	t *testing.T
	// v2 answers a 2.0 request: "write" decodes it and answers 204 with
	// X-Prometheus-Remote-Write-Samples-Written (a 2.0 server), "ignore"
	// answers 204 without it (a 1.0 server that does not look at
	// Content-Type and reads no series in it), "415" refuses it, "400"
	// refuses it as a body it cannot parse, "short"
	// answers 204 saying it wrote one sample less, "partial" 400 saying
	// it wrote half.
	v2 string

	mu               sync.Mutex
	v1Samples        int // samples of 1.0 requests
	v2Samples        int // samples of 2.0 requests written
	v2Bodies, v2Data int // 2.0 requests, and those with series
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	body, err := snappy.DecodeStrict(nil, raw)
	if err != nil {
		rc.t.Errorf("body: %v", err)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	ct, ver := r.Header.Get("Content-Type"), r.Header.Get("X-Prometheus-Remote-Write-Version")
	if ct == "application/x-protobuf" {
		if ver != "0.1.0" {
			rc.t.Errorf("1.0 request with version %q", ver)
		}
		rc.v1Samples += len(decodeRequest(rc.t, body))
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if ct != "application/x-protobuf;proto=io.prometheus.write.v2.Request" || ver != "2.0.0" {
		rc.t.Errorf("Content-Type %q, version %q", ct, ver)
	}
	rc.v2Bodies++
	series := decodeV2(rc.t, body)
	if len(series) > 0 {
		rc.v2Data++
	}
	switch rc.v2 {
	case "write":
		rc.v2Samples += len(series)
		w.Header().Set(headerSamplesWritten, strconv.Itoa(len(series)))
		w.WriteHeader(http.StatusNoContent)
	case "ignore":
		w.WriteHeader(http.StatusNoContent)
	case "415":
		http.Error(w, "io.prometheus.write.v2.Request protobuf message is not accepted by this server", http.StatusUnsupportedMediaType)
	case "400":
		http.Error(w, "snappy: corrupt input or unknown message", http.StatusBadRequest)
	case "short":
		w.Header().Set(headerSamplesWritten, strconv.Itoa(max(len(series)-1, 0)))
		w.WriteHeader(http.StatusNoContent)
	case "partial":
		w.Header().Set(headerSamplesWritten, strconv.Itoa(len(series)/2))
		http.Error(w, "out of order sample", http.StatusBadRequest)
	}
}

func (rc *receiver) counts() (v1, v2, bodies, data int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.v1Samples, rc.v2Samples, rc.v2Bodies, rc.v2Data
}

func (rc *receiver) start(t *testing.T) string {
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	return "prom+http://" + strings.TrimPrefix(srv.URL, "http://") + "/api/v1/write"
}

// protocol=auto writes 2.0 to a target that says what it wrote, and 1.0
// to one that refuses 2.0 (415, or 400 to the empty probe) or answers it without saying (a 1.0
// server that read no series in it): the samples of every batch reach the
// target once, and no batch goes as 2.0 to a target not known to take
// it, whether Ping or a write comes first.
func TestNegotiate(t *testing.T) {
	schemas := []*sources.Schema{cpuSchema("cpu")}
	b := sources.NewSeriesBatch(schemas)
	for _, tc := range []struct {
		v2, protocol string
		want         Protocol
	}{
		{"write", "", Proto2},
		{"ignore", "", Proto1},
		{"415", "", Proto1},
		{"400", "", Proto1},
		{"write", "?protocol=1.0", Proto1},
		{"write", "?protocol=2.0", Proto2},
	} {
		for _, ping := range []bool{true, false} {
			rc := &receiver{t: t, v2: tc.v2}
			s := openSink(t, rc.start(t)+tc.protocol, sinks.Options{Schemas: schemas})
			ctx := context.Background()
			if ping {
				if err := s.Ping(ctx); err != nil {
					t.Fatalf("%s%s: Ping: %v", tc.v2, tc.protocol, err)
				}
			}
			g := &gen{devices: 5, start: time.Now(), step: time.Second}
			acked := 0
			for range 3 {
				g.fill(b, 20)
				if _, err := s.Write(ctx, b); err != nil {
					t.Fatalf("%s%s: %v", tc.v2, tc.protocol, err)
				}
				acked += b.NumValues
			}
			v1, v2, _, data := rc.counts()
			if got := s.Protocol(); got != tc.want {
				t.Errorf("%s%s (ping %t): writing %s, want %s", tc.v2, tc.protocol, ping, got, tc.want)
			}
			if v1+v2 != acked || tc.want == Proto1 && (v2 != 0 || data != 0) || tc.want == Proto2 && v1 != 0 {
				t.Errorf("%s%s (ping %t): %d samples acknowledged; the target took %d as 1.0, %d as 2.0; %d 2.0 requests had series",
					tc.v2, tc.protocol, ping, acked, v1, v2, data)
			}
		}
	}
}

// A target that stops taking 2.0 mid-run (a load balancer now sending to
// an older server): with protocol=auto the batch it turned down goes
// again as 1.0, once, and so does every batch after it.
func TestNegotiateFallBackMidRun(t *testing.T) {
	schemas := []*sources.Schema{cpuSchema("cpu")}
	b := sources.NewSeriesBatch(schemas)
	for _, then := range []string{"ignore", "415"} {
		rc := &receiver{t: t, v2: "write"}
		s := openSink(t, rc.start(t), sinks.Options{Schemas: schemas})
		ctx := context.Background()
		g := &gen{devices: 5, start: time.Now(), step: time.Second}
		acked := 0
		for i := range 4 {
			if i == 2 {
				rc.mu.Lock()
				rc.v2 = then
				rc.mu.Unlock()
			}
			g.fill(b, 20)
			if _, err := s.Write(ctx, b); err != nil {
				t.Fatalf("%s: batch %d: %v", then, i, err)
			}
			acked += b.NumValues
		}
		v1, v2, _, data := rc.counts()
		if s.Protocol() != Proto1 || v1+v2 != acked || v2 == 0 || v1 == 0 || data != 3 {
			t.Errorf("%s: writing %s; %d samples acknowledged, %d taken as 1.0, %d as 2.0; %d 2.0 requests with series, want 3",
				then, s.Protocol(), acked, v1, v2, data)
		}
	}
}

// protocol=2.0 does not fall back: a target that does not take 2.0 is a
// refusal that names what to do, at Ping (a configuration error) and at
// a write, and nothing is counted as written.
func TestProtocol2Refused(t *testing.T) {
	schemas := []*sources.Schema{cpuSchema("cpu")}
	b := sources.NewSeriesBatch(schemas)
	(&gen{devices: 3, start: time.Now(), step: time.Second}).fill(b, 6)
	for _, v2 := range []string{"ignore", "415"} {
		rc := &receiver{t: t, v2: v2}
		s := openSink(t, rc.start(t)+"?protocol=2.0", sinks.Options{Schemas: schemas})
		ctx := context.Background()
		if err := s.Ping(ctx); sinks.ClassOf(err) != sinks.Rejected || !strings.Contains(err.Error(), "protocol=1.0 or auto") {
			t.Errorf("%s: Ping: class %s: %v", v2, sinks.ClassOf(err), err)
		}
		_, err := s.Write(ctx, b)
		var se *StatusError
		if retry, _ := sinks.Retryable(err); sinks.ClassOf(err) != sinks.Rejected || retry || !errors.As(err, &se) || !se.NotV2 || se.Written != 0 {
			t.Errorf("%s: write: class %s, retry %t: %v", v2, sinks.ClassOf(err), retry, err)
		}
		if v1, _, _, _ := rc.counts(); v1 != 0 {
			t.Errorf("%s: %d samples sent as 1.0", v2, v1)
		}
	}
}

// A 2.0 write is acknowledged only when the target wrote every sample:
// a 2xx that says fewer is refused and not resent, and a 400 says how
// many the target kept.
func TestSamplesWritten(t *testing.T) {
	schemas := []*sources.Schema{cpuSchema("cpu")}
	b := sources.NewSeriesBatch(schemas)
	(&gen{devices: 3, start: time.Now(), step: time.Second}).fill(b, 6)
	for _, tc := range []struct {
		v2      string
		class   sinks.Class
		written int
	}{
		{"short", sinks.Rejected, b.NumValues - 1},
		{"partial", sinks.OutOfOrder, b.NumValues / 2},
	} {
		rc := &receiver{t: t, v2: tc.v2}
		s := openSink(t, rc.start(t)+"?protocol=2.0", sinks.Options{Schemas: schemas})
		_, err := s.Write(context.Background(), b)
		var se *StatusError
		if retry, _ := sinks.Retryable(err); sinks.ClassOf(err) != tc.class || retry || !errors.As(err, &se) || se.Written != tc.written || se.Samples != b.NumValues ||
			!strings.Contains(err.Error(), strconv.Itoa(tc.written)+" of "+strconv.Itoa(b.NumValues)+" samples written") {
			t.Errorf("%s: class %s, retry %t: %v (%+v)", tc.v2, sinks.ClassOf(err), retry, err, se)
		}
	}
}

// Workers that write at once before anything is decided ask once: one
// empty 2.0 request, then every batch as 2.0, each sample taken once.
func TestNegotiateConcurrent(t *testing.T) {
	schemas := []*sources.Schema{cpuSchema("cpu")}
	for _, v2 := range []string{"write", "ignore"} {
		rc := &receiver{t: t, v2: v2}
		s := openSink(t, rc.start(t), sinks.Options{Schemas: schemas, Workers: 4})
		var wg sync.WaitGroup
		var mu sync.Mutex
		acked := 0
		for w := range 4 {
			wg.Go(func() {
				b := sources.NewSeriesBatch(schemas)
				g := &gen{devices: 5, start: time.Now().Add(time.Duration(w) * time.Hour), step: time.Second}
				for range 5 {
					g.fill(b, 10)
					if _, err := s.Write(context.Background(), b); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					acked += b.NumValues
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		v1, v2n, bodies, data := rc.counts()
		if bodies-data != 1 || v1+v2n != acked || v2 == "ignore" && data != 0 {
			t.Errorf("%s: %d empty 2.0 requests, want 1; %d samples acknowledged, %d taken as 1.0, %d as 2.0; %d 2.0 requests with series",
				v2, bodies-data, acked, v1, v2n, data)
		}
	}
}
