#!/usr/bin/env bash
# soakd's remote-write sink against each server's own ingest ceiling, side by
# side on VictoriaMetrics, Prometheus 2.42 (--web.enable-remote-write-
# receiver) and Prometheus 3.16 (prometheus3, the same flag; its receiver
# takes Remote-Write 2.0 beside 1.0): the devops source (TSBS cpu-only: 10 fields per host, so
# SCALE x 10 series, labels hostname, region, datacenter, ...), SCALE
# (1000) hosts for ROUNDS (200) readings 10 s apart (2,000,000 samples),
# WORKERS (2) workers = connections, BATCH_SIZE (1000) rows = 10,000
# samples per request, closed loop (RATE=max).
#
#   bench/remotewrite.sh
#   RUNS=5 TARGETS=victoria SCALE=2000 bench/remotewrite.sh
#   RUNS=2 TARGETS=prometheus3 bench/remotewrite.sh
#
# soakd and rwpush send Remote-Write 1.0 (soakd with protocol=1.0). Into
# prometheus3 each round also runs soakd-rw2 (soakd with protocol=2.0)
# and rwpush-rw2 (rwpush -protocol 2.0: the same requests in 2.0, with
# their metadata, built by soakd's 2.0 encoder), so 2.0 and 1.0 are
# compared at the same series count and batch size, each with its own
# ceiling.
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
#      TARGETS="victoria prometheus prometheus3"
#      SCALE=1000 ROUNDS=200   hosts, readings per host (INTERVAL 10s)
#      WORKERS=2 BATCH_SIZE=1000 SEED=7
#      SOAKD_BIN               soakd binary (default: built from ./cmd/soakd)
#      PROMETHEUS_BIN          default: prometheus on PATH
#      PROMETHEUS3_BIN         default: prometheus3 in $(go env GOPATH)/bin or on PATH
#      VM_BIN                  default: victoria-metrics in $(go env GOPATH)/bin or on PATH
#      PROM_PORT=59090 PROM3_PORT=59091 VM_PORT=58428
#      BENCH_TIMEOUT=600       seconds per load before it is killed
#      OUT                     logs and server data (default under PEERS_RUN)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PEERS_DIR=${PEERS_DIR:-$root/../shared/peers}
[ -d "$PEERS_DIR" ] || PEERS_DIR=/work/shared/peers
# shellcheck source=/dev/null
. "$PEERS_DIR/lib.sh"

RUNS=${RUNS:-3}
TARGETS=${TARGETS:-victoria prometheus prometheus3}
SCALE=${SCALE:-1000}
ROUNDS=${ROUNDS:-200}
WORKERS=${WORKERS:-2}
BATCH_SIZE=${BATCH_SIZE:-1000}
SEED=${SEED:-7}
PROM_PORT=${PROM_PORT:-59090}
PROM3_PORT=${PROM3_PORT:-59091}
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
	case $t in victoria | prometheus | prometheus3) ;; *) die "TARGETS: $t: want victoria, prometheus and/or prometheus3" ;; esac
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
if [ -z "${PROMETHEUS3_BIN:-}" ]; then
	PROMETHEUS3_BIN=$(go env GOPATH)/bin/prometheus3
	[ -x "$PROMETHEUS3_BIN" ] || PROMETHEUS3_BIN=$(command -v prometheus3 || true)
fi
if [ -z "${VM_BIN:-}" ]; then
	VM_BIN=$(go env GOPATH)/bin/victoria-metrics
	[ -x "$VM_BIN" ] || VM_BIN=$(command -v victoria-metrics || true)
fi
for t in $TARGETS; do
	case $t in
	prometheus) [ -x "$PROMETHEUS_BIN" ] || die "no prometheus (apt-get install prometheus, or set PROMETHEUS_BIN)" ;;
	prometheus3) [ -x "$PROMETHEUS3_BIN" ] || die "no prometheus3 (scripts/install-test-deps.sh, or set PROMETHEUS3_BIN)" ;;
	victoria) [ -x "$VM_BIN" ] || die "no victoria-metrics (scripts/install-test-deps.sh, or set VM_BIN)" ;;
	esac
done

