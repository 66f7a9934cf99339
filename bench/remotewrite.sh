#!/usr/bin/env bash
# soakd's remote-write sink against each server's own ingest ceiling, side by
# side on VictoriaMetrics and Prometheus 2.42 (--web.enable-remote-write-
# receiver): the devops source (TSBS cpu-only: 10 fields per host, so
# SCALE x 10 series, labels hostname, region, datacenter, ...), SCALE
# (1000) hosts for ROUNDS (200) readings 10 s apart (2,000,000 samples),
# WORKERS (2) workers = connections, BATCH_SIZE (1000) rows = 10,000
# samples per request, closed loop (RATE=max).
#
#   bench/remotewrite.sh
#   RUNS=5 TARGETS=victoria SCALE=2000 bench/remotewrite.sh
#
# The peer the project wants here is avalanche's remote-write mode
# (github.com/prometheus-community/avalanche), but the Go module proxy this
# machine reaches does not serve it (403), so it is not built. In its place
# each run measures the server's own ceiling: bench/rwpush builds the very
# requests soakd sends (the same source, seed, time range, workers and batch
# size, encoded by soakd's remote-write encoder and compressed with snappy)
# before it sends anything, then pushes them as fast as the server answers,
# one connection per worker, each worker's devices in time order as in
# soakd. Its samples/s is what the server takes when the client costs
# (nearly) nothing; soakd/ceiling is how close soakd comes. Its CPU per
# sample is the push alone (HTTP and the connection), the floor of any
# client, not a peer's figure: soakd also generates and encodes every
# sample, so "half the peer's CPU per sample" cannot be judged against it.
#
# Each load gets a fresh server (data under OUT). Per load: samples the
# server holds afterwards (count_over_time over the data set, after a
# flush on VictoriaMetrics), samples/s (soakd: values / seconds of its run
# phase from its summary; rwpush: samples / seconds of its push), the
# client's CPU (soakd: the whole process, user+sys; rwpush: its process
# during the push, from getrusage) and the server's (utime+stime from
# /proc/PID/stat, from just before the client starts to when it exits)
# per sample. Runs alternate tools, each right after the other; the
# summary gives min/median/max per target and tool, and soakd/ceiling of
# the medians. Client and server share the machine: compare ratios from
# one run of this script, and note the load average it prints.
#
# Env: RUNS=3                  rounds (each: soakd then rwpush, per target)
#      TARGETS="victoria prometheus"
#      SCALE=1000 ROUNDS=200   hosts, readings per host (INTERVAL 10s)
#      WORKERS=2 BATCH_SIZE=1000 SEED=7
#      SOAKD_BIN               soakd binary (default: built from ./cmd/soakd)
#      PROMETHEUS_BIN          default: prometheus on PATH
#      VM_BIN                  default: victoria-metrics in $(go env GOPATH)/bin or on PATH
#      PROM_PORT=59090 VM_PORT=58428
#      BENCH_TIMEOUT=600       seconds per load before it is killed
#      OUT                     logs and server data (default under PEERS_RUN)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PEERS_DIR=${PEERS_DIR:-$root/../shared/peers}
[ -d "$PEERS_DIR" ] || PEERS_DIR=/work/shared/peers
# shellcheck source=/dev/null
. "$PEERS_DIR/lib.sh"

RUNS=${RUNS:-3}
TARGETS=${TARGETS:-victoria prometheus}
SCALE=${SCALE:-1000}
ROUNDS=${ROUNDS:-200}
WORKERS=${WORKERS:-2}
BATCH_SIZE=${BATCH_SIZE:-1000}
SEED=${SEED:-7}
PROM_PORT=${PROM_PORT:-59090}
VM_PORT=${VM_PORT:-58428}
T=${BENCH_TIMEOUT:-600}
INTERVAL=10
OUT=${OUT:-$PEERS_RUN/logs/bench-remotewrite-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
SAMPLES=$((SCALE * ROUNDS * 10))
# A recent start, so that neither server's retention nor Prometheus' head
# (which refuses samples an hour older than its newest) turns samples away.
START=$(date -u -d "@$((($(date +%s) - ROUNDS * INTERVAL - 600) / 60 * 60))" +%Y-%m-%dT%H:%M:%SZ)
END_S=$(($(date -u -d "$START" +%s) + ROUNDS * INTERVAL))
command -v jq >/dev/null || die "no jq"
command -v curl >/dev/null || die "no curl"
for t in $TARGETS; do
	case $t in victoria | prometheus) ;; *) die "TARGETS: $t: want victoria and/or prometheus" ;; esac
