package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"

	"github.com/soakd/soakd/charts"
	"github.com/soakd/soakd/internal/testserver"
	"github.com/soakd/soakd/report"
)

// soakSample is what the soak test reads of soakd's /metrics each second.
type soakSample struct {
	at                          time.Duration
	heap, rss                   float64 // bytes: Go heap in use (alloc), resident set
	goroutines, fds             float64
	pgConns, kvConns, scheduled float64
	kvScheduled, cpu            float64 // kv's units released; soakd's CPU seconds (user + system)
}

// TestSoakStability runs the real binary for a while at a high rate into
// real PostgreSQL and redis-server while everything that could leak is
// provoked: the rate changes through /control every few seconds, every
// connection is killed by the servers every 15 s (a reconnect storm), and
// redis-server restarts once. After a warm-up (the first quarter), the
// Go heap, goroutines, file descriptors and target connections must not
// grow: the last quarter within 10 % of the second. SOAKD_SOAK_DURATION
// makes it longer (scripts/soak.sh runs it for hours); SOAKD_SOAK_OUT
// names a directory for the samples (CSV) and their charts (SVG, PNG).
// soakd's CPU per unit scheduled is reported for the same quarters.
func TestSoakStability(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the soak test runs minutes")
	}
	duration := 150 * time.Second
	if s := os.Getenv("SOAKD_SOAK_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 40*time.Second {
			t.Fatalf("SOAKD_SOAK_DURATION=%q: want a duration of at least 40s", s)
		}
		duration = d
	}
	pg := testserver.Postgres(t)
	rd := testserver.Redis(t)
	port := testserver.FreePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	const token = "soak-token"
	cmd := exec.Command(os.Args[0], "--listen", fmt.Sprintf("127.0.0.1:%d", port))
	cmd.Env = append(os.Environ(), "SOAKD_TEST_MAIN=1", "SOAKD_LOG_FORMAT=json", "SOAKD_PROGRESS_INTERVAL=0",
		"SOAKD_CONTROL_TOKEN="+token, "SOAKD_WORKLOADS=devops,kv", "SOAKD_SHUTDOWN_GRACE=10s",
		"SOAKD_DEVOPS_TARGET="+withParam(t, pg.URL, "application_name", "soakd-soak"), "SOAKD_DEVOPS_RATE=20000",
		"SOAKD_DEVOPS_BATCH_SIZE=500", "SOAKD_DEVOPS_WORKERS=4", "SOAKD_DEVOPS_SCALE=200", "SOAKD_DEVOPS_TIMEOUT=5s",
		"SOAKD_KV_TARGET="+rd.URL, "SOAKD_KV_RATE=5000", "SOAKD_KV_WORKERS=4", "SOAKD_KV_RECORDS=10000",
		"SOAKD_KV_LOAD_RATE=max", "SOAKD_KV_WORKLOAD=a", "SOAKD_KV_TIMEOUT=5s")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	ctx := context.Background()
	pgAdmin := testserver.PGConn(t, pg.URL)
	rdAdmin := goredis.NewClient(&goredis.Options{Addr: rd.Addr, Protocol: 2, DisableIdentity: true})
	defer rdAdmin.Close()

	hc := &http.Client{Timeout: 5 * time.Second}
	control := func(w, rate string) {
		req, _ := http.NewRequest(http.MethodPost, base+"/control?workload="+w+"&rate="+rate, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err != nil {
			t.Errorf("POST /control: %v", err)
			return
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("POST /control %s rate=%s: %s", w, rate, resp.Status)
		}
	}
	// The soak starts once both workloads run their run phase: kv loads
	// its records first, and /control answers 409 until a workload runs,
	// which on a loaded machine can take longer than the first rate change.
	waitRun := time.Now().Add(2 * time.Minute)
	for running := false; !running; {
		select {
		case err := <-exited:
			t.Fatalf("soakd exited before its workloads ran: %v\n%s", err, tail(errb.String(), 3000))
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(waitRun) {
			t.Fatalf("the workloads did not reach their run phase within 2 minutes\n%s", tail(errb.String(), 3000))
		}
		running = soakRunning(hc, base, "devops", "kv")
	}
	var samples []soakSample
	var slog *soakLog
	if dir := os.Getenv("SOAKD_SOAK_OUT"); dir != "" {
		slog = openSoakLog(t, dir)
		defer slog.close()
	}
	start := time.Now()
	restarted := false
	// The target's tables are emptied every 10 minutes (twice in a short
	// soak): at 20,000 rows a second PostgreSQL keeps ~15 GB an hour,
	// which would fill the disk in a soak of hours. soakd sees a table
	// lock for a moment, as under a retention job.
	emptyEvery := int(min(10*time.Minute, duration/3) / time.Second)
	emptied := 0
	for tick := 1; time.Since(start) < duration; tick++ {
		// A machine that stalled (out of memory, a paused VM) skips the
		// ticks it missed, as a time.Ticker does: taken in a burst, they
		// would sample the same second hundreds of times and send a
		// storm of rate changes and reconnects no soak is meant to see.
		tick = max(tick, int(time.Since(start)/time.Second))
		select {
		case err := <-exited:
			t.Fatalf("soakd exited during the soak: %v\n%s", err, tail(errb.String(), 3000))
		case <-time.After(time.Until(start.Add(time.Duration(tick) * time.Second))):
		}
		if s, ok := scrapeSoak(hc, base); ok {
			s.at = time.Since(start)
			samples = append(samples, s)
			if slog != nil {
				slog.add(t, s)
			}
		}
		if tick%emptyEvery == 0 {
			if err := emptyTables(ctx, pgAdmin); err != nil {
				t.Errorf("emptying the target's tables: %v", err)
			} else {
				emptied++
			}
		}
		switch {
		case tick%5 == 0: // a new rate for each workload, 50–100 % of the first
			control("devops", strconv.Itoa(10000+rand.IntN(10001)))
			control("kv", strconv.Itoa(2500+rand.IntN(2501)))
		case tick%15 == 2: // a reconnect storm: the servers drop every client
			if _, err := pgAdmin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
				WHERE application_name = 'soakd-soak' AND pid <> pg_backend_pid()`); err != nil {
				t.Logf("terminating PostgreSQL sessions: %v", err)
			}
			if err := rdAdmin.Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").Err(); err != nil {
				t.Logf("CLIENT KILL: %v", err)
			}
		case !restarted && time.Since(start) > duration/3:
			restarted = true
			rd.Restart(t)
			rdAdmin.Close()
			rdAdmin = goredis.NewClient(&goredis.Options{Addr: rd.Addr, Protocol: 2, DisableIdentity: true})
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("soakd after SIGTERM: %v\n%s", err, tail(errb.String(), 3000))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("soakd did not exit within 30 s of SIGTERM")
	}
	if dir := os.Getenv("SOAKD_SOAK_OUT"); dir != "" {
		writeSoakCharts(t, dir, samples)
	}

	if emptied < 2 {
		t.Errorf("the target's tables were emptied %d times, want 2 or more", emptied)
	}

	// Every phase's counts add up after all that.
	sums := regexp.MustCompile(`scheduled (\d+) = acknowledged (\d+) \+ failed (\d+) \+ dropped (\d+) \+ in flight (\d+)`).
		FindAllStringSubmatch(out.String(), -1)
	if len(sums) < 2 {
		t.Fatalf("want the accounting line of both workloads in the summary:\n%s", out.String())
	}
	for _, m := range sums {
		n := func(i int) int64 { v, _ := strconv.ParseInt(m[i], 10, 64); return v }
		if n(1) != n(2)+n(3)+n(4)+n(5) {
			t.Errorf("counts do not add up: %s", m[0])
		}
		if n(2) == 0 {
			t.Errorf("nothing acknowledged: %s", m[0])
		}
	}

	// The storms were felt: both workloads counted connection errors.
	if n := strings.Count(out.String(), "errors (failed attempts): connection "); n < 2 {
		t.Errorf("connection errors in %d workloads' summaries, want both: the reconnect storms did not happen?\n%s", n, out.String())
	}

	if len(samples) < int(duration/time.Second)*3/4 {
		t.Fatalf("only %d samples of /metrics in %v", len(samples), duration)
	}
	q := len(samples) / 4
	early, late := samples[q:2*q], samples[len(samples)-q:]
	logSoak(t, len(samples), "second quarter / last quarter", early, late)
	if e, l, ok := soakHours(samples); ok {
		logSoak(t, len(samples), "second hour / last hour", e, l)
	}
	// The heap's minimum over a quarter is its live size after a GC: the
	// garbage between collections depends on the rate, a leak does not.
	// Counts may wobble by a connection being replaced as it is sampled.
	grew := func(what string, a, b, slack float64) {
		if b > a*1.10+slack {
			t.Errorf("%s grew after warm-up: %.0f in the second quarter, %.0f in the last (more than 10 %%)", what, a, b)
		}
	}
	grew("Go heap (bytes)", minOf(early, heapOf), minOf(late, heapOf), 1<<20)
	grew("goroutines", maxOf(early, goroutinesOf), maxOf(late, goroutinesOf), 2)
	grew("open files", maxOf(early, fdsOf), maxOf(late, fdsOf), 2)
	// A connection is opened when a worker needs one, so how many were
	// open in a quarter follows how long writes took then (2 in a second
	// quarter of quick writes, 5 in a slow last one, on a loaded
	// machine): a leak is more than the 4 workers and soakd's other
	// connections (the target watch, a probe) hold, as at the end below,
	// not more than the second quarter happened to need.
	const most = 4 + 2
	grew("PostgreSQL connections", max(maxOf(early, pgConnsOf), most), maxOf(late, pgConnsOf), 1)
	grew("Redis connections", max(maxOf(early, kvConnsOf), most), maxOf(late, kvConnsOf), 1)
	last := samples[len(samples)-1]
	if last.pgConns < 1 || last.pgConns > 4+2 || last.kvConns < 1 || last.kvConns > 4+2 {
		t.Errorf("connections at the end: devops %.0f, kv %.0f; want 1..WORKERS+2 each", last.pgConns, last.kvConns)
	}
}

// emptyTables truncates every table of the target's public schema, at
// least one, as a retention job would drop old data.
func emptyTables(ctx context.Context, pg *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	rows, err := pg.Query(ctx, `SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = 'public'`)
	if err != nil {
		return err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return errors.New("no table in the public schema: where did the rows go?")
	}
	_, err = pg.Exec(ctx, "TRUNCATE "+strings.Join(names, ", "))
	return err
}

// logSoak logs the figures of two stretches of a soak side by side.
func logSoak(t *testing.T, total int, what string, early, late []soakSample) {
	t.Helper()
	t.Logf("%d samples; %s: heap (min) %.1f / %.1f MiB, goroutines (max) %.0f / %.0f, fds (max) %.0f / %.0f, "+
		"connections (max) devops %.0f / %.0f kv %.0f / %.0f, RSS (max) %.1f / %.1f MiB, CPU per unit scheduled %.2f / %.2f µs",
		total, what,
		minOf(early, heapOf)/(1<<20), minOf(late, heapOf)/(1<<20), maxOf(early, goroutinesOf), maxOf(late, goroutinesOf),
		maxOf(early, fdsOf), maxOf(late, fdsOf), maxOf(early, pgConnsOf), maxOf(late, pgConnsOf),
		maxOf(early, kvConnsOf), maxOf(late, kvConnsOf), maxOf(early, rssOf)/(1<<20), maxOf(late, rssOf)/(1<<20),
		cpuPerUnit(early)*1e6, cpuPerUnit(late)*1e6)
}

// soakHours is the second hour of a soak and its last, for a soak of at
// least two and a half hours (shorter, the two would mostly overlap).
func soakHours(samples []soakSample) (second, last []soakSample, ok bool) {
	if len(samples) == 0 || samples[len(samples)-1].at < 150*time.Minute {
		return nil, nil, false
	}
	end := samples[len(samples)-1].at
	for _, s := range samples {
		if s.at >= time.Hour && s.at < 2*time.Hour {
			second = append(second, s)
		}
		if s.at >= end-time.Hour {
			last = append(last, s)
		}
	}
	return second, last, len(second) > 1 && len(last) > 1
}

// cpuPerUnit is soakd's CPU seconds per unit (row or operation) the
// schedules of both workloads released over the samples. It is reported,
// not asserted: it moves with whatever else the machine runs.
func cpuPerUnit(s []soakSample) float64 {
	a, b := s[0], s[len(s)-1]
	units := b.scheduled + b.kvScheduled - a.scheduled - a.kvScheduled
	if units <= 0 {
		return 0
	}
	return (b.cpu - a.cpu) / units
}

func heapOf(s soakSample) float64       { return s.heap }
func rssOf(s soakSample) float64        { return s.rss }
func goroutinesOf(s soakSample) float64 { return s.goroutines }
func fdsOf(s soakSample) float64        { return s.fds }
func pgConnsOf(s soakSample) float64    { return s.pgConns }
func kvConnsOf(s soakSample) float64    { return s.kvConns }

func minOf(s []soakSample, f func(soakSample) float64) float64 {
	m := f(s[0])
	for _, x := range s[1:] {
		m = min(m, f(x))
	}
	return m
}

func maxOf(s []soakSample, f func(soakSample) float64) float64 {
	m := f(s[0])
	for _, x := range s[1:] {
		m = max(m, f(x))
	}
	return m
}

// soakRunning reports whether /status shows each named workload running
// its run phase.
func soakRunning(hc *http.Client, base string, names ...string) bool {
	resp, err := hc.Get(base + "/status")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var st report.Status
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return false
	}
	n := 0
	for _, w := range st.Workloads {
		if slices.Contains(names, w.Name) && w.State == "running" && w.Phase == "run" {
			n++
		}
	}
	return n == len(names)
}

// scrapeSoak reads the soak's sample from /metrics.
func scrapeSoak(hc *http.Client, base string) (soakSample, bool) {
	resp, err := hc.Get(base + "/metrics")
	if err != nil {
		return soakSample{}, false
	}
	defer resp.Body.Close()
	var s soakSample
	seen := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, val, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			continue
		}
		var dst *float64
		switch name {
		case "go_memstats_heap_alloc_bytes":
			dst = &s.heap
		case "process_resident_memory_bytes":
			dst = &s.rss
		case "go_goroutines":
			dst = &s.goroutines
		case "process_open_fds":
			dst = &s.fds
		case `soakd_target_connections{workload="devops"}`:
			dst = &s.pgConns
		case `soakd_target_connections{workload="kv"}`:
			dst = &s.kvConns
		case `soakd_scheduled_total{workload="devops"}`:
			dst = &s.scheduled
		case `soakd_scheduled_total{workload="kv"}`:
			dst = &s.kvScheduled
		case "process_cpu_seconds_total":
			dst = &s.cpu
		}
		if dst != nil {
			*dst = v
			seen++
		}
	}
	return s, seen == 9
}

// soakColumns is the header of soak.csv; soakSample.row its rows.
var soakColumns = []string{"seconds", "heap_bytes", "rss_bytes", "goroutines", "open_fds", "pg_connections",
	"redis_connections", "devops_scheduled", "kv_scheduled", "cpu_seconds"}

func (s soakSample) row() []string {
	return []string{strconv.FormatFloat(s.at.Seconds(), 'f', 1, 64), fmt.Sprint(s.heap), fmt.Sprint(s.rss),
		fmt.Sprint(s.goroutines), fmt.Sprint(s.fds), fmt.Sprint(s.pgConns), fmt.Sprint(s.kvConns),
		fmt.Sprint(s.scheduled), fmt.Sprint(s.kvScheduled), fmt.Sprint(s.cpu)}
}

// parseSoakRow is the sample a row of soak.csv holds.
func parseSoakRow(rec []string) (soakSample, error) {
	if len(rec) != len(soakColumns) {
		return soakSample{}, fmt.Errorf("%d fields, want %d", len(rec), len(soakColumns))
	}
	v := make([]float64, len(rec))
	for i, f := range rec {
		x, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return soakSample{}, fmt.Errorf("%s: %w", soakColumns[i], err)
		}
		v[i] = x
	}
	return soakSample{at: time.Duration(v[0] * float64(time.Second)), heap: v[1], rss: v[2], goroutines: v[3], fds: v[4],
		pgConns: v[5], kvConns: v[6], scheduled: v[7], kvScheduled: v[8], cpu: v[9]}, nil
}

// soakLog appends each sample to soak.csv as it is taken, so a soak that
// is stopped before its end (a killed job, a machine taken away) leaves
// what it measured; TestSoakCharts draws the charts of such a file.
type soakLog struct {
	f *os.File
	w *csv.Writer
}

func openSoakLog(t *testing.T, dir string) *soakLog {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "soak.csv"))
	if err != nil {
		t.Fatal(err)
	}
	l := &soakLog{f: f, w: csv.NewWriter(f)}
	l.write(t, soakColumns)
	return l
}

func (l *soakLog) add(t *testing.T, s soakSample) { l.write(t, s.row()) }

func (l *soakLog) write(t *testing.T, rec []string) {
	t.Helper()
	if err := l.w.Write(rec); err != nil {
		t.Fatalf("soak.csv: %v", err)
	}
	if l.w.Flush(); l.w.Error() != nil {
		t.Fatalf("soak.csv: %v", l.w.Error())
	}
}

func (l *soakLog) close() { _ = l.f.Close() }

// TestSoakCharts draws the charts of a soak.csv (SOAKD_SOAK_CSV), one
// written by a soak stopped before its end included, into SOAKD_SOAK_OUT
// (default: the file's directory), and logs its figures. It is skipped
// without SOAKD_SOAK_CSV.
func TestSoakCharts(t *testing.T) {
	path := os.Getenv("SOAKD_SOAK_CSV")
	if path == "" {
		t.Skip("SOAKD_SOAK_CSV names the soak.csv to draw")
	}
	samples, err := readSoakCSV(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) < 8 {
		t.Fatalf("%s: %d samples, want at least 8", path, len(samples))
	}
	dir := os.Getenv("SOAKD_SOAK_OUT")
	if dir == "" {
		dir = filepath.Dir(path)
	}
	q := len(samples) / 4
	logSoak(t, len(samples), "second quarter / last quarter", samples[q:2*q], samples[len(samples)-q:])
	if e, l, ok := soakHours(samples); ok {
		logSoak(t, len(samples), "second hour / last hour", e, l)
	}
	t.Logf("%s: %d samples over %v", path, len(samples), samples[len(samples)-1].at.Round(time.Second))
	writeSoakCharts(t, dir, samples)
}

// readSoakCSV reads the samples of a soak.csv; a last line cut short (the
// soak stopped while writing it) is left out.
func readSoakCSV(path string) ([]soakSample, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(recs) == 0 || !slices.Equal(recs[0], soakColumns) {
		return nil, fmt.Errorf("%s: want the header %q", path, strings.Join(soakColumns, ","))
	}
	recs = recs[1:]
	if len(recs) > 0 && !bytes.HasSuffix(data, []byte("\n")) {
		// Every row is written with its newline: one without was cut
		// short, even where what is left of it still parses.
		recs = recs[:len(recs)-1]
	}
	samples := make([]soakSample, 0, len(recs))
	for i, rec := range recs {
		s, err := parseSoakRow(rec)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, i+2, err)
		}
		samples = append(samples, s)
	}
	return samples, nil
}

// sampleGap says whether no sample was taken for a while (the machine
// stalled) before samples[i]: the charts' lines break there rather than
// join the two sides.
func sampleGap(samples []soakSample, i int) bool {
	return i > 0 && samples[i].at-samples[i-1].at > 10*time.Second
}

// cpuMinutes is the CPU per unit scheduled over each minute (each
// window's first and last sample, in µs) at the window's end. Windows
// are by time: samples taken in a burst after a stall would otherwise
// make a "minute" of a fraction of a second. No window spans a gap in
// the samples: there the line breaks (a NaN).
func cpuMinutes(samples []soakSample) (x, y []float64) {
	for i, j := 1, 0; i < len(samples); i++ {
		if sampleGap(samples, i) {
			x, y = append(x, samples[i].at.Seconds()), append(y, math.NaN())
			j = i
			continue
		}
		if samples[i].at-samples[j].at >= time.Minute {
			x = append(x, samples[i].at.Seconds())
			y = append(y, cpuPerUnit(samples[j:i+1])*1e6)
			j = i
		}
	}
	return x, y
}

// writeSoakCharts writes charts of memory, of counts and of CPU per unit
// over time (soak-memory.svg/.png, soak-counts.svg/.png,
// soak-cpu.svg/.png) in dir.
func writeSoakCharts(t *testing.T, dir string, samples []soakSample) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	broken := func(i int) bool { return sampleGap(samples, i) }
	var x []float64
	col := func(f func(soakSample) float64) []float64 {
		var v []float64
		for i, s := range samples {
			if broken(i) {
				v = append(v, math.NaN())
			}
			v = append(v, f(s))
		}
		return v
	}
	for i, s := range samples {
		if broken(i) {
			x = append(x, (samples[i-1].at.Seconds()+s.at.Seconds())/2)
		}
		x = append(x, s.at.Seconds())
	}
	files := map[string][]byte{}
	mem := &charts.Chart{ID: "soak-memory", Title: "soakd's memory over the soak", Width: 900,
		X: charts.Axis{Unit: charts.Elapsed}, Y: charts.Axis{Unit: charts.Bytes, ZeroBased: true},
		Lines: []charts.Line{{Name: "resident set", X: x, Y: col(rssOf)}, {Name: "Go heap in use", X: x, Y: col(heapOf)}}}
	counts := &charts.Chart{ID: "soak-counts", Title: "goroutines, open files and target connections", Width: 900,
		X: charts.Axis{Unit: charts.Elapsed}, Y: charts.Axis{ZeroBased: true},
		Lines: []charts.Line{{Name: "goroutines", X: x, Y: col(goroutinesOf)}, {Name: "open files", X: x, Y: col(fdsOf)},
			{Name: "PostgreSQL connections", X: x, Y: col(pgConnsOf)}, {Name: "Redis connections", X: x, Y: col(kvConnsOf)}}}
	cx, cy := cpuMinutes(samples)
	cpu := &charts.Chart{ID: "soak-cpu", Title: "soakd's CPU per unit scheduled (µs), each minute", Width: 900,
		X: charts.Axis{Unit: charts.Elapsed}, Y: charts.Axis{ZeroBased: true},
		Lines: []charts.Line{{Name: "CPU µs per row or operation", X: cx, Y: cy}}}
	for _, c := range []*charts.Chart{mem, counts, cpu} {
		files[c.ID+".svg"] = c.SVG()
		png, err := c.PNG()
		if err != nil {
			t.Fatalf("%s.png: %v", c.ID, err)
		}
		files[c.ID+".png"] = png
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("samples and charts in %s", dir)
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// withParam is raw with the query parameter k=v added.
func withParam(t *testing.T, raw, k, v string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(k, v)
	u.RawQuery = q.Encode()
	return u.String()
}

// A soak whose machine stalled for ten minutes, then took the missed
// samples in a burst (as soakd's soak did before it skipped them): each
// point of the CPU chart still stands for a minute, none spans the gap,
// and the line breaks there.
func TestSoakCPUMinutesAcrossAStall(t *testing.T) {
	var samples []soakSample
	add := func(at time.Duration) {
		// 10,000 units and 0.1 s of CPU a second: 10 µs per unit.
		samples = append(samples, soakSample{at: at, scheduled: at.Seconds() * 8000, kvScheduled: at.Seconds() * 2000, cpu: at.Seconds() / 10})
	}
	for s := 0; s <= 180; s++ {
		add(time.Duration(s) * time.Second)
	}
	for i := range 600 { // the burst: 600 samples in 0.6 s after 10 minutes
		add(780*time.Second + time.Duration(i)*time.Millisecond)
	}
	for s := 781; s <= 960; s++ {
		add(time.Duration(s) * time.Second)
	}
	x, y := cpuMinutes(samples)
	gaps := 0
	for i := range x {
		if math.IsNaN(y[i]) {
			gaps++
			continue
		}
		if math.Abs(y[i]-10) > 0.01 {
			t.Errorf("at %.1fs: %.2f µs per unit, want 10", x[i], y[i])
		}
		if i > 0 && !math.IsNaN(y[i-1]) && x[i]-x[i-1] < 60 {
			t.Errorf("a window of %.1fs, ending at %.1fs", x[i]-x[i-1], x[i])
		}
	}
	if gaps != 1 || len(x) != 3+1+3 {
		t.Errorf("%d points (%v), %d gaps; want 3 minutes, a gap and 3 minutes", len(x), x, gaps)
	}
}

// TestSoakCSVKeepsWhatWasMeasured writes samples as a soak does, cuts the
// last line short as a soak killed mid-write would, and reads back every
// whole sample.
func TestSoakCSVKeepsWhatWasMeasured(t *testing.T) {
	dir := t.TempDir()
	l := openSoakLog(t, dir)
	want := []soakSample{
		{at: 1500 * time.Millisecond, heap: 11 << 20, rss: 53 << 20, goroutines: 31, fds: 33, pgConns: 5, kvConns: 6, scheduled: 20000, kvScheduled: 5000, cpu: 0.25},
		{at: 2500 * time.Millisecond, heap: 12 << 20, rss: 54 << 20, goroutines: 32, fds: 34, pgConns: 4, kvConns: 5, scheduled: 40000, kvScheduled: 10000, cpu: 0.5},
		{at: 3 * time.Second, heap: 1, rss: 2, goroutines: 3, fds: 4, pgConns: 5, kvConns: 6, scheduled: 7, kvScheduled: 8, cpu: 1234.5},
	}
	for _, s := range want {
		l.add(t, s)
	}
	l.close()
	path := filepath.Join(dir, "soak.csv")
	got, err := readSoakCSV(path)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("read back %+v, want %+v", got, want)
	}
	data, _ := os.ReadFile(path)
	// Cut short anywhere: a line that lost its newline only, or one whose
	// last number lost digits (it still parses), or fields.
	for _, cut := range []int{1, 2, 6} {
		if err := os.WriteFile(path, data[:len(data)-cut], 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err = readSoakCSV(path); err != nil {
			t.Fatalf("a last line cut %d bytes short: %v", cut, err)
		}
		if !slices.Equal(got, want[:2]) {
			t.Fatalf("a last line cut %d bytes short: read back %+v, want the first two", cut, got)
		}
	}
	// A damaged line other than the last is an error, not a gap.
	if err := os.WriteFile(path, bytes.Replace(data, []byte("1.5,"), []byte("x,"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readSoakCSV(path); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("a damaged first sample: err = %v, want one naming line 2", err)
	}
}
