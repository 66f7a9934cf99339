package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/soakd/soakd/internal/testserver"
)

func listen(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func post(t *testing.T, u, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func status(t *testing.T, base string) StatusWorkload {
	t.Helper()
	code, body := get(t, base+"/status")
	if code != 200 {
		t.Fatalf("/status: %d %s", code, body)
	}
	var st Status
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("/status is not JSON: %v\n%s", err, body)
	}
	return st.Workloads[0]
}

// eventually polls cond every 50 ms for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestHTTPEndpointsAndControl(t *testing.T) {
	p := testPlugins()
	l := listen(t)
	base := "http://" + l.Addr().String()
	cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "200", "SOAKD_SEQ_BATCH_SIZE", "10",
		"SOAKD_SEQ_TARGET", "null://?latency=1ms", "SOAKD_CONTROL_TOKEN", "s3cret-token"), p)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan runResult, 1)
	go func() { done <- runTest(ctx, cfg, p, l) }()
	defer func() {
		cancel()
		<-done
	}()

	eventually(t, "healthz", func() bool { c, _ := get(t, base+"/healthz"); return c == 200 })
	eventually(t, "readyz", func() bool { c, _ := get(t, base+"/readyz"); return c == 200 })
	eventually(t, "running at 200/s", func() bool { s := status(t, base); return s.State == "running" && s.TargetRate == 200 })

	// /metrics serves text by default and the native histograms in protobuf.
	// The gauges are refreshed every second.
	eventually(t, "soakd_target_rate in /metrics", func() bool {
		code, body := get(t, base+"/metrics")
		return code == 200 && strings.Contains(body, `soakd_target_rate{workload="seq"} 200`)
	})

	// /control: token required, compared exactly.
	if c, _ := post(t, base+"/control?rate=1000", ""); c != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", c)
	}
	if c, _ := post(t, base+"/control?rate=1000", "s3cret-tokeN"); c != http.StatusUnauthorized {
		t.Errorf("wrong token: %d, want 401", c)
	}
	if c, b := post(t, base+"/control?rate=fast", "s3cret-token"); c != http.StatusBadRequest || !strings.Contains(b, "not a rate") {
		t.Errorf("bad rate: %d %s", c, b)
	}
	if c, b := post(t, base+"/control?workload=nope&action=pause", "s3cret-token"); c != http.StatusBadRequest || !strings.Contains(b, "unknown") {
		t.Errorf("unknown workload: %d %s", c, b)
	}
	if c, b := post(t, base+"/control?rate=1000", "s3cret-token"); c != 200 {
		t.Fatalf("set rate: %d %s", c, b)
	}
	eventually(t, "target rate 1000", func() bool { return status(t, base).TargetRate == 1000 })
	eventually(t, "achieved rate near 1000", func() bool { a := status(t, base).Achieved; return a > 700 && a < 1300 })

	if c, b := post(t, base+"/control?action=pause", "s3cret-token"); c != 200 {
		t.Fatalf("pause: %d %s", c, b)
	}
	s := status(t, base)
	if s.State != "paused" || s.TargetRate != 0 {
		t.Fatalf("after pause: state %s target %v", s.State, s.TargetRate)
	}
	acked := s.Acked
	time.Sleep(300 * time.Millisecond)
	if a := status(t, base).Acked; a > acked+20 { // at most a batch in flight
		t.Errorf("paused workload kept writing: %d -> %d", acked, a)
	}
	if c, b := post(t, base+"/control?action=resume", "s3cret-token"); c != 200 {
		t.Fatalf("resume: %d %s", c, b)
	}
	eventually(t, "writing again", func() bool { return status(t, base).Acked > acked+100 })
}

func TestControlDisabledWithoutToken(t *testing.T) {
	p := testPlugins()
	l := listen(t)
	base := "http://" + l.Addr().String()
	cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "100", "SOAKD_SEQ_DURATION", "1s"), p)
	done := make(chan runResult, 1)
	go func() { done <- runTest(context.Background(), cfg, p, l) }()
	eventually(t, "healthz", func() bool { c, _ := get(t, base+"/healthz"); return c == 200 })
	if c, _ := post(t, base+"/control?rate=5", "anything"); c != http.StatusNotFound {
		t.Errorf("/control without SOAKD_CONTROL_TOKEN: %d, want 404", c)
	}
	<-done
}

// A real Prometheus scrapes soakd and reads the native histograms: the
// 99th percentile of the response latency comes back from PromQL.
func TestPrometheusScrapesNativeHistograms(t *testing.T) {
	if testing.Short() {
		t.Skip("real Prometheus, ~15 s")
	}
	p := testPlugins()
	l := listen(t)
	prom := testserver.Prometheus(t, time.Second, l.Addr().String())
	cfg := loadTest(t, testEnv("SOAKD_WORKLOADS", "seq", "SOAKD_SEQ_RATE", "2000", "SOAKD_SEQ_BATCH_SIZE", "10",
		"SOAKD_SEQ_TARGET", "null://?latency=5ms"), p)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan runResult, 1)
	go func() { done <- runTest(ctx, cfg, p, l) }()
	defer func() {
		cancel()
		<-done
	}()

	query := func(q string) (float64, bool) {
		code, body := get(t, prom.URL+"/api/v1/query?query="+url.QueryEscape(q))
		if code != 200 {
			t.Fatalf("query %s: %d %s", q, code, body)
		}
		var r struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil || len(r.Data.Result) == 0 {
			return 0, false
		}
		var v float64
		_, err := fmt.Sscan(r.Data.Result[0].Value[1].(string), &v)
		return v, err == nil
	}
	var p99, rows float64
	deadline := time.Now().Add(40 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(time.Second)
		var ok1, ok2 bool
		// No _bucket suffix: this only works on a native histogram.
		p99, ok1 = query(`histogram_quantile(0.99, rate(soakd_response_seconds{workload="seq"}[5s]))`)
		rows, ok2 = query(`soakd_rows_total{workload="seq"}`)
		if ok1 && ok2 && p99 > 0 && rows > 0 {
			break
		}
	}
	t.Logf("PromQL: response p99 %.4fs, rows %v", p99, rows)
	if !(p99 >= 0.004 && p99 < 0.5) {
		t.Errorf("native-histogram p99 = %v, want about 5 ms", p99)
	}
	if rows <= 0 {
		t.Errorf("soakd_rows_total not scraped")
	}
}
