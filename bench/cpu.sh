#!/usr/bin/env bash
# What soakd costs the machine it runs on, against go-ycsb (v1.0.3) on the
# same redis-server: whole-process CPU (user + system) per operation at a
# fixed rate, YCSB workload A, 100000 hash records of 10 x 100-byte fields,
# uniform keys, THREADS (16) threads = soakd workers = connections, at each
# of RATES (1000 10000) ops/s for SECS (20) seconds, RUNS (3) rounds, each
# tool right after the other; soakd's dispatch delay (intended start ->
# send) p50/p99 at each rate, so a cheaper soakd that sends later shows;
# an idle sidecar's share of a core (RATE=10 for IDLE_SECS, 60); and the
# zero-config demo's peak RSS (built-in targets, DEMO_SECS, 30).
#
#   bench/cpu.sh
#   RATES="1000" RUNS=5 SECS=30 bench/cpu.sh
#
# go-ycsb paces with -p target=RATE; soakd with SOAKD_KV_RATE=RATE (open
# loop, latency from the intended start). Both load nothing: go-ycsb loads
# the records once, and soakd's LOAD=auto probe finds them.
#
# Env: RUNS=3, THREADS=16, RATES="1000 10000", SECS=20, IDLE_SECS=60,
#      DEMO_SECS=30, SOAKD_BIN.
set -uo pipefail
# shellcheck source=bench/kv-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/kv-lib.sh"

THREADS=${THREADS:-16}
RATES=${RATES:-1000 10000}
SECS=${SECS:-20}
IDLE_SECS=${IDLE_SECS:-60}
DEMO_SECS=${DEMO_SECS:-30}
RECORDS=100000

YCSB=$(peer_bin go-ycsb) || die "no go-ycsb (run $PEERS_DIR/install.sh ycsb)"
command -v jq >/dev/null || die "no jq"
SOAKD=$(build_soakd)
ensure_redis
trap stop_redis EXIT
echo "# soakd vs go-ycsb, CPU per operation $(date -u +%Y-%m-%dT%H:%M:%SZ) nproc=$(nproc) load=$(cut -d' ' -f1 /proc/loadavg) port=$REDIS_PORT threads=$THREADS runs=$RUNS logs=$OUT"

# children_cpu VAR: sets VAR to the user + system seconds of every child
# this shell has waited for, so far (the second line of `times`). `times`
# must run in this shell, not in a $(...) subshell: a fork starts with no
# children's time.
children_cpu() {
	times >"$OUT/times"
	printf -v "$1" '%s' "$(awk 'NR == 2 {
		s = 0
		for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] }
		printf "%.3f\n", s
	}' "$OUT/times")"
}

props=$OUT/workloada
printf '%s\n' workload=core readallfields=true readproportion=0.5 updateproportion=0.5 \
	scanproportion=0 insertproportion=0 requestdistribution=uniform >"$props"
common=(-p recordcount=$RECORDS -p "redis.addr=127.0.0.1:$REDIS_PORT" -p redis.datatype=hash)

rcli flushall >/dev/null
"$YCSB" load redis -P "$props" "${common[@]}" -p threadcount=16 >"$OUT/ycsb-load.log" 2>&1 ||
	die "go-ycsb load failed, see $OUT/ycsb-load.log"
n=$(rcli dbsize)
[ "$n" = $RECORDS ] || die "go-ycsb loaded $n records, want $RECORDS"

# ycsb_ops LOG: the operations go-ycsb's final summary counts.
ycsb_ops() {
	awk '/^Run finished, takes/ { done = 1; next }
	done && $1 == "TOTAL" { for (i = 1; i <= NF; i++) if ($i == "Count:") { c = $(i + 1); sub(/,$/, "", c) } }
	END { print c + 0 }' "$1"
}
us_per_op() { awk -v c="$1" -v n="$2" 'BEGIN { if (n > 0) printf "%.1f", c / n * 1e6; else print "-" }'; }

