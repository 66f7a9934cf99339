// Command rwpush measures a remote-write server's own ingest ceiling for
// bench/remotewrite.sh: it builds, before it sends anything, the very
// requests a soakd series workload would send (the same source, scale,
// seed, time range, workers and batch size, encoded by soakd's own
// remote-write encoder and compressed with snappy), then pushes them as
// fast as the server answers, one connection per worker, each worker
// sending its part of the devices in time order (as a soakd worker does,
// so the server takes every sample). What it costs per sample is the
// floor of any remote-write client; how fast the server takes them is
// its ceiling at that series count and batch size. -protocol 2.0 builds
// Remote-Write 2.0 requests with soakd's 2.0 encoder and sends them with
// 2.0's headers; a 2.0 answer must then say that every sample was
// written (X-Prometheus-Remote-Write-Samples-Written), or the request
// counts as refused.
//
//	go run ./bench/rwpush -url http://127.0.0.1:9090/api/v1/write -scale 100 \
//		-start 2026-01-01T00:00:00Z -end +1000s -workers 2 -batch 1000
//
// It prints one line of key=value figures: samples and requests sent,
// bytes, the encoding's seconds (not part of the push), the push's wall
// seconds, samples/s, and the process's user+system CPU seconds during
// the push. A request the server refuses is counted (errors=) and not
// resent; the first refusal's answer is printed to stderr.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/soakd/soakd/sinks/remotewrite"
	"github.com/soakd/soakd/sources"
	"github.com/soakd/soakd/sources/iot"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "rwpush:", err)
		os.Exit(1)
	}
}

// request is one pre-encoded WriteRequest.
type request struct {
	body    []byte
	samples int
}