done

# ---- tools -------------------------------------------------------------------
if [ -z "${SOAKD_BIN:-}" ]; then
	SOAKD_BIN=$OUT/soakd
	log "building soakd"
	(cd "$root" && go build -o "$SOAKD_BIN" ./cmd/soakd) || die "go build ./cmd/soakd failed"
fi
[ -x "$SOAKD_BIN" ] || die "SOAKD_BIN=$SOAKD_BIN is not executable"
RWPUSH=$OUT/rwpush
(cd "$root" && go build -o "$RWPUSH" ./bench/rwpush) || die "go build ./bench/rwpush failed"
PROMETHEUS_BIN=${PROMETHEUS_BIN:-$(command -v prometheus || true)}
if [ -z "${VM_BIN:-}" ]; then
	VM_BIN=$(go env GOPATH)/bin/victoria-metrics
	[ -x "$VM_BIN" ] || VM_BIN=$(command -v victoria-metrics || true)
fi
for t in $TARGETS; do
	case $t in
	prometheus) [ -x "$PROMETHEUS_BIN" ] || die "no prometheus (apt-get install prometheus, or set PROMETHEUS_BIN)" ;;
	victoria) [ -x "$VM_BIN" ] || die "no victoria-metrics (scripts/install-test-deps.sh, or set VM_BIN)" ;;
	esac
done

# ---- servers -----------------------------------------------------------------
port_of() { case $1 in prometheus) echo "$PROM_PORT" ;; victoria) echo "$VM_PORT" ;; esac; }
srv_pid=""
stop_server() {
	if [ -n "$srv_pid" ]; then
		kill "$srv_pid" 2>/dev/null
		wait "$srv_pid" 2>/dev/null
		srv_pid=""
	fi
}
trap stop_server EXIT
trap 'exit 130' INT TERM

# start_server TARGET RUN_DIR: a fresh server with its data in RUN_DIR.
start_server() {
	local t=$1 dir=$2 port ready i
	port=$(port_of "$t")
	if curl -s -o /dev/null "http://127.0.0.1:$port/"; then
		die "port $port is taken (set $([ "$t" = prometheus ] && echo PROM_PORT || echo VM_PORT))"
	fi
	rm -rf "$dir" && mkdir -p "$dir"
	case $t in
	prometheus)
		printf 'global: {}\n' >"$dir/prometheus.yml"
		"$PROMETHEUS_BIN" --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
			--storage.tsdb.retention.time=100y --web.enable-remote-write-receiver --log.level=warn \
			--web.listen-address="127.0.0.1:$port" >"$dir/server.log" 2>&1 &
		ready=/-/ready
		;;
	victoria)
		"$VM_BIN" -httpListenAddr="127.0.0.1:$port" -storageDataPath="$dir/data" -retentionPeriod=100y \
			-loggerLevel=ERROR >"$dir/server.log" 2>&1 &
		ready=/health
		;;
	esac
	srv_pid=$!
	for ((i = 0; i < 300; i++)); do
		curl -sf -o /dev/null "http://127.0.0.1:$port$ready" && return 0
		kill -0 "$srv_pid" 2>/dev/null || die "$t exited at start, see $dir/server.log"
		sleep 0.1
	done
	stop_server # run is in a pipeline's subshell, which the EXIT trap does not cover
	die "$t not ready after 30 s, see $dir/server.log"
}