declare -A res
for ((r = 1; r <= RUNS; r++)); do
	for rate in $RATES; do
		log=$OUT/ycsb-$rate-$r.log
		children_cpu c0
		timeout "${BENCH_TIMEOUT:-300}" "$YCSB" run redis -P "$props" "${common[@]}" -p target="$rate" \
			-p operationcount=$((rate * SECS)) -p threadcount="$THREADS" >"$log" 2>&1 || log "go-ycsb $rate/s run $r failed, see $log"
		children_cpu c1
		ops=$(ycsb_ops "$log")
		cpu=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.3f", b - a }')
		y=$(us_per_op "$cpu" "$ops")
		echo "figure=cpu_per_op tool=go-ycsb run=$r rate=$rate ops=$ops cpu_s=$cpu us_per_op=$y"

		log=$OUT/soakd-$rate-$r.log
		sum=$OUT/soakd-$rate-$r.json
		children_cpu c0
		soakd_run "$log" "$sum" SOAKD_KV_TARGET="redis://127.0.0.1:$REDIS_PORT?index=false" \
			SOAKD_KV_RATE="$rate" SOAKD_KV_WORKERS="$THREADS" SOAKD_KV_DURATION="${SECS}s" \
			SOAKD_KV_WORKLOAD=a SOAKD_KV_DISTRIBUTION=uniform SOAKD_KV_RECORDS=$RECORDS \
			SOAKD_KV_DATA_TYPE=hash SOAKD_KV_FIELDS=10 SOAKD_KV_FIELD_LENGTH=100 \
			SOAKD_KV_KEY_PREFIX=usertable/ SOAKD_KV_LOAD=auto SOAKD_KV_WATCH_INTERVAL=0 ||
			log "soakd $rate/s run $r failed (exit $?), see $log"
		children_cpu c1
		cpu=$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.3f", b - a }')
		read -r ops d50 d99 < <(jq -r '.workloads[] | select(.phase == "run") |
			"\(.units) \(.dispatch_seconds.p50 * 1e9 | round / 1000) \(.dispatch_seconds.p99 * 1e9 | round / 1000)"' "$sum" 2>/dev/null || echo "0 0 0")
		s=$(us_per_op "$cpu" "$ops")
		echo "figure=cpu_per_op tool=soakd run=$r rate=$rate ops=$ops cpu_s=$cpu us_per_op=$s dispatch_p50_us=$d50 dispatch_p99_us=$d99"
		res[ycsb,$rate,$r]=$y
		res[soakd,$rate,$r]="$s $d50 $d99"
	done
done

# The idle sidecar: its whole process, load probe and start-up included.
log=$OUT/soakd-idle.log
children_cpu c0
soakd_run "$log" "$OUT/soakd-idle.json" SOAKD_KV_TARGET="redis://127.0.0.1:$REDIS_PORT?index=false" \
	SOAKD_KV_RATE=10 SOAKD_KV_WORKERS="$THREADS" SOAKD_KV_DURATION="${IDLE_SECS}s" SOAKD_KV_WORKLOAD=a \
	SOAKD_KV_RECORDS=$RECORDS SOAKD_KV_DATA_TYPE=hash SOAKD_KV_FIELDS=10 SOAKD_KV_FIELD_LENGTH=100 \
	SOAKD_KV_KEY_PREFIX=usertable/ SOAKD_KV_LOAD=auto || log "soakd idle run failed (exit $?), see $log"
children_cpu c1
idle=$(awk -v a="$c0" -v b="$c1" -v s="$IDLE_SECS" 'BEGIN { printf "%.2f", (b - a) / s * 100 }')
echo "figure=idle_sidecar tool=soakd rate=10 secs=$IDLE_SECS core_percent=$idle"

# The zero-config demo (built-in targets): peak RSS, read from the
# kernel's high-water mark just before it exits.
env -i PATH="$PATH" HOME="${HOME:-/root}" SOAKD_LISTEN=127.0.0.1:0 "$SOAKD" --duration "${DEMO_SECS}s" >"$OUT/soakd-demo.log" 2>&1 &
pid=$!
hwm=0
while kill -0 "$pid" 2>/dev/null; do
	v=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
	[ -n "$v" ] && hwm=$v
	sleep 0.5
done
wait "$pid" || log "the demo run failed, see $OUT/soakd-demo.log"
echo "figure=demo_rss tool=soakd secs=$DEMO_SECS peak_rss_mb=$(awk -v k="$hwm" 'BEGIN { printf "%.1f", k / 1024 }')"

echo
echo "| fixed rate, YCSB A, $THREADS threads | go-ycsb µs/op | soakd µs/op | soakd / go-ycsb | soakd dispatch p50 / p99 µs |"
echo "|---|---:|---:|---:|---:|"
for rate in $RATES; do
	col() { for ((r = 1; r <= RUNS; r++)); do v=${res[$1,$rate,$r]}; echo "$v" | awk -v f="$2" '{ print $f }'; done | median; }
	y=$(col ycsb 1) s=$(col soakd 1)
	echo "| $rate ops/s, ${SECS}s | $y | $s | $(ratio "$s" "$y") | $(col soakd 2) / $(col soakd 3) |"
done
echo "| idle sidecar (10 ops/s, ${IDLE_SECS}s), share of a core | | $idle % | | |"
echo "| zero-config demo, peak RSS | | $(awk -v k="$hwm" 'BEGIN { printf "%.1f", k / 1024 }') MB | | |"