func run() error {
	url := flag.String("url", "", "write endpoint, e.g. http://127.0.0.1:8428/api/v1/write")
	source := flag.String("source", "devops", "soakd series source (devops, iot, massive)")
	scale := flag.Int("scale", 100, "SCALE: devices")
	interval := flag.Duration("interval", 10*time.Second, "INTERVAL")
	start := flag.String("start", "", "START (RFC3339)")
	end := flag.String("end", "", "END (RFC3339 or +DURATION)")
	seed := flag.Uint64("seed", 1, "SEED")
	workers := flag.Int("workers", 2, "WORKERS: connections, each pushing its part of the devices")
	batch := flag.Int("batch", 1000, "BATCH_SIZE: rows per request")
	protocol := flag.String("protocol", "1.0", "Remote-Write version: 1.0 or 2.0")
	maxBytes := flag.Int64("max-bytes", 1<<30, "refuse a data set whose encoded requests take more memory than this")
	flag.Parse()
	if *url == "" || *start == "" || *end == "" {
		return errors.New("-url, -start and -end are required")
	}
	if *workers < 1 || *batch < 1 {
		return errors.New("-workers and -batch must be positive")
	}
	v2 := *protocol == "2.0"
	if !v2 && *protocol != "1.0" {
		return fmt.Errorf("-protocol %q: want 1.0 or 2.0", *protocol)
	}
	contentType, version := "application/x-protobuf", "0.1.0"
	if v2 {
		contentType, version = "application/x-protobuf;proto=io.prometheus.write.v2.Request", "2.0.0"
	}
	c := iot.DefaultConfig()
	c.Scale, c.Interval = *scale, *interval
	if err := c.Start.UnmarshalText([]byte(*start)); err != nil {
		return fmt.Errorf("-start: %w", err)
	}
	if err := c.End.UnmarshalText([]byte(*end)); err != nil {
		return fmt.Errorf("-end: %w", err)
	}
	src, err := iot.New(*source, c, *seed, sources.Shard{})
	if err != nil {
		return err
	}
	if _, ok := src.(sources.Sized); !ok {
		return errors.New("the data set is not finite: give -end")
	}

	t0 := time.Now()
	parts := make([][]request, *workers)
	var total int64
	for p := range *workers {
		st, err := src.Stream(p, *workers)
		if err != nil {
			return err
		}
		b := sources.NewSeriesBatch(src.Schemas())
		var enc remotewrite.Encoder
		var enc2 remotewrite.EncoderV2
		var buf []byte
		for done := false; !done; {
			b.Reset()
			if err := st.Fill(b, *batch, 0); err != nil {
				if !errors.Is(err, sources.ErrDone) {
					return err
				}
				done = true
			}
			buf = buf[:0]
			samples := 0
			if v2 {
				enc2.Reset()
				for _, t := range b.Tables {
					samples += enc2.AppendTable(t)
				}
				buf = enc2.AppendRequest(buf)
			} else {
				for _, t := range b.Tables {
					var n int
					buf, n = enc.AppendTable(buf, t)
					samples += n
				}
			}
			if samples == 0 {
				continue
			}
			z := remotewrite.Compress(nil, buf)
			total += int64(len(z))
			if total > *maxBytes {
				return fmt.Errorf("the encoded requests pass -max-bytes=%d: give a shorter -end or a smaller -scale", *maxBytes)
			}
			parts[p] = append(parts[p], request{body: z, samples: samples})
		}
	}
	encodeS := time.Since(t0).Seconds()

	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        *workers,
		MaxIdleConnsPerHost: *workers,
		DisableCompression:  true,
		WriteBufferSize:     64 << 10,
	}
	hc := &http.Client{Transport: tr, Timeout: time.Minute}
	var samples, requests, failed atomic.Int64
	var once sync.Once
	var wg sync.WaitGroup
	cpu0 := cpuSeconds()
	t1 := time.Now()
	for p := range *workers {
		wg.Add(1)
		go func(reqs []request) {
			defer wg.Done()
			for _, r := range reqs {
				req, err := http.NewRequest(http.MethodPost, *url, bytes.NewReader(r.body))
				if err != nil {
					once.Do(func() { fmt.Fprintln(os.Stderr, "rwpush:", err) })
					failed.Add(1)
					continue
				}
				h := req.Header
				h["Content-Encoding"] = []string{"snappy"}
				h["Content-Type"] = []string{contentType}
				h["X-Prometheus-Remote-Write-Version"] = []string{version}
				resp, err := hc.Do(req)
				if err != nil {
					once.Do(func() { fmt.Fprintln(os.Stderr, "rwpush:", err) })
					failed.Add(1)
					continue
				}
				msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
				resp.Body.Close()
				if resp.StatusCode/100 != 2 {
					once.Do(func() { fmt.Fprintf(os.Stderr, "rwpush: %s: %s\n", resp.Status, bytes.TrimSpace(msg)) })
					failed.Add(1)
					continue
				}
				if w := resp.Header.Get("X-Prometheus-Remote-Write-Samples-Written"); v2 && w != strconv.Itoa(r.samples) {
					once.Do(func() {
						fmt.Fprintf(os.Stderr, "rwpush: %s with %q of %d samples said written\n", resp.Status, w, r.samples)
					})
					failed.Add(1)
					continue
				}
				samples.Add(int64(r.samples))
				requests.Add(1)
			}
		}(parts[p])
	}
	wg.Wait()
	pushS := time.Since(t1).Seconds()
	cpu := cpuSeconds() - cpu0
	n := samples.Load()
	fmt.Printf("samples=%d requests=%d errors=%d bytes=%d encode_s=%.3f push_s=%.3f samples_per_s=%.0f push_cpu_s=%.3f cpu_ns_per_sample=%.0f\n",
		n, requests.Load(), failed.Load(), total, encodeS, pushS, float64(n)/pushS, cpu, cpu/float64(max(n, 1))*1e9)
	if failed.Load() > 0 {
		return fmt.Errorf("%d requests failed", failed.Load())
	}
	return nil
}

// cpuSeconds is the user+system CPU time this process has used.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