# server_cpu: the server's utime+stime in seconds.
tck=$(getconf CLK_TCK)
server_cpu() { awk -v t="$tck" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$srv_pid/stat" 2>/dev/null; }

# stored TARGET: the samples of the data set the server holds.
stored() {
	local port
	port=$(port_of "$1")
	[ "$1" = victoria ] && curl -s -o /dev/null "http://127.0.0.1:$port/internal/force_flush" && sleep 1
	local f q=""
	# One count per metric: count_over_time drops the metric name, and
	# Prometheus refuses a vector with two series of one label set.
	for f in user system idle nice iowait irq softirq steal guest guest_nice; do
		q="$q${q:+ + }sum(count_over_time(cpu_usage_$f[$(((ROUNDS + 1) * INTERVAL))s]))"
	done
	curl -s "http://127.0.0.1:$port/api/v1/query" --data-urlencode "query=$q" --data-urlencode "time=$END_S" |
		jq -r '.data.result[0].value[1] // empty' 2>/dev/null
}

# ---- one load ----------------------------------------------------------------
# run TARGET TOOL I: prints one result line.
run() {
	local t=$1 tool=$2 i=$3 dir=$OUT/$1-$2-$3 url s0 s1 tf n rate secs cpu line
	url=http://127.0.0.1:$(port_of "$t")/api/v1/write
	start_server "$t" "$dir"
	tf=$dir/time
	s0=$(server_cpu)
	case $tool in
	soakd)
		# env -i: only these settings (env execs soakd: the same process is timed).
		timeout "$T" /usr/bin/time -f '%e %U %S' -o "$tf" env -i PATH="$PATH" HOME="$HOME" \
			SOAKD_LISTEN=off SOAKD_LOG_FORMAT=console SOAKD_PROGRESS_INTERVAL=0 SOAKD_WORKLOADS=w \
			SOAKD_W_SOURCE=devops SOAKD_W_TARGET="prom+$url" SOAKD_W_RATE=max \
			SOAKD_W_WORKERS="$WORKERS" SOAKD_W_BATCH_SIZE="$BATCH_SIZE" SOAKD_W_SCALE="$SCALE" \
			SOAKD_W_SEED="$SEED" SOAKD_W_START="$START" SOAKD_W_END="+$((ROUNDS * INTERVAL))s" \
			"$SOAKD_BIN" run --summary-json "$dir/summary.json" >"$dir/client.log" 2>&1 ||
			{ echo "run=$i target=$t tool=soakd status=failed log=$dir/client.log"; stop_server; return; }
		s1=$(server_cpu)
		n=$(jq -r '.workloads[0].values' "$dir/summary.json")
		secs=$(jq -r '.workloads[0].seconds' "$dir/summary.json")
		cpu=$(awk '{ print $2 + $3 }' "$tf")
		;;
	rwpush)
		timeout "$T" /usr/bin/time -f '%e %U %S' -o "$tf" "$RWPUSH" -url "$url" -source devops -scale "$SCALE" \
			-start "$START" -end "+$((ROUNDS * INTERVAL))s" -seed "$SEED" -workers "$WORKERS" -batch "$BATCH_SIZE" \
			>"$dir/client.log" 2>&1 ||
			{ echo "run=$i target=$t tool=rwpush status=failed log=$dir/client.log"; stop_server; return; }
		s1=$(server_cpu)
		line=$(tail -n1 "$dir/client.log")
		n=$(sed -n 's/.*samples=\([0-9]*\) .*/\1/p' <<<"$line")
		secs=$(sed -n 's/.*push_s=\([0-9.]*\).*/\1/p' <<<"$line")
		cpu=$(sed -n 's/.*push_cpu_s=\([0-9.]*\).*/\1/p' <<<"$line")
		;;
	esac
	local db
	db=$(stored "$t")
	stop_server
	awk -v i="$i" -v t="$t" -v tool="$tool" -v la="$(cut -d' ' -f1 /proc/loadavg)" -v n="$n" -v db="${db:-?}" \
		-v secs="$secs" -v cpu="$cpu" -v s0="$s0" -v s1="$s1" -v want="$SAMPLES" -v pcpu="$(awk '{ print $2 + $3 }' "$tf")" -v dir="$dir" 'BEGIN {
		printf "run=%s target=%s tool=%s loadavg=%s samples=%s samples_in_db=%s seconds=%.3f samples_per_s=%.0f", i, t, tool, la, n, db, secs, n / secs
		printf " client_cpu_s=%.3f client_ns_per_sample=%.0f process_cpu_s=%.2f process_ns_per_sample=%.0f server_cpu_s=%.2f server_ns_per_sample=%.0f", cpu, cpu / n * 1e9, pcpu, pcpu / n * 1e9, s1 - s0, (s1 - s0) / n * 1e9
		printf " status=%s log=%s\n", (n == want && db == want ? "ok" : "count-mismatch(want=" want ")"), dir }'
}