# ---- servers -----------------------------------------------------------------
port_of() { case $1 in prometheus) echo "$PROM_PORT" ;; prometheus3) echo "$PROM3_PORT" ;; victoria) echo "$VM_PORT" ;; esac; }
# tools_of TARGET: the loads of a round into TARGET.
tools_of() { case $1 in prometheus3) echo soakd rwpush soakd-rw2 rwpush-rw2 ;; *) echo soakd rwpush ;; esac; }
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
		die "port $port is taken (set $(case $t in prometheus) echo PROM_PORT ;; prometheus3) echo PROM3_PORT ;; *) echo VM_PORT ;; esac))"
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
	prometheus3)
		printf 'global: {}\n' >"$dir/prometheus.yml"
		"$PROMETHEUS3_BIN" --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
			--storage.tsdb.retention.time=100y --web.enable-remote-write-receiver --log.level=warn \
			--web.remote-write-receiver.accepted-protobuf-messages=prometheus.WriteRequest \
			--web.remote-write-receiver.accepted-protobuf-messages=io.prometheus.write.v2.Request \
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
	local t=$1 tool=$2 i=$3 dir=$OUT/$1-$2-$3 url s0 s1 tf n rate secs cpu line proto=1.0
	url=http://127.0.0.1:$(port_of "$t")/api/v1/write
	case $tool in *-rw2) proto=2.0 ;; esac
	start_server "$t" "$dir"
	tf=$dir/time
	s0=$(server_cpu)
	case $tool in
	soakd | soakd-rw2)
		# env -i: only these settings (env execs soakd: the same process is timed).
		timeout "$T" /usr/bin/time -f '%e %U %S' -o "$tf" env -i PATH="$PATH" HOME="$HOME" \
			SOAKD_LISTEN=off SOAKD_LOG_FORMAT=console SOAKD_PROGRESS_INTERVAL=0 SOAKD_WORKLOADS=w \
			SOAKD_W_SOURCE=devops SOAKD_W_TARGET="prom+$url?protocol=$proto" SOAKD_W_RATE=max \
			SOAKD_W_WORKERS="$WORKERS" SOAKD_W_BATCH_SIZE="$BATCH_SIZE" SOAKD_W_SCALE="$SCALE" \
			SOAKD_W_SEED="$SEED" SOAKD_W_START="$START" SOAKD_W_END="+$((ROUNDS * INTERVAL))s" \
			"$SOAKD_BIN" run --summary-json "$dir/summary.json" >"$dir/client.log" 2>&1 ||
			{ echo "run=$i target=$t tool=$tool status=failed log=$dir/client.log"; stop_server; return; }
		s1=$(server_cpu)
		n=$(jq -r '.workloads[0].values' "$dir/summary.json")
		secs=$(jq -r '.workloads[0].seconds' "$dir/summary.json")
		cpu=$(awk '{ print $2 + $3 }' "$tf")
		;;
	rwpush | rwpush-rw2)
		timeout "$T" /usr/bin/time -f '%e %U %S' -o "$tf" "$RWPUSH" -url "$url" -protocol "$proto" -source devops -scale "$SCALE" \
			-start "$START" -end "+$((ROUNDS * INTERVAL))s" -seed "$SEED" -workers "$WORKERS" -batch "$BATCH_SIZE" \
			>"$dir/client.log" 2>&1 ||
			{ echo "run=$i target=$t tool=$tool status=failed log=$dir/client.log"; stop_server; return; }
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
		for tool in $(tools_of "$t"); do
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
# ratio TARGET A B: A's samples/s over B's (medians, and per round: the
# two loads ran one right after the other, so a neighbour's burst moves
# both less than it moves medians taken apart), and A's client CPU per
# sample over B's.
ratio() {
	local t=$1 a=$2 b=$3 ar br ac bc pairs
	ar=$(field "$t" "$a" samples_per_s | median) br=$(field "$t" "$b" samples_per_s | median)
	ac=$(field "$t" "$a" client_ns_per_sample | median) bc=$(field "$t" "$b" client_ns_per_sample | median)
	pairs=$(awk -v t="$t" -v a="$a" -v b="$b" '$0 ~ "target="t" " && / status=ok / {
		for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
		rate[f["tool"], f["run"]] = f["samples_per_s"]; runs[f["run"]] = 1 }
	END { for (r in runs) if (rate[a, r] > 0 && rate[b, r] > 0) printf "%.2f\n", rate[a, r] / rate[b, r] }' "$results" | mmm)
	if [ -n "$ar" ] && [ -n "$br" ]; then
		awk -v t="$t" -v a="$a" -v b="$b" -v ar="$ar" -v br="$br" -v ac="$ac" -v bc="$bc" -v pairs="$pairs" 'BEGIN {
			printf "ratio target=%s %s_over_%s samples_per_s=%.2f per_round(min/median/max)=%s client_cpu_per_sample=%.2f\n",
				t, a, b, ar / br, pairs, ac / bc }'
	fi
}
for t in $TARGETS; do
	for tool in $(tools_of "$t"); do
		echo "summary target=$t tool=$tool ok_runs=$(field "$t" $tool samples_per_s | wc -l) samples_per_s(min/median/max)=$(field "$t" $tool samples_per_s | mmm)" \
			"client_ns_per_sample=$(field "$t" $tool client_ns_per_sample | mmm) process_ns_per_sample=$(field "$t" $tool process_ns_per_sample | mmm)" \
			"server_ns_per_sample=$(field "$t" $tool server_ns_per_sample | mmm)"
	done
	ratio "$t" soakd rwpush
	if [ "$t" = prometheus3 ]; then
		ratio "$t" soakd-rw2 rwpush-rw2 # 2.0 against its own ceiling
		ratio "$t" soakd-rw2 soakd      # soakd's 2.0 against its 1.0
		ratio "$t" rwpush-rw2 rwpush    # the server's 2.0 ceiling against its 1.0 one
	fi
done