echo "# bench/remotewrite.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) host=$(hostname) nproc=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' ,)"
echo "# devops scale=$SCALE rounds=$ROUNDS samples=$SAMPLES series=$((SCALE * 10)) start=$START workers=$WORKERS batch=$BATCH_SIZE rows ($((BATCH_SIZE * 10)) samples) runs=$RUNS out=$OUT"
echo "# ceiling: bench/rwpush (pre-encoded requests); avalanche is not served by the module proxy here"
results=$OUT/results.txt
for ((i = 1; i <= RUNS; i++)); do
	for t in $TARGETS; do
		for tool in soakd rwpush; do
			log "run $i: $tool -> $t"
			run "$t" $tool "$i" | tee -a "$results"
		done
	done
done

# ---- summary -----------------------------------------------------------------
median() { sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }'; }
mmm() { sort -g | awk '{ a[NR] = $1 } END { if (NR) printf "%s/%s/%s", a[1], a[int((NR + 1) / 2)], a[NR]; else print "-" }'; }
field() { # field TARGET TOOL KEY: values of KEY over the ok runs
	awk -v t="$1" -v tool="$2" -v k="$3" '$0 ~ "target="t" tool="tool" " && / status=ok / {
		for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == k) print kv[2] } }' "$results"
}
for t in $TARGETS; do
	for tool in soakd rwpush; do
		echo "summary target=$t tool=$tool ok_runs=$(field "$t" $tool samples_per_s | wc -l) samples_per_s(min/median/max)=$(field "$t" $tool samples_per_s | mmm)" \
			"client_ns_per_sample=$(field "$t" $tool client_ns_per_sample | mmm) process_ns_per_sample=$(field "$t" $tool process_ns_per_sample | mmm)" \
			"server_ns_per_sample=$(field "$t" $tool server_ns_per_sample | mmm)"
	done
	sr=$(field "$t" soakd samples_per_s | median) cr=$(field "$t" rwpush samples_per_s | median)
	sc=$(field "$t" soakd client_ns_per_sample | median) cc=$(field "$t" rwpush client_ns_per_sample | median)
	# soakd/ceiling of each round (the two loads ran one right after the
	# other, so a neighbour's burst moves both less than it moves medians
	# taken apart).
	pairs=$(awk -v t="$t" '$0 ~ "target="t" " && / status=ok / {
		for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		rate[f["tool"], f["run"]] = f["samples_per_s"]; runs[f["run"]] = 1 }
	END { for (r in runs) if (rate["soakd", r] > 0 && rate["rwpush", r] > 0) printf "%.2f\n", rate["soakd", r] / rate["rwpush", r] }' "$results" | mmm)
	if [ -n "$sr" ] && [ -n "$cr" ]; then
		awk -v t="$t" -v sr="$sr" -v cr="$cr" -v sc="$sc" -v cc="$cc" -v pairs="$pairs" 'BEGIN {
			printf "ratio target=%s samples_per_s_soakd_over_ceiling=%.2f per_round(min/median/max)=%s client_cpu_per_sample_soakd_over_rwpush=%.1f\n",
				t, sr / cr, pairs, sc / cc }'
	fi
done
